/* procstats: one query that joins processes with their last /proc readings. */
#include "procstats.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* Two sources per process, both cumulative: s, the /proc readings (the last
 * one, so up to one interval early), and e, the kernel's exit records summed
 * over the process's threads (exact, but only for threads that exited). The
 * larger of the two is the better figure for each counter.
 *
 * Attached runs: a process that was already running counts from sonde's first
 * reading of it (last minus first); its exit records would count its whole
 * life, so they are left out for it. */
static const struct {
	const char *col;
	int cumulative; /* 0: a level (threads), never a difference */
} procstats_cols[] = {
	{ "user_ns", 1 }, { "sys_ns", 1 },	{ NULL, 0 } /* peak: its own rule */,
	{ "threads", 0 }, { "vcsw", 1 },	{ "ivcsw", 1 },
	{ "minflt", 1 },  { "majflt", 1 },	{ "rchar", 1 },
	{ "wchar", 1 },	  { "read_bytes", 1 },	{ "write_bytes", 1 },
	{ "runq_wait_ns", 1 },
};
#define PROCSTATS_NCOLS (sizeof(procstats_cols) / sizeof(procstats_cols[0]))

static void procstats_sql(sqlite3 *db, int attached, int64_t interval_ns, struct strbuf *sql)
{
	int have_s = recording_has_table(db, "proc_samples");
	int have_e = recording_has_table(db, "task_exits");
	strbuf_addstr(sql, "WITH s AS (SELECT pid, max(max(coalesce(hwm_bytes,0)),"
			   " max(coalesce(rss_bytes,0))) AS pk");
	for (size_t i = 0; i < PROCSTATS_NCOLS; i++)
		if (procstats_cols[i].col)
			strbuf_addf(sql, ", max(%s) AS x_%s, min(%s) AS n_%s", procstats_cols[i].col,
				    procstats_cols[i].col, procstats_cols[i].col,
				    procstats_cols[i].col);
	strbuf_addf(sql, " FROM %s GROUP BY pid), e AS (SELECT pid, max(hiwater_rss_bytes) AS pk",
		    have_s ? "proc_samples" : "(SELECT * FROM (SELECT NULL pid, NULL hwm_bytes,"
					      " NULL rss_bytes, NULL user_ns, NULL sys_ns,"
					      " NULL threads, NULL vcsw, NULL ivcsw, NULL minflt,"
					      " NULL majflt, NULL rchar, NULL wchar,"
					      " NULL read_bytes, NULL write_bytes,"
					      " NULL runq_wait_ns) WHERE 0)");
	for (size_t i = 0; i < PROCSTATS_NCOLS; i++) {
		const char *c = procstats_cols[i].col;
		if (!c)
			continue;
		if (!strcmp(c, "threads"))
			strbuf_addstr(sql, ", count(*) AS x_threads");
		else if (!strcmp(c, "user_ns") || !strcmp(c, "sys_ns"))
			/* Tick-sampled CPU times only stand in when /proc never read the process. */
			strbuf_addf(sql, ", CASE WHEN min(cpu_exact) = 1 THEN sum(%s) END AS x_%s,"
					 " sum(%s) AS r_%s",
				    c, c, c, c);
		else
			strbuf_addf(sql, ", sum(%s) AS x_%s", c, c);
	}
	strbuf_addf(sql, " FROM %s GROUP BY pid)",
		    have_e ? "task_exits" : "(SELECT * FROM (SELECT NULL pid, NULL hiwater_rss_bytes,"
					    " NULL user_ns, NULL sys_ns, NULL vcsw, NULL ivcsw,"
					    " NULL minflt, NULL majflt, NULL rchar, NULL wchar,"
					    " NULL read_bytes, NULL write_bytes, NULL runq_wait_ns,"
					    " NULL cpu_exact)"
					    " WHERE 0)");
	struct strbuf pre = STRBUF_INIT;
	if (attached)
		strbuf_addf(&pre, "(p.start_ns <= %lld)", (long long)interval_ns);
	else
		strbuf_addstr(&pre, "0");
	strbuf_addstr(sql, " SELECT p.pid, p.ppid, p.command, p.start_ns, p.end_ns, p.exit_code,"
			   " p.signal, p.is_leader");
	for (size_t i = 0; i < PROCSTATS_NCOLS; i++) {
		const char *c = procstats_cols[i].col;
		if (!c) {
			strbuf_addf(sql, ", max(coalesce(s.pk,-1), CASE WHEN %s THEN -1 ELSE"
					 " max(coalesce(e.pk,-1), coalesce(r.maxrss_bytes,-1)) END)",
				    pre.buf);
			continue;
		}
		if (!strcmp(c, "user_ns") || !strcmp(c, "sys_ns")) {
			/* Exact exit figures win over a stale reading; tick-sampled ones only
			 * stand in when /proc never read the process. */
			strbuf_addf(sql, ", coalesce(max(s.x_%s - %s * coalesce(s.n_%s,0),"
					 " CASE WHEN %s THEN NULL ELSE e.x_%s END),"
					 " s.x_%s - %s * coalesce(s.n_%s,0),"
					 " CASE WHEN %s THEN NULL ELSE coalesce(e.x_%s, e.r_%s) END, -1)",
				    c, pre.buf, c, pre.buf, c, c, pre.buf, c, pre.buf, c, c);
			continue;
		}
		if (procstats_cols[i].cumulative)
			strbuf_addf(sql, ", max(coalesce(s.x_%s - %s * coalesce(s.n_%s,0), -1),", c,
				    pre.buf, c);
		else
			strbuf_addf(sql, ", max(coalesce(s.x_%s, -1),", c);
		strbuf_addf(sql, " CASE WHEN %s THEN -1 ELSE coalesce(e.x_%s,-1) END)", pre.buf,
			    c);
	}
	strbuf_addstr(sql, " FROM processes p LEFT JOIN s ON s.pid = p.pid"
			   " LEFT JOIN e ON e.pid = p.pid LEFT JOIN rusage r ON r.pid = p.pid"
			   " ORDER BY p.start_ns, p.pid");
	strbuf_release(&pre);
}

