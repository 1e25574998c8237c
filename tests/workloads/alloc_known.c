/* alloc_known: allocations with known answers, for the allocation tracker.
 *
 *   leak_some            leaks LEAK_CALLS x LEAK_KIB KiB (4 MiB), never freed
 *   big_transient        one 32 MiB buffer, freed at once: the heap peak
 *   make_temporaries     TEMP_COUNT 64-byte blocks, each freed right away
 *
 * Modes (argv[1]): none: the above; "fork-exec": also forks a child that
 * allocates, then execs this program as "exec-child", which leaks
 * EXEC_CHILD_KIB KiB in exec_child_leak; "threads": the above, plus THREADS
 * threads each leaking THREAD_LEAK_KIB KiB in thread_leak; "crash": the leaks,
 * then abort() 30 ms later (one allocation in between flushes the agent's
 * buffer: what a crash loses is what was allocated after it). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEAK_CALLS 256
#define LEAK_KIB 16
#define BIG_BYTES (32u << 20)
#define TEMP_COUNT 200000
#define EXEC_CHILD_KIB 512
#define THREADS 4
#define THREAD_LEAK_KIB 256

/* Keeps the compiler from pairing a malloc with its free and dropping both. */
static void *volatile sink;

__attribute__((noinline)) static void leak_some(size_t kib)
{
	char *p = malloc(kib * 1024);
	memset(p, 1, kib * 1024);
	sink = p; /* and forgotten */
}

__attribute__((noinline)) static void big_transient(void)
{
	char *p = malloc(BIG_BYTES);
	memset(p, 2, BIG_BYTES);
	sink = p;
	usleep(20000);
	free(p);
}

__attribute__((noinline)) static void make_temporaries(void)
{
	for (int i = 0; i < TEMP_COUNT; i++) {
		char *p = malloc(64);
		p[0] = (char)i;
		sink = p;
		free(p);
	}
}

__attribute__((noinline)) static void exec_child_leak(void)
{
	leak_some(EXEC_CHILD_KIB);
}

__attribute__((noinline)) static void *thread_leak(void *arg)
{
	(void)arg;
	for (int i = 0; i < THREAD_LEAK_KIB / 4; i++) {
		char *p = malloc(4096);
		memset(p, 3, 4096);
		sink = p;
	}
	make_temporaries();
	return NULL;
}

static int fork_exec(const char *self)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *scratch = malloc(100000);
		memset(scratch, 4, 100000);
		sink = scratch;
		execl(self, self, "exec-child", (char *)NULL);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "exec-child")) {
		exec_child_leak();
		return 0;
	}
	for (int i = 0; i < LEAK_CALLS; i++)
		leak_some(LEAK_KIB);
	if (!strcmp(mode, "crash")) {
		usleep(30000);
		sink = malloc(16);
		abort();
	}
	big_transient();
	make_temporaries();
	if (!strcmp(mode, "fork-exec") && fork_exec(argv[0])) {
		fprintf(stderr, "alloc_known: the fork-exec child failed\n");
		return 1;
	}
	if (!strcmp(mode, "threads")) {
		pthread_t t[THREADS];
		for (int i = 0; i < THREADS; i++)
			pthread_create(&t[i], NULL, thread_leak, NULL);
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
	}
	printf("alloc_known: leaked %d KiB in leak_some\n", LEAK_CALLS * LEAK_KIB);
	return 0;
}
