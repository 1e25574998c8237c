/* memory_rss: the resident-set timeline of the whole target (sum over its
 * processes), its peak and when it happened, and the steps in it: jumps of
 * resident memory, each attributed to the call sites that were allocating
 * while it grew (when the allocation tracker ran) and to what was running. */
#include "analysis.h"
#include "memory_heap.h"
#include "procstats.h"
#include "../record/reader.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RSS_BYTES_MAX (1LL << 50) /* 1 PiB: more is a damaged recording */
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
		if (rss < 0 || rss > RSS_BYTES_MAX)
			rss = 0; /* a damaged recording: read as unknown */
		total = sat_add_i64(total, rss - pids[i].rss);
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

/* A jump: RSS rising by at least RSS_JUMP_MIN_SHARE of the peak (and at least
 * RSS_JUMP_MIN_BYTES), readings merged while each step still rises by more
 * than 1% of the peak. A rise that pauses and goes on (the program was
 * descheduled on a busy machine, or fills its memory in steps) stays one jump
 * when RSS holds during the pause and the pause is shorter than
 * RSS_JUMP_PAUSE_NS or than the rise so far; a longer pause starts another. */
#define RSS_JUMP_MIN_SHARE 0.10
#define RSS_JUMP_MIN_BYTES (8LL << 20)
#define RSS_JUMP_PAUSE_NS (1000000000LL)
#define RSS_JUMPS_MAX 5
#define RSS_JUMP_FINDING_SHARE 0.25
#define RSS_JUMP_FINDING_MIN_BYTES (64LL << 20) /* below: listed, not a finding */
#define RSS_JUMP_ALLOCATING_MAX 3
/* The finding names an allocating site when its heap grew by this share of the jump. */
#define RSS_JUMP_ALLOCATING_MIN_SHARE 0.25

struct rss_jump {
	size_t from, to; /* timeline indices: the reading before, the reading after */
};

/* The last reading of the rise that starts at reading i (i itself when the
 * next reading does not rise by more than step_min). */
static size_t rise_end(const struct rss_point *v, size_t n, size_t i, int64_t step_min)
{
	while (i + 1 < n && sat_sub_i64(v[i + 1].rss_bytes, v[i].rss_bytes) > step_min)
		i++;
	return i;
}

/* The reading where the rise from `from` to `to` goes on after a pause, or
 * `to` when RSS falls first, the pause runs too long, or the timeline ends. */
static size_t rise_resumes(const struct rss_point *v, size_t n, size_t from, size_t to,
			   int64_t step_min)
{
	int64_t pause_max_ns = sat_sub_i64(v[to].t_ns, v[from].t_ns);
	if (pause_max_ns < RSS_JUMP_PAUSE_NS)
		pause_max_ns = RSS_JUMP_PAUSE_NS;
	for (size_t k = to; k + 1 < n; k++) {
		if (sat_sub_i64(v[k].t_ns, v[to].t_ns) > pause_max_ns ||
		    v[k + 1].rss_bytes < sat_sub_i64(v[to].rss_bytes, step_min))
			return to;
		if (sat_sub_i64(v[k + 1].rss_bytes, v[k].rss_bytes) > step_min)
			return k;
	}
	return to;
}

static size_t jumps_find(const struct rss_point *v, size_t n, int64_t peak,
			 struct rss_jump *out, size_t cap)
{
	size_t found = 0;
	int64_t step_min = peak / 100, need = (int64_t)((double)peak * RSS_JUMP_MIN_SHARE);
	if (need < RSS_JUMP_MIN_BYTES)
		need = RSS_JUMP_MIN_BYTES;
	for (size_t i = 0; i + 1 < n && found < cap;) {
		size_t j = rise_end(v, n, i, step_min);
		for (size_t k; j > i && (k = rise_resumes(v, n, i, j, step_min)) != j;)
			j = rise_end(v, n, k, step_min);
		if (j > i && sat_sub_i64(v[j].rss_bytes, v[i].rss_bytes) >= need) {
			out[found++] = (struct rss_jump){ i, j };
			i = j;
		} else {
			i++;
		}
	}
	return found;
}

