/* procstats: per-process figures from the recording, shared by the analyses.
 * Counters are the process's own (children excluded), from the last /proc
 * reading; a field is -1 when it was never read. */
#ifndef SONDE_PROCSTATS_H
#define SONDE_PROCSTATS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct procstat {
	int64_t pid, ppid;
	char *command;
	int64_t start_ns, end_ns; /* end_ns -1: alive when the run ended */
	int64_t exit_code, signal; /* -1 / 0 when unknown */
	int is_leader;
	int64_t user_ns, sys_ns, peak_rss_bytes, threads_max, vcsw, ivcsw, minflt, majflt;
	int64_t rchar, wchar, read_bytes, write_bytes, runq_wait_ns;
	int64_t syscr, syscw; /* read and write system calls */
};

struct procstats {
	struct procstat *v;
	size_t n;
};

/* 0 on success (an empty set when no process was recorded), -1 on a bad recording. */
int procstats_load(sqlite3 *db, struct procstats *out);
void procstats_release(struct procstats *ps);
const struct procstat *procstats_leader(const struct procstats *ps);

/* Sum of a field over processes (fields at -1 are skipped); -1 when all are. */
int64_t procstats_sum(const struct procstats *ps, size_t field_offset);
#define PROCSTAT_FIELD(f) offsetof(struct procstat, f)

#endif
