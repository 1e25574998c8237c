/* procfs: parsers for the /proc files sonde reads about a process.
 * Each parser works on a buffer (so tests feed it text) and has a reader
 * wrapper. All return 0 or -errno and write *out only on success. */
#ifndef SONDE_PROCFS_H
#define SONDE_PROCFS_H

#include <stdint.h>
#include <sys/types.h>

struct strbuf;

struct procfs_stat {
	pid_t pid, ppid, pgrp, sid; /* sid: session id */
	char comm[64];
	char state;
	uint64_t minflt, majflt;
	uint64_t utime_ticks, stime_ticks;
	int64_t num_threads;
	uint64_t starttime_ticks; /* since boot; with pid it names a process uniquely */
	int64_t rss_pages;
};

struct procfs_status {
	int64_t vm_hwm_bytes, vm_rss_bytes; /* -1 when absent (kernel threads, zombies) */
	int64_t vcsw, ivcsw;		    /* -1 when absent */
};

struct procfs_io {
	int64_t rchar, wchar, read_bytes, write_bytes;
	int64_t syscr, syscw; /* read and write calls; -1 when absent */
};

struct procfs_schedstat {
	uint64_t oncpu_ns, runq_wait_ns, slices;
};

int procfs_parse_stat(const char *buf, struct procfs_stat *out);
int procfs_parse_status(const char *buf, struct procfs_status *out);
int procfs_parse_io(const char *buf, struct procfs_io *out);
int procfs_parse_schedstat(const char *buf, struct procfs_schedstat *out);

/* tid 0 reads the process files (/proc/PID/...), else /proc/PID/task/TID/... */
int procfs_read_stat(pid_t pid, pid_t tid, struct procfs_stat *out);
int procfs_read_status(pid_t pid, pid_t tid, struct procfs_status *out);
int procfs_read_io(pid_t pid, struct procfs_io *out);
int procfs_read_schedstat(pid_t pid, pid_t tid, struct procfs_schedstat *out);
/* The command line with NULs as spaces, at most cap-1 bytes; comm when empty. */
int procfs_read_cmdline(pid_t pid, char *buf, size_t cap);

/* A number that changes when the process execs (a hash of its auxiliary
 * vector: the new stack's random bytes, the vDSO and entry addresses), also
 * when it execs the same program again, which /proc/PID/exe cannot tell. */
int procfs_read_exec_id(pid_t pid, uint64_t *out);

long procfs_ticks_per_s(void);

/* A start time from stat (starttime_ticks, clock ticks since boot, counted on
 * CLOCK_BOOTTIME) as CLOCK_MONOTONIC ns, the clock of a run. Exact to one tick
 * (10 ms at the usual 100 Hz), never later than the real start. */
int64_t procfs_start_mono_ns(uint64_t starttime_ticks);

/* Why reading pid's memory or maps was refused, in one line a user can act on,
 * appended to why after "what is not permitted: ". It names the real cause:
 * another user's process (run as that user or as root), the kernel's
 * ptrace_scope, or, when sonde already runs as root, a process holding
 * capabilities sonde lacks (another container or a more privileged one) or a
 * security module; it never tells root to run as root. */
void procfs_explain_denied(pid_t pid, struct strbuf *why);
long procfs_page_bytes(void);

#endif
