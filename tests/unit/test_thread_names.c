/* test_thread_names: every thread's name from FORK and COMM records, even when
 * the thread is gone before its first sample is read. */
#include "check.h"
#include "probes/thread_names.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* pids far above pid_max, so /proc never answers for them */
#define PID 900000001
#define GONE 900000009

TEST(inherited_names, "a thread created after the probe started has its creator's name without asking /proc, and keeps it once renamed")
{
	struct thread_names tn = THREAD_NAMES_INIT;
	thread_names_set(&tn, PID, PID, "server");		   /* COMM at exec */
	thread_names_fork(&tn, PID, PID + 1, PID, PID);		   /* a worker */
	thread_names_fork(&tn, PID, PID + 2, PID, PID + 1);	   /* its helper */
	thread_names_set(&tn, PID, PID + 1, "worker-with-a-long-name"); /* PR_SET_NAME */
	thread_names_fork(&tn, PID, PID + 3, PID, PID + 1);	   /* made after the rename */
	CHECK_STR_EQ(thread_names_first_use(&tn, PID, PID + 2), "server");
	CHECK_STR_EQ(thread_names_first_use(&tn, PID, PID + 1), "worker-with-a-l"); /* 15 bytes */
	CHECK_STR_EQ(thread_names_first_use(&tn, PID, PID + 3), "worker-with-a-l");
	CHECK(thread_names_first_use(&tn, PID, PID + 3) == NULL); /* once */
	thread_names_set(&tn, PID, PID + 3, "renamed");
	CHECK_STR_EQ(thread_names_first_use(&tn, PID, PID + 3), "renamed");
	thread_names_release(&tn);
}

TEST(fallback_names, "a thread no record names takes /proc's name while it runs, else its process's main thread's")
{
	struct thread_names tn = THREAD_NAMES_INIT;
	char self[32];
	FILE *f = fopen("/proc/self/comm", "r");
	CHECK(f && fgets(self, sizeof(self), f));
	if (f)
		fclose(f);
	self[strcspn(self, "\n")] = '\0';
	CHECK_STR_EQ(thread_names_first_use(&tn, getpid(), getpid()), self);
	CHECK(thread_names_first_use(&tn, GONE, GONE + 1) == NULL); /* nobody knows it */
	thread_names_set(&tn, PID, PID, "main");
	CHECK_STR_EQ(thread_names_first_use(&tn, PID, PID + 7), "main");
	thread_names_release(&tn);
}

static void collect(void *arg, pid_t pid, pid_t tid, const char *name)
{
	int *seen = arg;
	(void)pid;
	if (tid == PID + 1 && !strcmp(name, "server"))
		seen[0]++;
	else
		seen[1]++;
}

TEST(unsampled_names, "threads never asked for are handed out once at the end, and asked-for ones are not repeated")
{
	struct thread_names tn = THREAD_NAMES_INIT;
	thread_names_set(&tn, PID, PID, "server");
	thread_names_fork(&tn, PID, PID + 1, PID, PID);
	CHECK_STR_EQ(thread_names_first_use(&tn, PID, PID), "server");
	thread_names_fork(&tn, PID, PID + 2, GONE, GONE); /* creator unknown: no name */
	for (int i = 0; i < 1000; i++) /* the table grows past its first size */
		thread_names_fork(&tn, PID + 10, PID + 10 + i, PID, PID);
	int seen[2] = { 0, 0 };
	thread_names_each_unused(&tn, collect, seen);
	CHECK_INT_EQ(seen[0], 1);
	CHECK_INT_EQ(seen[1], 1000);
	seen[0] = seen[1] = 0;
	thread_names_each_unused(&tn, collect, seen);
	CHECK_INT_EQ(seen[0] + seen[1], 0);
	thread_names_release(&tn);
}

CHECK_MAIN()