/* What ran while RSS grew: the function with most stack samples in the
 * window (Python frames first when there are any), each sample counted at its
 * innermost frame outside the kernel (the page-fault handler that maps the
 * memory is not what touched it). NULL when nothing sampled. */
static json_t *jump_attribution(sqlite3 *db, int64_t from_ns, int64_t to_ns)
{
	if (!recording_has_table(db, "samples"))
		return NULL;
	sqlite3_stmt *st;
	json_t *j = NULL;
	if (sqlite3_prepare_v2(db,
			       "WITH RECURSIVE up(sample, node, source, depth) AS ("
			       " SELECT rowid, node, source, 0 FROM samples"
			       " WHERE source IN ('cpu', 'python') AND t_ns BETWEEN ? AND ?"
			       " UNION ALL SELECT up.sample, n.parent, up.source, up.depth + 1"
			       " FROM up JOIN stack_nodes n ON n.id = up.node"
			       " JOIN frames f ON f.id = n.frame"
			       " WHERE f.kind = 'kernel' AND n.parent > 0 AND up.depth < 256)"
			       " SELECT f.function, f.file, f.line, count(DISTINCT up.sample) AS c,"
			       " up.source FROM up JOIN stack_nodes n ON n.id = up.node"
			       " JOIN frames f ON f.id = n.frame"
			       " WHERE f.kind IS NOT 'kernel'"
			       " GROUP BY up.source, f.function, f.file"
			       " ORDER BY up.source = 'python' DESC, c DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, from_ns);
	sqlite3_bind_int64(st, 2, to_ns);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *fn = (const char *)sqlite3_column_text(st, 0);
		const char *file = (const char *)sqlite3_column_text(st, 1);
		j = json_object();
		json_object_set_new(j, "function", report_string(fn, fn ? strlen(fn) : 0));
		json_object_set_new(j, "file", file ? report_string(file, strlen(file)) : json_null());
		json_object_set_new(j, "line", sqlite3_column_type(st, 2) == SQLITE_NULL
							? json_null()
							: json_integer(sqlite3_column_int(st, 2)));
		json_object_set_new(j, "samples", json_integer(sqlite3_column_int64(st, 3)));
		json_object_set_new(j, "source", json_string((const char *)sqlite3_column_text(st, 4)));
	}
	sqlite3_finalize(st);
	return j;
}

/* Who allocated while RSS grew: the sites whose live heap grew most between
 * the two readings (bytes allocated minus bytes of theirs freed, in the
 * alloc_site_timeline buckets that overlap the window), largest first. NULL
 * when the allocation tracker did not run (or wrote no per-site timeline). */
static json_t *jump_allocating(sqlite3 *db, int64_t from_ns, int64_t to_ns)
{
	int64_t bucket_ns, procs;
	if (!recording_has_table(db, "alloc_site_timeline") ||
	    recording_meta_int(db, "alloc_site_bucket_ns", &bucket_ns) || bucket_ns <= 0 ||
	    recording_meta_int(db, "alloc_processes", &procs) || procs <= 0)
		return NULL;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT node, sum(allocated_bytes) - sum(freed_bytes) AS grew,"
			       " sum(allocated_bytes), sum(freed_bytes), sum(allocations)"
			       " FROM alloc_site_timeline WHERE t_ns < ? AND t_ns + ? > ?"
			       " GROUP BY node HAVING grew > 0 ORDER BY grew DESC, node LIMIT ?",
			       -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, to_ns);
	sqlite3_bind_int64(st, 2, bucket_ns);
	sqlite3_bind_int64(st, 3, from_ns);
	sqlite3_bind_int(st, 4, RSS_JUMP_ALLOCATING_MAX);
	json_t *arr = json_array();
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *o = heap_site_describe(db, sqlite3_column_int64(st, 0));
		if (!o)
			continue;
		json_object_set_new(o, "bytes", json_integer(llround(sqlite3_column_double(st, 1))));
		json_object_set_new(o, "allocated_bytes",
				    json_integer(llround(sqlite3_column_double(st, 2))));
		json_object_set_new(o, "freed_bytes",
				    json_integer(llround(sqlite3_column_double(st, 3))));
		json_object_set_new(o, "allocations",
				    json_integer(llround(sqlite3_column_double(st, 4))));
		json_array_append_new(arr, o);
	}
	sqlite3_finalize(st);
	return arr;
}

