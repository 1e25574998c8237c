/* proctimeline: per-reading totals of a /proc column over the target. */
#include "proctimeline.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <stdlib.h>

struct pid_value {
	int64_t pid, value;
	int64_t reaped_ns; /* its children that ended by then are owed */
	int64_t owed; /* its reaped children's values it has yet to take in */
};

static size_t pid_find(const struct pid_value *v, size_t n, int64_t pid)
{
	size_t i;
	for (i = 0; i < n && v[i].pid != pid; i++)
		;
	return i;
}

int64_t proc_reap_slack_ns(sqlite3 *db)
{
	int64_t ns = 0;
	if (recording_meta_int(db, "interval_ns", &ns) || ns < 0 || ns > 10000000000LL)
		ns = 100000000; /* absent or damaged: the default interval */
	return ns;
}

void proc_reaps_load(sqlite3 *db, struct proc_reaps *out)
{
	sqlite3_stmt *st;
	size_t alloc = 0;
	*out = (struct proc_reaps){ NULL, 0, 100000000 };
	out->slack_ns = proc_reap_slack_ns(db);
	if (sqlite3_prepare_v2(db,
			       "SELECT ppid, end_ns, pid FROM processes WHERE end_ns IS NOT NULL"
			       " ORDER BY ppid, end_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (out->n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			out->v = xrealloc(out->v, alloc * sizeof(*out->v));
		}
		out->v[out->n++] = (struct proc_reap){ sqlite3_column_int64(st, 0),
						       sqlite3_column_int64(st, 1),
						       sqlite3_column_int64(st, 2) };
	}
	sqlite3_finalize(st);
}

size_t proc_reaps_first(const struct proc_reaps *r, int64_t pid, int64_t from_ns)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct proc_reap *x = &r->v[mid];
		if (x->ppid < pid || (x->ppid == pid && x->end_ns <= from_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int proc_reaps_in(const struct proc_reaps *r, int64_t pid, int64_t from_ns, int64_t to_ns)
{
	size_t i = proc_reaps_first(r, pid, from_ns);
	return i < r->n && r->v[i].ppid == pid && r->v[i].end_ns <= to_ns;
}

void proc_reaps_release(struct proc_reaps *r)
{
	free(r->v);
	*r = (struct proc_reaps){ NULL, 0, 0 };
}

/* An attached run's processes that were there before it (start_ns 0, the
 * run's start): each counts from the start with its first reading, so the
 * order in which sonde first read them is not growth. Their count, with
 * their first values in *out and the sum added to *total. */
static size_t already_there(sqlite3 *db, const char *expr, int64_t value_max,
			    struct pid_value **out, int64_t *total)
{
	sqlite3_stmt *st;
	struct strbuf sql = STRBUF_INIT;
	strbuf_addf(&sql,
		    "SELECT s.pid, coalesce(%s, 0) FROM proc_samples s JOIN"
		    " (SELECT pid, min(t_ns) AS t0 FROM proc_samples GROUP BY pid) f"
		    " ON s.pid = f.pid AND s.t_ns = f.t0"
		    " WHERE (SELECT value FROM meta WHERE key = 'attached') = 1"
		    " AND s.pid IN (SELECT pid FROM processes WHERE start_ns <= 0) ORDER BY s.pid",
		    expr);
	int rc = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL);
	strbuf_release(&sql);
	if (rc != SQLITE_OK)
		return 0;
	size_t n = 0, alloc = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), value = sqlite3_column_int64(st, 1);
		if (value < 0 || value > value_max)
			value = 0;
		if (n && (*out)[n - 1].pid == pid)
			continue; /* two rows at one time */
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			*out = xrealloc(*out, alloc * sizeof(**out));
		}
		(*out)[n++] = (struct pid_value){ pid, value, 0, 0 };
		*total = sat_add_i64(*total, value);
	}
	sqlite3_finalize(st);
	return n;
}

/* The children's ends, and each process's last value: what the timeline
 * counted of it by its end, and its parent owes when it reaps it. */
struct timeline_reaps {
	const struct proc_reaps *ends;
	struct hashmap last; /* pid -> its last reading's value */
};

static void last_values(sqlite3 *db, const char *expr, int64_t value_max, struct hashmap *out)
{
	sqlite3_stmt *st;
	struct strbuf sql = STRBUF_INIT;
	strbuf_addf(&sql, "SELECT pid, coalesce(%s, 0) FROM proc_samples ORDER BY t_ns", expr);
	int rc = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL);
	strbuf_release(&sql);
	if (rc != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), value = sqlite3_column_int64(st, 1);
		hashmap_put(out, &pid, sizeof(pid), value < 0 || value > value_max ? 0 : value);
	}
	sqlite3_finalize(st);
}

