/* proctimeline: per-reading totals of a /proc column over the target. */
#include "proctimeline.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <stdlib.h>

struct pid_value {
	int64_t pid, value;
};

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
		(*out)[n++] = (struct pid_value){ pid, value };
		*total = sat_add_i64(*total, value);
	}
	sqlite3_finalize(st);
	return n;
}

size_t proc_timeline_load(sqlite3 *db, const char *expr, int64_t value_max,
			  struct proc_point **out)
{
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
		size_t i;
		for (i = 0; i < npids && pids[i].pid != pid; i++)
			;
		if (i == npids) {
			if (npids == apids) {
				apids = apids ? apids * 2 : 16;
				pids = xrealloc(pids, apids * sizeof(*pids));
			}
			pids[npids++] = (struct pid_value){ pid, 0 };
		}
		if (value < 0 || value > value_max)
			value = 0; /* a damaged recording: read as unknown */
		total = sat_add_i64(total, value - pids[i].value);
		pids[i].value = value;
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
