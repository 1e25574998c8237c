/* thread_names: the name of each thread of the target, known when it is first
 * sampled even if the thread is gone by then.
 *
 * Linux gives a new thread (or process) its creator's name at clone and
 * changes a name only at exec or PR_SET_NAME, both of which the kernel reports
 * as COMM records. So FORK and COMM records, applied in time order, give every
 * thread's name; /proc is asked only about threads that were running before
 * the probe's first record, and a thread known to neither falls back to its
 * process's main thread.
 *
 * Not thread-safe: the cpu probe's worker owns it. */
#ifndef SONDE_THREAD_NAMES_H
#define SONDE_THREAD_NAMES_H

#include <stddef.h>
#include <sys/types.h>

#include "../util/hashmap.h"

#define THREAD_NAME_MAX 16 /* TASK_COMM_LEN */

struct thread_name_entry {
	pid_t pid, tid;
	char name[THREAD_NAME_MAX]; /* "" while unknown */
	int written;		    /* handed out by thread_names_first_use */
};

struct thread_names {
	struct hashmap index; /* pid << 32 | tid -> index in v */
	struct thread_name_entry *v;
	size_t n, alloc;
};

#define THREAD_NAMES_INIT { HASHMAP_INIT, NULL, 0, 0 }

/* A COMM record: tid of pid is now called name. */
void thread_names_set(struct thread_names *tn, pid_t pid, pid_t tid, const char *name);
/* A FORK record: tid of pid was created by ptid of ppid and has its name. */
void thread_names_fork(struct thread_names *tn, pid_t pid, pid_t tid, pid_t ppid, pid_t ptid);
/* The thread's name the first time it is asked for (and again after a
 * rename), NULL otherwise or when no source knows it. The string lives until
 * the next call that adds a thread. */
const char *thread_names_first_use(struct thread_names *tn, pid_t pid, pid_t tid);
/* Calls fn for every thread with a known name never handed out, and marks it
 * handed out: the threads that ran without being sampled. */
void thread_names_each_unused(struct thread_names *tn,
			      void (*fn)(void *arg, pid_t pid, pid_t tid, const char *name),
			      void *arg);
void thread_names_release(struct thread_names *tn);

#endif
