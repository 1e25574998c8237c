/* procstats: one query that joins processes with their last /proc readings. */
#include "procstats.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* Two sources per process, both cumulative: s, the /proc readings (the last
 * one, so up to one interval early), and e, the kernel's exit records summed
 * over the process's threads (exact, but only for threads that exited). The
 * larger of the two is the better figure for each counter. */
static const char procstats_sql_samples[] =
	"SELECT pid, max(user_ns) u, max(sys_ns) sy,"
	" max(max(coalesce(hwm_bytes,0)), max(coalesce(rss_bytes,0))) pk, max(threads) th,"
	" max(vcsw) v, max(ivcsw) iv, max(minflt) mi, max(majflt) ma, max(rchar) rc,"
	" max(wchar) wc, max(read_bytes) rb, max(write_bytes) wb, max(runq_wait_ns) rq"
	" FROM proc_samples GROUP BY pid";
static const char procstats_sql_exits[] =
	"SELECT pid, sum(user_ns) u, sum(sys_ns) sy, max(hiwater_rss_bytes) pk, count(*) th,"
	" sum(vcsw) v, sum(ivcsw) iv, sum(minflt) mi, sum(majflt) ma, sum(rchar) rc,"
	" sum(wchar) wc, sum(read_bytes) rb, sum(write_bytes) wb, sum(runq_wait_ns) rq"
	" FROM task_exits GROUP BY pid";
static const char procstats_sql_none[] =
	"SELECT NULL pid, NULL u, NULL sy, NULL pk, NULL th, NULL v, NULL iv, NULL mi, NULL ma,"
	" NULL rc, NULL wc, NULL rb, NULL wb, NULL rq WHERE 0";

#define BEST(col) " max(coalesce(s." col ",-1), coalesce(e." col ",-1)),"
static const char procstats_sql_join[] =
	" SELECT p.pid, p.ppid, p.command, p.start_ns, p.end_ns, p.exit_code, p.signal,"
	" p.is_leader," BEST("u") BEST("sy")
	" max(coalesce(s.pk,-1), coalesce(e.pk,-1), coalesce(r.maxrss_bytes,-1)),"
	BEST("th") BEST("v") BEST("iv") BEST("mi") BEST("ma") BEST("rc") BEST("wc") BEST("rb")
	BEST("wb") " max(coalesce(s.rq,-1), coalesce(e.rq,-1))"
	" FROM processes p LEFT JOIN s ON s.pid = p.pid LEFT JOIN e ON e.pid = p.pid"
	" LEFT JOIN rusage r ON r.pid = p.pid ORDER BY p.start_ns, p.pid";
#undef BEST

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
	strbuf_addf(&sql, "WITH s AS (%s), e AS (%s)%s",
		    recording_has_table(db, "proc_samples") ? procstats_sql_samples
							    : procstats_sql_none,
		    recording_has_table(db, "task_exits") ? procstats_sql_exits : procstats_sql_none,
		    procstats_sql_join);
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
