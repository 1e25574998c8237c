/* procstats: one query that joins processes with their last /proc readings. */
#include "procstats.h"
#include "proctimeline.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* Two sources per process, both cumulative: s, the /proc readings (the last
 * one, so up to one interval early), and e, the kernel's exit records summed
 * over the process's threads (exact, but only for threads that exited). The
 * larger of the two is the better figure for each counter.
 *
 * /proc/PID/io is the odd one: the kernel adds a child's I/O to its parent's
 * when the parent reaps it, so a shell's reading holds the bytes of every
 * command it ran. Those columns come back as both figures, and
 * procstats_load takes the reaped children out of the reading
 * (own_io_resolve) before it chooses.
 *
 * Attached runs: a process that was already running counts from sonde's first
 * reading of it (last minus first); its exit records would count its whole
 * life, so they are left out for it. */
#define PROCSTAT_NONE ((size_t)-1)
static const struct {
	const char *col;
	int cumulative; /* 0: a level (threads), never a difference */
	int with_children; /* the /proc reading holds the reaped children's too */
	size_t field;
} procstats_cols[] = {
	{ "user_ns", 1, 0, PROCSTAT_FIELD(user_ns) },
	{ "sys_ns", 1, 0, PROCSTAT_FIELD(sys_ns) },
	{ NULL, 0, 0, PROCSTAT_FIELD(peak_rss_bytes) }, /* peak: its own rule */
	{ "threads", 0, 0, PROCSTAT_FIELD(threads_max) },
	{ "vcsw", 1, 0, PROCSTAT_FIELD(vcsw) },
	{ "ivcsw", 1, 0, PROCSTAT_FIELD(ivcsw) },
	{ "minflt", 1, 0, PROCSTAT_FIELD(minflt) },
	{ "majflt", 1, 0, PROCSTAT_FIELD(majflt) },
	{ "rchar", 1, 1, PROCSTAT_FIELD(rchar) },
	{ "wchar", 1, 1, PROCSTAT_FIELD(wchar) },
	{ "read_bytes", 1, 1, PROCSTAT_FIELD(read_bytes) },
	{ "write_bytes", 1, 1, PROCSTAT_FIELD(write_bytes) },
	{ "runq_wait_ns", 1, 0, PROCSTAT_FIELD(runq_wait_ns) },
	{ "syscr", 1, 1, PROCSTAT_FIELD(syscr) },
	{ "syscw", 1, 1, PROCSTAT_FIELD(syscw) },
};
#define PROCSTATS_NCOLS (sizeof(procstats_cols) / sizeof(procstats_cols[0]))

/* Column c of table, or NULL in a recording made before it was added. */
static const char *col_of(sqlite3 *db, const char *table, const char *c)
{
	return recording_has_column(db, table, c) ? c : "NULL";
}