/* The finding for one jump from reading a to reading b: located at the
 * allocating site whose heap grew by a good share of it, else at what ran. */
static void jump_finding(struct analysis_ctx *ctx, const struct rss_point *a,
			 const struct rss_point *b, int64_t peak, int64_t interval_ns, json_t *who,
			 json_t *allocating)
{
	int64_t size = sat_sub_i64(b->rss_bytes, a->rss_bytes);
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, loc = STRBUF_INIT;
	strbuf_addf(&title, "Resident memory jumps by %.0f MiB at %.2f s",
		    (double)size / 1048576.0, (double)a->t_ns / 1e9);
	strbuf_addf(&ev,
		    "RSS went from %.1f MiB to %.1f MiB between %.3f s and %.3f s (%.0f%% of "
		    "the %.1f MiB peak; readings every %.0f ms)",
		    (double)a->rss_bytes / 1048576.0, (double)b->rss_bytes / 1048576.0,
		    (double)a->t_ns / 1e9, (double)b->t_ns / 1e9,
		    100.0 * (double)size / (double)peak, (double)peak / 1048576.0,
		    (double)interval_ns / 1e6);
	json_t *top = json_array_get(allocating, 0);
	double grew = json_number_value(json_object_get(top, "bytes"));
	int named = top && grew >= RSS_JUMP_ALLOCATING_MIN_SHARE * (double)size;
	if (named) {
		char *mode = recording_meta_text(ctx->db, "alloc_mode");
		strbuf_addstr(&loc, json_string_value(json_object_get(top, "location")));
		strbuf_addf(&ev, "; allocating then: %s, whose live heap grew by %.1f MiB "
				 "(%.1f MiB allocated%s)",
			    loc.buf, grew / 1048576.0,
			    json_number_value(json_object_get(top, "allocated_bytes")) /
				    1048576.0,
			    mode && strcmp(mode, "full") ? ", estimated from samples" : "");
		free(mode);
	} else if (allocating) {
		strbuf_addf(&ev, "; no tracked allocation site grew by %.0f%% of the jump "
				 "then (memory allocated earlier and touched now, file "
				 "mappings, or memory the tracker does not see)",
			    100.0 * RSS_JUMP_ALLOCATING_MIN_SHARE);
	}
	if (who) {
		const char *file = json_string_value(json_object_get(who, "file"));
		json_t *line = json_object_get(who, "line");
		struct strbuf ran = STRBUF_INIT;
		strbuf_addf(&ran, "%s%s%s", file ? file : "", file ? ":" : "",
			    json_string_value(json_object_get(who, "function")));
		if (json_is_integer(line))
			strbuf_addf(&ran, ":%lld", (long long)json_integer_value(line));
		strbuf_addf(&ev, "; running then: %s (%lld samples)", ran.buf,
			    (long long)json_integer_value(json_object_get(who, "samples")));
		if (!named)
			strbuf_add(&loc, ran.buf, ran.len);
		strbuf_release(&ran);
	} else if (!named) {
		strbuf_addf(&loc, "between %.3f s and %.3f s of the run", (double)a->t_ns / 1e9,
			    (double)b->t_ns / 1e9);
	}
	struct strbuf next = STRBUF_INIT;
	if (named) {
		const char *fn = json_string_value(json_object_get(top, "function"));
		strbuf_addf(&title, " while %s allocates", fn);
		strbuf_addf(&next, "Check what %s allocates at once: process the data in "
				   "chunks or stream it, reuse one buffer, or free the "
				   "previous one before building the next",
			    fn);
	} else {
		strbuf_addf(&next, "Check what that code allocates at once: process the data "
				   "in chunks or stream it, reuse one buffer, or free the "
				   "previous one before building the next%s",
			    allocating ? "" : "; `sonde run --memory` names the allocating "
					      "call site when the allocation tracker is "
					      "available");
	}
	struct finding f = {
		.title = title.buf,
		.dimension = "memory",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "RSS step: one operation makes a large allocation (or touches a "
			     "large mapping) at once",
		.next_step = next.buf,
		.validation = "memory.peak_rss_bytes and the jump in memory.rss_jumps shrink",
		.impact_s = -1,
		.impact_bytes = (double)size,
		.impact_pct = 100.0 * (double)size / (double)peak,
	};
	findings_add(ctx->findings, &f);
	strbuf_release(&next);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&loc);
}