/* proc_timeline_load, or with reaps, proc_timeline_load_own. */
static size_t timeline_load(sqlite3 *db, const char *expr, int64_t value_max,
			    const struct timeline_reaps *tr, struct proc_point **out)
{
	const struct proc_reaps *reaps = tr ? tr->ends : NULL;
	sqlite3_stmt *st;
	*out = NULL;
	struct strbuf sql = STRBUF_INIT;
	strbuf_addf(&sql, "SELECT t_ns, pid, coalesce(%s, 0) FROM proc_samples ORDER BY t_ns", expr);
	int rc = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL);
	strbuf_release(&sql);
	if (rc != SQLITE_OK)
		return 0;
	struct pid_value *pids = NULL;
	size_t npids = 0, apids = 0, n = 0, alloc = 0;
	struct proc_point *v = NULL;
	int64_t total = 0;
	npids = apids = already_there(db, expr, value_max, &pids, &total);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(st, 0), pid = sqlite3_column_int64(st, 1),
			value = sqlite3_column_int64(st, 2);
		size_t i = pid_find(pids, npids, pid);
		if (i == npids) {
			if (npids == apids) {
				apids = apids ? apids * 2 : 16;
				pids = xrealloc(pids, apids * sizeof(*pids));
			}
			pids[npids++] = (struct pid_value){ pid, 0, -1, 0 };
		}
		if (value < 0 || value > value_max)
			value = 0; /* a damaged recording: read as unknown */
		int64_t step = value - pids[i].value;
		/* An end is recorded when sonde sees it: up to a reading late. */
		int64_t reaped_ns = sat_add_i64(t, reaps ? reaps->slack_ns : 0);
		for (size_t k = reaps ? proc_reaps_first(reaps, pid, pids[i].reaped_ns) : 0;
		     reaps && k < reaps->n && reaps->v[k].ppid == pid &&
		     reaps->v[k].end_ns <= reaped_ns;
		     k++) {
			int64_t *last = hashmap_get(&tr->last, &reaps->v[k].pid, sizeof(int64_t));
			if (last)
				pids[i].owed = sat_add_i64(pids[i].owed, *last);
		}
		if (step > 0 && pids[i].owed > 0) { /* the reaped children's, counted already */
			int64_t paid = step < pids[i].owed ? step : pids[i].owed;
			pids[i].owed -= paid;
			step -= paid;
		}
		total = sat_add_i64(total, step);
		pids[i].value = value;
		pids[i].reaped_ns = reaped_ns;
		if (n && v[n - 1].t_ns == t) {
			v[n - 1].value = total;
			continue;
		}
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 256;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		v[n++] = (struct proc_point){ t, total };
	}
	sqlite3_finalize(st);
	free(pids);
	*out = v;
	return n;
}

size_t proc_timeline_load(sqlite3 *db, const char *expr, int64_t value_max,
			  struct proc_point **out)
{
	return timeline_load(db, expr, value_max, NULL, out);
}

size_t proc_timeline_load_own(sqlite3 *db, const char *expr, int64_t value_max,
			      struct proc_point **out)
{
	struct proc_reaps reaps;
	struct timeline_reaps tr = { &reaps, HASHMAP_INIT };
	proc_reaps_load(db, &reaps);
	last_values(db, expr, value_max, &tr.last);
	size_t n = timeline_load(db, expr, value_max, &tr, out);
	hashmap_release(&tr.last);
	proc_reaps_release(&reaps);
	return n;
}

double proc_timeline_at(const struct proc_point *v, size_t n, int64_t t_ns)
{
	if (!n)
		return 0;
	if (t_ns <= v[0].t_ns)
		return (double)v[0].value;
	if (t_ns >= v[n - 1].t_ns)
		return (double)v[n - 1].value;
	size_t lo = 0, hi = n - 1; /* v[lo].t_ns < t_ns <= v[hi].t_ns */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].t_ns < t_ns)
			lo = mid;
		else
			hi = mid;
	}
	double f = (double)(t_ns - v[lo].t_ns) / (double)(v[hi].t_ns - v[lo].t_ns);
	return (double)v[lo].value + f * ((double)v[hi].value - (double)v[lo].value);
}
