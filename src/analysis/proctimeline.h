/* proctimeline: the whole target's total of one /proc reading over time.
 *
 * At each reading time of proc_samples the total is the sum over the target's
 * processes of each one's latest reading, carried forward (a process read at
 * 0.1 s and not again still counts at 0.2 s). Values below 0 or above
 * value_max (a damaged recording) read as 0. */
#ifndef SONDE_PROCTIMELINE_H
#define SONDE_PROCTIMELINE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct proc_point {
	int64_t t_ns; /* since the run's start */
	int64_t value;
};

/* The totals of expr (an SQL expression over proc_samples' columns, such as
 * "rss_bytes" or "user_ns + sys_ns"; NULL reads as 0), in time order, in a
 * malloc'd array (free it; NULL when there are none). Returns the count. */
size_t proc_timeline_load(sqlite3 *db, const char *expr, int64_t value_max,
			  struct proc_point **out);

/* proc_timeline_load of a /proc/PID/io column. The kernel adds a child's I/O
 * to its parent's when the parent reaps it; the part the child's own
 * readings counted already is taken out of the parent's next increases, so
 * what the child did after its last reading shows when it was reaped. */
size_t proc_timeline_load_own(sqlite3 *db, const char *expr, int64_t value_max,
			      struct proc_point **out);

/* How late a process's end may be recorded after it happened: one /proc
 * reading (meta interval_ns; the default when absent or damaged). The one
 * rule for "a child ended before its parent's reading" (procstats too). */
int64_t proc_reap_slack_ns(sqlite3 *db);

/* The processes' ends by parent, in (ppid, end_ns) order. */
struct proc_reap {
	int64_t ppid, end_ns, pid;
};
struct proc_reaps {
	struct proc_reap *v;
	size_t n;
	int64_t slack_ns; /* the readings' interval: an end is recorded up to one late */
};
void proc_reaps_load(sqlite3 *db, struct proc_reaps *out);
/* The index of the first child of pid that ended after from_ns (r->n, or
 * another parent's, when none did). */
size_t proc_reaps_first(const struct proc_reaps *r, int64_t pid, int64_t from_ns);
/* 1 when a child of pid ended in (from_ns, to_ns]. */
int proc_reaps_in(const struct proc_reaps *r, int64_t pid, int64_t from_ns, int64_t to_ns);
void proc_reaps_release(struct proc_reaps *r);

/* The total at t_ns, linear between the readings around it; the first
 * reading's before it, the last one's after. 0 when n is 0. */
double proc_timeline_at(const struct proc_point *v, size_t n, int64_t t_ns);

#endif