static void procstats_sql(sqlite3 *db, int attached, int64_t interval_ns, struct strbuf *sql)
{
	int have_s = recording_has_table(db, "proc_samples");
	int have_e = recording_has_table(db, "task_exits");
	strbuf_addstr(sql, "WITH s AS (SELECT pid, max(max(coalesce(hwm_bytes,0)),"
			   " max(coalesce(rss_bytes,0))) AS pk");
	for (size_t i = 0; i < PROCSTATS_NCOLS; i++) {
		const char *c = procstats_cols[i].col;
		const char *v = c && have_s ? col_of(db, "proc_samples", c) : c;
		if (c)
			strbuf_addf(sql, ", max(%s) AS x_%s, min(%s) AS n_%s", v, c, v, c);
	}
	strbuf_addf(sql, ", max(t_ns) AS tl FROM %s GROUP BY pid), e AS (SELECT pid, max(hiwater_rss_bytes) AS pk",
		    have_s ? "proc_samples" : "(SELECT * FROM (SELECT NULL pid, NULL hwm_bytes,"
					      " NULL rss_bytes, NULL user_ns, NULL sys_ns,"
					      " NULL threads, NULL vcsw, NULL ivcsw, NULL minflt,"
					      " NULL majflt, NULL rchar, NULL wchar,"
					      " NULL read_bytes, NULL write_bytes,"
					      " NULL runq_wait_ns, NULL syscr, NULL syscw, NULL t_ns)"
					      " WHERE 0)");
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
			strbuf_addf(sql, ", sum(%s) AS x_%s", have_e ? col_of(db, "task_exits", c) : c,
				    c);
	}
	strbuf_addf(sql, " FROM %s GROUP BY pid)",
		    have_e ? "task_exits" : "(SELECT * FROM (SELECT NULL pid, NULL hiwater_rss_bytes,"
					    " NULL user_ns, NULL sys_ns, NULL vcsw, NULL ivcsw,"
					    " NULL minflt, NULL majflt, NULL rchar, NULL wchar,"
					    " NULL read_bytes, NULL write_bytes, NULL runq_wait_ns,"
					    " NULL cpu_exact, NULL syscr, NULL syscw)"
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
			/* The kernel's ru_maxrss keeps the image a process had before
			 * its exec (a fork of sonde, or of a large parent): it only
			 * stands in when nothing read the process's own memory. */
			strbuf_addf(sql, ", max(coalesce(s.pk,-1), CASE WHEN %s THEN -1 ELSE"
					 " coalesce(e.pk, CASE WHEN s.pk IS NULL THEN r.maxrss_bytes"
					 " END, -1) END)",
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
		if (procstats_cols[i].with_children) {
			/* Both figures, the reading's then the exits', for procstats_load. */
			strbuf_addf(sql, ", coalesce(s.x_%s - %s * coalesce(s.n_%s,0), -1),"
					 " CASE WHEN %s THEN -1 ELSE coalesce(e.x_%s,-1) END",
				    c, pre.buf, c, pre.buf, c);
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
	strbuf_addstr(sql, ", coalesce(s.tl, -1) FROM processes p LEFT JOIN s ON s.pid = p.pid"
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

static int64_t *field_of(struct procstat *p, size_t col)
{
	return (int64_t *)(void *)((char *)p + procstats_cols[col].field);
}

/* A with_children column's two figures for one process, and the time of its
 * last /proc reading. */
struct io_raw {
	int64_t reading[PROCSTATS_NCOLS], exits[PROCSTATS_NCOLS];
	int64_t reaped[PROCSTATS_NCOLS];   /* of children that ended before its last reading */
	int64_t children[PROCSTATS_NCOLS]; /* of children that ended before it */
	int64_t last_reading_ns;
};

/* The deepest in the tree first (a child before its parent, whichever end
 * sonde saw first), then the first ended; the processes still running last. */
struct by_depth {
	const struct procstats *ps;
	const size_t *depth;
};

static int by_depth_end(const void *a, const void *b, void *arg)
{
	const struct by_depth *o = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (o->depth[i] != o->depth[j])
		return o->depth[i] > o->depth[j] ? -1 : 1;
	uint64_t u = (uint64_t)o->ps->v[i].end_ns, v = (uint64_t)o->ps->v[j].end_ns; /* -1 last */
	return u < v ? -1 : u > v;
}

/* Each process's depth below the first of its ancestors in the set. */
static size_t *depths(const struct procstats *ps, const struct hashmap *index)
{
	size_t *depth = xcalloc(ps->n + 1, sizeof(*depth));
	for (size_t i = 0; i < ps->n; i++) {
		int64_t pid = ps->v[i].ppid;
		int64_t *at;
		/* bounded: a damaged recording's ppids may loop */
		while (depth[i] < ps->n && (at = hashmap_get(index, &pid, sizeof(pid))) &&
		       (size_t)*at != i) {
			depth[i]++;
			pid = ps->v[*at].ppid;
		}
	}
	return depth;
}

/* Each process's own I/O: its /proc reading less what its reaped children
 * (and theirs, through them) brought into it, or its threads' exit records
 * when those say more. Children are resolved before their parent. A child
 * counts as reaped when it ended before the parent's last reading, give or
 * take slack_ns (an end is recorded when sonde sees it, up to a reading
 * late), and when its I/O fits in what the reading has left. */
static void own_io_resolve(struct procstats *ps, struct io_raw *raw, int64_t slack_ns)
{
	size_t *order = xcalloc(ps->n + 1, sizeof(*order));
	struct hashmap index = HASHMAP_INIT;
	for (size_t i = 0; i < ps->n; i++) {
		order[i] = i;
		hashmap_put(&index, &ps->v[i].pid, sizeof(ps->v[i].pid), (int64_t)i);
	}
	size_t *depth = depths(ps, &index);
	struct by_depth rule = { ps, depth };
	qsort_r(order, ps->n, sizeof(*order), by_depth_end, &rule);
	for (size_t o = 0; o < ps->n; o++) {
		size_t i = order[o];
		struct procstat *p = &ps->v[i];
		int64_t *q_at = hashmap_get(&index, &p->ppid, sizeof(p->ppid));
		struct procstat *q = q_at && (size_t)*q_at != i ? &ps->v[*q_at] : NULL;
		int into_parent = q && p->end_ns >= 0 &&
				  (q->end_ns < 0 || p->end_ns <= sat_add_i64(q->end_ns, slack_ns));
		int reaped = into_parent && raw[*q_at].last_reading_ns >= 0 &&
			     sat_add_i64(raw[*q_at].last_reading_ns, slack_ns) >= p->end_ns;
		for (size_t c = 0; c < PROCSTATS_NCOLS; c++) {
			if (!procstats_cols[c].with_children)
				continue;
			int64_t rd = raw[i].reading[c], own = -1;
			if (rd >= 0)
				own = rd > raw[i].reaped[c] ? rd - raw[i].reaped[c] : 0;
			if (raw[i].exits[c] > own)
				own = raw[i].exits[c];
			*field_of(p, c) = own;
			int64_t incl = sat_add_i64(own > 0 ? own : 0, raw[i].children[c]);
			if (into_parent)
				raw[*q_at].children[c] = sat_add_i64(raw[*q_at].children[c], incl);
			if (reaped && raw[*q_at].reading[c] >= 0 &&
			    raw[*q_at].reading[c] - raw[*q_at].reaped[c] >= incl)
				raw[*q_at].reaped[c] += incl;
		}
	}
	hashmap_release(&index);
	free(depth);
	free(order);
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
	struct io_raw *raw = NULL;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (out->n == alloc) {
			alloc = alloc ? alloc * 2 : 8;
			out->v = xrealloc(out->v, alloc * sizeof(*out->v));
			raw = xrealloc(raw, alloc * sizeof(*raw));
		}
		struct io_raw *r = &raw[out->n];
		struct procstat *p = &out->v[out->n++];
		const unsigned char *cmd = sqlite3_column_text(st, 2);
		memset(r, 0, sizeof(*r));
		p->pid = col_or(st, 0, 0);
		p->ppid = col_or(st, 1, 0);
		p->command = xstrdup(cmd ? (const char *)cmd : "");
		p->start_ns = col_or(st, 3, 0);
		p->end_ns = col_or(st, 4, -1);
		p->exit_code = col_or(st, 5, -1);
		p->signal = col_or(st, 6, 0);
		p->is_leader = (int)col_or(st, 7, 0);
		int k = 8;
		for (size_t c = 0; c < PROCSTATS_NCOLS; c++) {
			if (procstats_cols[c].with_children) {
				r->reading[c] = col_or(st, k++, -1);
				r->exits[c] = col_or(st, k++, -1);
			} else {
				*field_of(p, c) = col_or(st, k++, -1);
			}
		}
		r->last_reading_ns = col_or(st, k, -1);
	}
	sqlite3_finalize(st);
	own_io_resolve(out, raw, proc_reap_slack_ns(db));
	free(raw);
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
			sum = sat_add_i64(sum < 0 ? 0 : sum, v);
	}
	return sum;
}