static void jumps_report(struct analysis_ctx *ctx, json_t *mem, const struct rss_point *v,
			 size_t n, int64_t peak, int64_t interval_ns)
{
	struct rss_jump jumps[RSS_JUMPS_MAX];
	size_t nj = peak > 0 ? jumps_find(v, n, peak, jumps, RSS_JUMPS_MAX) : 0;
	json_t *arr = json_array();
	for (size_t k = 0; k < nj; k++) {
		const struct rss_point *a = &v[jumps[k].from], *b = &v[jumps[k].to];
		int64_t size = sat_sub_i64(b->rss_bytes, a->rss_bytes);
		/* The growth happened between the reading before and the one after. */
		json_t *who = jump_attribution(ctx->db, a->t_ns, b->t_ns);
		json_t *o = json_pack("{s:f, s:f, s:f, s:I, s:I, s:I}", "start_s",
				      (double)a->t_ns / 1e9, "end_s", (double)b->t_ns / 1e9,
				      "duration_s", (double)sat_sub_i64(b->t_ns, a->t_ns) / 1e9, "size_bytes",
				      (json_int_t)size, "before_bytes", (json_int_t)a->rss_bytes,
				      "after_bytes", (json_int_t)b->rss_bytes);
		json_object_set_new(o, "during", who ? who : json_null());
		json_t *allocating = jump_allocating(ctx->db, a->t_ns, b->t_ns);
		json_object_set_new(o, "allocating", allocating ? allocating : json_null());
		json_array_append_new(arr, o);
		if ((double)size < RSS_JUMP_FINDING_SHARE * (double)peak ||
		    size < RSS_JUMP_FINDING_MIN_BYTES)
			continue;
		jump_finding(ctx, a, b, peak, interval_ns, who, allocating);
	}
	json_object_set_new(mem, "rss_jumps", arr);
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
	if (!ctx->procs)
		return -1;
	const struct procstats *ps = ctx->procs;
	struct rss_point *v;
	size_t n = timeline_load(ctx->db, &v);
	size_t peak = 0;
	for (size_t i = 1; i < n; i++)
		if (v[i].rss_bytes > v[peak].rss_bytes)
			peak = i;
	/* The kernel's high-water mark sees peaks between two readings. */
	int64_t hwm = -1;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].peak_rss_bytes > hwm)
			hwm = ps->v[i].peak_rss_bytes;
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
	int64_t interval_ns = 100000000;
	recording_meta_int(ctx->db, "interval_ns", &interval_ns);
	jumps_report(ctx, mem, v, n, sampled, interval_ns);
	json_object_set_new(ctx->report, "memory", mem);
	if (!recording_has_table(ctx->db, "alloc_sites"))
		heap_not_measured(ctx);
	free(v);
	return 0;
}

const struct analysis_ops analysis_memory_rss = { .name = "memory_rss", .run = memory_rss_run };
