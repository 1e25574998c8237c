/* taskstats: the kernel's exact accounting of every task as it exits, through
 * the TASKSTATS generic-netlink family.
 *
 * /proc readings miss what happens between two readings: a process that lives
 * less than one interval, and the last moments of one that sonde does not reap.
 * Registered for every CPU, the kernel sends one record per exiting thread,
 * with its CPU time, context switches, faults, I/O and RSS high-water mark.
 * Needs CAP_NET_ADMIN; taskstats_open() says in one line when it cannot. */
#ifndef SONDE_TASKSTATS_H
#define SONDE_TASKSTATS_H

#include <stdint.h>
#include <sys/types.h>

struct strbuf;

struct task_exit {
	pid_t pid;  /* thread group (process) id */
	pid_t tid;  /* the exiting thread */
	pid_t ppid; /* parent process at exit */
	char comm[32];
	int exit_code; /* as wait() status */
	int64_t user_ns, sys_ns, runq_wait_ns, elapsed_ns;
	int cpu_exact; /* user_ns/sys_ns from the scheduler's runtime (delay accounting
			* on), not from tick samples, which can be off by many ticks */
	int64_t vcsw, ivcsw, minflt, majflt;
	int64_t hiwater_rss_bytes; /* of the whole process (shared mm) */
	int64_t rchar, wchar, read_bytes, write_bytes;
	int64_t syscr, syscw; /* read and write calls */
};

struct taskstats_listener;

/* 0 and *out, or -1 with one line in why (e.g. no CAP_NET_ADMIN). */
int taskstats_open(struct taskstats_listener **out, struct strbuf *why);
void taskstats_close(struct taskstats_listener *ts);

typedef void (*task_exit_fn)(void *data, const struct task_exit *e);
/* Delivers every record waiting on the socket (never blocks). Returns the
 * number delivered, or -1 when records were lost (the socket overflowed). */
int taskstats_drain(struct taskstats_listener *ts, task_exit_fn fn, void *data);

/* Decodes one netlink message buffer (for tests and fuzzing): delivers each
 * per-thread record in it. Returns records found, -1 on malformed input. */
int taskstats_parse(const void *buf, size_t len, task_exit_fn fn, void *data);

#endif