static int64_t col_or(sqlite3_stmt *st, int i, int64_t dflt)
{
	if (i >= sqlite3_column_count(st) || sqlite3_column_type(st, i) == SQLITE_NULL)
		return dflt;
	return sqlite3_column_int64(st, i);
}

int procstats_load(sqlite3 *db, struct procstats *out)
{
	sqlite3_stmt *st;
	struct strbuf sql = STRBUF_INIT;
	int64_t attached = 0, interval_ns = 100000000;
	recording_meta_int(db, "attached", &attached);
	recording_meta_int(db, "interval_ns", &interval_ns);
	procstats_sql(db, attached != 0, interval_ns, &sql);
	memset(out, 0, sizeof(*out));
	int rc = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL);
	strbuf_release(&sql);
	if (rc != SQLITE_OK)
		return -1;
	size_t alloc = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (out->n == alloc) {
			alloc = alloc ? alloc * 2 : 8;
			out->v = xrealloc(out->v, alloc * sizeof(*out->v));
		}
		struct procstat *p = &out->v[out->n++];
		const unsigned char *cmd = sqlite3_column_text(st, 2);
		p->pid = col_or(st, 0, 0);
		p->ppid = col_or(st, 1, 0);
		p->command = xstrdup(cmd ? (const char *)cmd : "");
		p->start_ns = col_or(st, 3, 0);
		p->end_ns = col_or(st, 4, -1);
		p->exit_code = col_or(st, 5, -1);
		p->signal = col_or(st, 6, 0);
		p->is_leader = (int)col_or(st, 7, 0);
		p->user_ns = col_or(st, 8, -1);
		p->sys_ns = col_or(st, 9, -1);
		p->peak_rss_bytes = col_or(st, 10, -1);
		p->threads_max = col_or(st, 11, -1);
		p->vcsw = col_or(st, 12, -1);
		p->ivcsw = col_or(st, 13, -1);
		p->minflt = col_or(st, 14, -1);
		p->majflt = col_or(st, 15, -1);
		p->rchar = col_or(st, 16, -1);
		p->wchar = col_or(st, 17, -1);
		p->read_bytes = col_or(st, 18, -1);
		p->write_bytes = col_or(st, 19, -1);
		p->runq_wait_ns = col_or(st, 20, -1);
	}
	sqlite3_finalize(st);
	return 0;
}

void procstats_release(struct procstats *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i].command);
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

const struct procstat *procstats_leader(const struct procstats *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].is_leader)
			return &ps->v[i];
	return ps->n ? &ps->v[0] : NULL;
}

int64_t procstats_sum(const struct procstats *ps, size_t off)
{
	int64_t sum = -1;
	for (size_t i = 0; i < ps->n; i++) {
		int64_t v;
		memcpy(&v, (const char *)&ps->v[i] + off, sizeof(v));
		if (v >= 0)
			sum = (sum < 0 ? 0 : sum) + v;
	}
	return sum;
}
