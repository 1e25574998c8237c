/* memory_rss: the resident-set timeline of the whole target (sum over its
 * processes), its peak and when it happened. */
#include "analysis.h"
#include "procstats.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define RSS_TIMELINE_POINTS 240

struct rss_point {
	int64_t t_ns, rss_bytes;
};

struct pid_rss {
	int64_t pid, rss;
};

/* Carries each process's last RSS forward, so the total at time t is the sum
 * of every live process's latest reading (zombie readings count as 0). */
static size_t timeline_load(sqlite3 *db, struct rss_point **out)
{
	sqlite3_stmt *st;
	*out = NULL;
	if (sqlite3_prepare_v2(db, "SELECT t_ns, pid, coalesce(rss_bytes, 0) FROM proc_samples"
				   " ORDER BY t_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	struct pid_rss *pids = NULL;
	size_t npids = 0, apids = 0, n = 0, alloc = 0;
	struct rss_point *v = NULL;
	int64_t total = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(st, 0), pid = sqlite3_column_int64(st, 1),
			rss = sqlite3_column_int64(st, 2);
		size_t i;
		for (i = 0; i < npids && pids[i].pid != pid; i++)
			;
		if (i == npids) {
			if (npids == apids) {
				apids = apids ? apids * 2 : 16;
				pids = xrealloc(pids, apids * sizeof(*pids));
			}
			pids[npids++] = (struct pid_rss){ pid, 0 };
		}
		total += rss - pids[i].rss;
		pids[i].rss = rss;
		if (n && v[n - 1].t_ns == t) {
			v[n - 1].rss_bytes = total;
			continue;
		}
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 256;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		v[n++] = (struct rss_point){ t, total };
	}
	sqlite3_finalize(st);
	free(pids);
	*out = v;
	return n;
}

/* At most RSS_TIMELINE_POINTS points, keeping each bucket's maximum so the
 * peak survives the thinning. */
static json_t *timeline_json(const struct rss_point *v, size_t n)
{
	json_t *arr = json_array();
	size_t step = (n + RSS_TIMELINE_POINTS - 1) / RSS_TIMELINE_POINTS;
	if (!step)
		step = 1;
	for (size_t i = 0; i < n; i += step) {
		size_t best = i;
		for (size_t j = i; j < i + step && j < n; j++)
			if (v[j].rss_bytes > v[best].rss_bytes)
				best = j;
		json_array_append_new(arr, json_pack("{s:f, s:I}", "t_s", (double)v[best].t_ns / 1e9,
						     "rss_bytes", (json_int_t)v[best].rss_bytes));
	}
	return arr;
}

/* Why there is no memory.heap: not asked for, or asked for and impossible. */
static void heap_not_measured(struct analysis_ctx *ctx)
{
	sqlite3_stmt *st;
	struct strbuf why = STRBUF_INIT;
	if (sqlite3_prepare_v2(ctx->db, "SELECT reason FROM probes WHERE name = 'alloc'"
					" AND status = 'unavailable'",
			       -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			strbuf_addf(&why, "the allocation tracker could not run: %s",
				    (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	if (!why.len)
		strbuf_addstr(&why, "allocations were not tracked (heap peak, leaks, call sites): "
				    "run with --memory");
	report_not_measured(ctx->report, "heap", why.buf);
	strbuf_release(&why);
}

static int memory_rss_run(struct analysis_ctx *ctx)
{
	if (!recording_has_table(ctx->db, "proc_samples"))
		return 0;
	struct procstats ps;
	if (procstats_load(ctx->db, &ps))
		return -1;
	struct rss_point *v;
	size_t n = timeline_load(ctx->db, &v);
	size_t peak = 0;
	for (size_t i = 1; i < n; i++)
		if (v[i].rss_bytes > v[peak].rss_bytes)
			peak = i;
	/* The kernel's high-water mark sees peaks between two readings. */
	int64_t hwm = -1;
	for (size_t i = 0; i < ps.n; i++)
		if (ps.v[i].peak_rss_bytes > hwm)
			hwm = ps.v[i].peak_rss_bytes;
	json_t *mem = json_object();
	int64_t sampled = n ? v[peak].rss_bytes : -1;
	int from_hwm = hwm > sampled;
	int64_t peak_bytes = from_hwm ? hwm : sampled;
	json_object_set_new(mem, "peak_rss_bytes", peak_bytes >= 0 ? json_integer(peak_bytes)
								   : json_null());
	json_object_set_new(mem, "peak_rss_at_s",
			    n ? json_real((double)v[peak].t_ns / 1e9) : json_null());
	json_object_set_new(mem, "peak_rss_source",
			    json_string(from_hwm ? "kernel high-water mark of one process"
						 : "sum over processes, sampled"));
	json_object_set_new(mem, "sampled_peak_rss_bytes",
			    sampled >= 0 ? json_integer(sampled) : json_null());
	json_object_set_new(mem, "rss_timeline", timeline_json(v, n));
	json_object_set_new(ctx->report, "memory", mem);
	if (!recording_has_table(ctx->db, "alloc_sites"))
		heap_not_measured(ctx);
	free(v);
	procstats_release(&ps);
	return 0;
}

const struct analysis_ops analysis_memory_rss = { .name = "memory_rss", .run = memory_rss_run };
