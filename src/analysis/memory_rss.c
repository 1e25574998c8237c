/* memory_rss: the resident-set timeline of the whole target (sum over its
 * processes), its peak and when it happened, and the steps in it: jumps of
 * resident memory, each attributed to the call sites that were allocating
 * while it grew (when the allocation tracker ran) and to what was running. */
#include "analysis.h"
#include "frames.h"
#include "memory_heap.h"
#include "procstats.h"
#include "proctimeline.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RSS_BYTES_MAX (1LL << 50) /* 1 PiB: more is a damaged recording */
#define RSS_TIMELINE_POINTS 240

static size_t timeline_load(sqlite3 *db, struct proc_point **out)
{
	return proc_timeline_load(db, "rss_bytes", RSS_BYTES_MAX, out);
}

/* At most RSS_TIMELINE_POINTS points, keeping each bucket's maximum so the
 * peak survives the thinning. */
static json_t *timeline_json(const struct proc_point *v, size_t n)
{
	json_t *arr = json_array();
	size_t step = (n + RSS_TIMELINE_POINTS - 1) / RSS_TIMELINE_POINTS;
	if (!step)
		step = 1;
	for (size_t i = 0; i < n; i += step) {
		size_t best = i;
		for (size_t j = i; j < i + step && j < n; j++)
			if (v[j].value > v[best].value)
				best = j;
		json_array_append_new(arr, json_pack("{s:f, s:I}", "t_s", (double)v[best].t_ns / 1e9,
						     "rss_bytes", (json_int_t)v[best].value));
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
#define RSS_JUMPS_MAX 5	 /* listed in memory.rss_jumps */
#define RSS_JUMPS_COUNTED 64 /* looked at for the findings */
#define RSS_JUMP_FINDING_SHARE 0.25
#define RSS_JUMP_FINDING_MIN_BYTES (64LL << 20) /* below: listed, not a finding */
#define RSS_JUMP_ALLOCATING_MAX 3
/* A single rise over this many readings, while the target ran on the CPU
 * for this long, is memory kept as the code runs (a list that holds every
 * row), not one block touched: that takes a fraction of a second of CPU
 * however long a busy machine stretches it. */
#define RSS_RAMP_MIN_READINGS 10
#define RSS_RAMP_MIN_CPU_NS (1000000000LL)
/* Native paths read per site named, for one Python line's several callees. */
#define RSS_JUMP_PATHS_PER_SITE 8
/* Allocations a fifth of a jump's length before it count for it. */
#define RSS_JUMP_LOOKBACK_DIV 5
/* The finding names an allocating site when its heap grew by this share of the jump. */
#define RSS_JUMP_ALLOCATING_MIN_SHARE 0.25


struct rss_jump {
	size_t from, to; /* timeline indices: the reading before, the reading after */
};

/* The last reading of the rise that starts at reading i (i itself when the
 * next reading does not rise by more than step_min). */
static size_t rise_end(const struct proc_point *v, size_t n, size_t i, int64_t step_min)
{
	while (i + 1 < n && sat_sub_i64(v[i + 1].value, v[i].value) > step_min)
		i++;
	return i;
}

/* The reading where the rise from `from` to `to` goes on after a pause, or
 * `to` when RSS falls first, the pause runs too long, or the timeline ends. */
static size_t rise_resumes(const struct proc_point *v, size_t n, size_t from, size_t to,
			   int64_t step_min)
{
	int64_t pause_max_ns = sat_sub_i64(v[to].t_ns, v[from].t_ns);
	if (pause_max_ns < RSS_JUMP_PAUSE_NS)
		pause_max_ns = RSS_JUMP_PAUSE_NS;
	for (size_t k = to; k + 1 < n; k++) {
		if (sat_sub_i64(v[k].t_ns, v[to].t_ns) > pause_max_ns ||
		    v[k + 1].value < sat_sub_i64(v[to].value, step_min))
			return to;
		if (sat_sub_i64(v[k + 1].value, v[k].value) > step_min)
			return k;
	}
	return to;
}

static size_t jumps_find(const struct proc_point *v, size_t n, int64_t peak,
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
		if (j > i && sat_sub_i64(v[j].value, v[i].value) >= need) {
			out[found++] = (struct rss_jump){ i, j };
			i = j;
		} else {
			i++;
		}
	}
	return found;
}

/* What ran while RSS grew: the function with most stack samples in the
 * window (Python frames first when there are any; between equals, the one
 * that ran last before the reading that saw the growth: a computation that
 * ended early in the window, then the loop that touched the new pages, is
 * the loop's); but, without Python samples, the one whose samples faulted
 * pages in, when one's did (RSS_JUMP_FAULTS_MIN), whatever ran more; each
 * sample counted at its
 * nearest frame of the program's own code (frames.h: not the kernel's
 * page-fault handler that maps the memory, nor the memset that touched it).
 * NULL when nothing sampled. */
struct ran_then {
	char *function, *file, *source;
	int line;
	int64_t samples;
	int64_t faults;	 /* of them, in the kernel's page-fault path */
	int64_t last_ns; /* its last sample in the window */
};

/* The samples of a function that faulted pages in name the jump before
 * any number of a function's that did not (a computation that shared the
 * window on a busy machine): at least this many. */
#define RSS_JUMP_FAULTS_MIN 2

static int is_fault_fn(const char *fn)
{
	return fn && (strstr(fn, "page_fault") || strstr(fn, "handle_mm_fault") ||
		      strstr(fn, "do_anonymous_page"));
}

static char *col_dup(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? xstrdup((const char *)t) : NULL;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static json_t *jump_attribution(sqlite3 *db, int64_t from_ns, int64_t to_ns)
{
	if (!recording_has_table(db, "samples") || !recording_has_table(db, "stack_nodes"))
		return NULL;
	sqlite3_stmt *st, *up;
	if (sqlite3_prepare_v2(db,
			       "SELECT node, source, count(*), max(t_ns) FROM samples"
			       " WHERE source IN ('cpu', 'python') AND t_ns BETWEEN ? AND ?"
			       " GROUP BY node, source",
			       -1, &st, NULL) != SQLITE_OK)
		return NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT n.parent, f.function, f.file, f.line, f.module, f.kind"
			       " FROM stack_nodes n JOIN frames f ON f.id = n.frame WHERE n.id = ?",
			       -1, &up, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	sqlite3_bind_int64(st, 1, from_ns);
	sqlite3_bind_int64(st, 2, to_ns);
	struct ran_then *v = NULL;
	size_t n = 0, alloc = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t node = sqlite3_column_int64(st, 0), count = sqlite3_column_int64(st, 2);
		int64_t last_ns = sqlite3_column_int64(st, 3);
		const char *source = (const char *)sqlite3_column_text(st, 1);
		struct ran_then r = { 0 };
		/* The innermost frame outside the system's (the leaf when every
		 * frame is: a kernel thread); for a Python stack, further out
		 * to the program's own Python frame when there is one (the
		 * `import torch` line, not importlib's frames). */
		int py = source && !strcmp(source, "python"), found = 0, faults = 0;
		for (int depth = 0; node > 0 && depth < STACK_DEPTH_MAX; depth++) {
			sqlite3_bind_int64(up, 1, node);
			if (sqlite3_step(up) != SQLITE_ROW)
				break;
			node = sqlite3_column_int64(up, 0);
			faults |= is_fault_fn((const char *)sqlite3_column_text(up, 1));
			int system = frame_is_system((const char *)sqlite3_column_text(up, 4),
						     (const char *)sqlite3_column_text(up, 5));
			int own = py && frame_python_is_own((const char *)sqlite3_column_text(up, 2));
			if (!depth || (!system && !found) || own) {
				free(r.function);
				free(r.file);
				r.function = col_dup(up, 1);
				r.file = col_dup(up, 2);
				r.line = sqlite3_column_int(up, 3);
			}
			sqlite3_reset(up);
			found |= !system;
			if ((!system && !py) || own)
				break;
		}
		sqlite3_reset(up);
		if (!r.function) {
			free(r.file);
			continue;
		}
		size_t k = 0;
		while (k < n && !(str_eq(v[k].function, r.function) && str_eq(v[k].file, r.file) &&
				  str_eq(v[k].source, source)))
			k++;
		if (k < n) {
			v[k].samples += count;
			v[k].faults += faults ? count : 0;
			if (last_ns > v[k].last_ns)
				v[k].last_ns = last_ns;
			free(r.function);
			free(r.file);
			continue;
		}
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 16;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		r.source = xstrdup(source ? source : "cpu");
		r.samples = count;
		r.faults = faults ? count : 0;
		r.last_ns = last_ns;
		v[n++] = r;
	}
	sqlite3_finalize(st);
	sqlite3_finalize(up);
	const struct ran_then *best = NULL;
	int64_t faults_most = 0;
	int python = 0; /* Python samples name the line, before any native frame */
	for (size_t k = 0; k < n; k++) {
		faults_most = v[k].faults > faults_most ? v[k].faults : faults_most;
		python |= !strcmp(v[k].source, "python");
	}
	if (python)
		faults_most = 0;
	for (size_t k = 0; k < n && faults_most >= RSS_JUMP_FAULTS_MIN; k++)
		if (v[k].faults == faults_most && (!best || v[k].last_ns > best->last_ns))
			best = &v[k];
	for (size_t k = 0; k < n && faults_most < RSS_JUMP_FAULTS_MIN; k++) {
		int py = !strcmp(v[k].source, "python");
		if (!best || py > !strcmp(best->source, "python") ||
		    (py == !strcmp(best->source, "python") &&
		     (v[k].samples > best->samples ||
		      (v[k].samples == best->samples && v[k].last_ns > best->last_ns))))
			best = &v[k];
	}
	json_t *j = NULL;
	if (best) {
		j = json_object();
		json_object_set_new(j, "function", report_string(best->function,
								 strlen(best->function)));
		json_object_set_new(j, "file", best->file ? report_string(best->file,
									  strlen(best->file))
							  : json_null());
		json_object_set_new(j, "line", best->line > 0 ? json_integer(best->line) : json_null());
		json_object_set_new(j, "samples", json_integer(best->samples));
		json_object_set_new(j, "source", json_string(best->source));
	}
	for (size_t k = 0; k < n; k++) {
		free(v[k].function);
		free(v[k].file);
		free(v[k].source);
	}
	free(v);
	return j;
}

/* Who allocated while RSS grew: the sites whose live heap grew most between
 * the two readings (bytes allocated minus bytes of theirs freed, in the
 * alloc_site_timeline buckets that overlap the window), largest first. NULL
 * when the allocation tracker did not run (or wrote no per-site timeline). */
/* The entry of arr that is the same Python line as site, or NULL. */
static json_t *same_python_line(json_t *arr, json_t *site)
{
	const char *loc = json_string_value(json_object_get(site, "location"));
	size_t i;
	json_t *o;
	if (!loc || !json_object_get(site, "python_site"))
		return NULL;
	json_array_foreach(arr, i, o)
	{
		const char *l = json_string_value(json_object_get(o, "location"));
		if (l && !strcmp(l, loc) && json_object_get(o, "python_site"))
			return o;
	}
	return NULL;
}

/* Adds site's byte counts to into's, its native path to into's native_paths:
 * one Python line is one site, whatever native code under it allocated. */
static void site_merge(json_t *into, json_t *site)
{
	static const char *const keys[] = { "bytes", "allocated_bytes", "freed_bytes",
					    "allocations" };
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		json_object_set_new(
		    into, keys[k],
		    json_integer(sat_add_i64(json_integer_value(json_object_get(into, keys[k])),
					     json_integer_value(json_object_get(site, keys[k])))));
	json_t *paths = json_object_get(into, "native_paths");
	if (!paths) {
		paths = json_array();
		json_array_append_new(paths, json_pack("{s:O, s:O}", "allocated_in",
						       json_object_get(into, "allocated_in"),
						       "bytes", json_object_get(into, "bytes")));
		json_object_set_new(into, "native_paths", paths);
	}
	const char *fn = json_string_value(json_object_get(site, "allocated_in"));
	size_t i;
	json_t *p;
	json_array_foreach(paths, i, p)
	{
		const char *have = json_string_value(json_object_get(p, "allocated_in"));
		if (fn && have && !strcmp(fn, have)) {
			json_object_set_new(
			    p, "bytes",
			    json_integer(sat_add_i64(json_integer_value(json_object_get(p, "bytes")),
						     json_integer_value(json_object_get(site, "bytes")))));
			return;
		}
	}
	json_array_append_new(paths, json_pack("{s:O, s:O}", "allocated_in",
					       json_object_get(site, "allocated_in"), "bytes",
					       json_object_get(site, "bytes")));
}

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
	/* Room for the native paths of the top Python lines, merged below. */
	sqlite3_bind_int(st, 4, RSS_JUMP_ALLOCATING_MAX * RSS_JUMP_PATHS_PER_SITE);
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
		json_t *line = same_python_line(arr, o);
		if (line) {
			site_merge(line, o);
			json_decref(o);
		} else if (json_array_size(arr) < RSS_JUMP_ALLOCATING_MAX) {
			json_array_append_new(arr, o);
		} else {
			json_decref(o);
		}
	}
	sqlite3_finalize(st);
	/* Merged lines may have grown past the ones before them: largest first again. */
	heap_sites_sort(arr, "bytes");
	return arr;
}

/* A jump worth a finding, with where it is located: at the allocating site
 * whose heap grew by a good share of it, else at what ran. */
struct jump_case {
	const struct proc_point *a, *b;
	int64_t size;
	json_t *who, *allocating; /* borrowed from the jump's JSON */
	json_t *held;		  /* ... its `touched` site, or NULL */
	struct strbuf loc, ran;
	int named;		  /* loc is the allocating site, or the touched one */
	int done;		  /* told in a finding already */
};

static void jump_case_locate(struct jump_case *c)
{
	json_t *top = json_array_get(c->allocating, 0);
	double grew = json_number_value(json_object_get(top, "bytes"));
	c->named = top && grew >= RSS_JUMP_ALLOCATING_MIN_SHARE * (double)c->size;
	if (!c->named && c->held) {
		top = c->held;
		c->named = 1;
	}
	if (c->named)
		strbuf_addstr(&c->loc, json_string_value(json_object_get(top, "location")));
	if (c->who) {
		const char *file = json_string_value(json_object_get(c->who, "file"));
		json_t *line = json_object_get(c->who, "line");
		strbuf_addf(&c->ran, "%s%s%s", file ? file : "", file ? ":" : "",
			    json_string_value(json_object_get(c->who, "function")));
		if (json_is_integer(line))
			strbuf_addf(&c->ran, ":%lld", (long long)json_integer_value(line));
		if (!c->named)
			strbuf_add(&c->loc, c->ran.buf, c->ran.len);
	}
}

/* The same cause: both located at one function (findings_cause). */
static int jump_same_site(const struct jump_case *x, const struct jump_case *y)
{
	if (!x->loc.len || x->named != y->named)
		return 0;
	size_t na, nb;
	const char *a = findings_cause(x->loc.buf, &na), *b = findings_cause(y->loc.buf, &nb);
	return na == nb && !memcmp(a, b, na);
}

/* The target's CPU time (every process's) between t0 and t1, in ns. */
static double cpu_between(sqlite3 *db, int64_t t0, int64_t t1)
{
	struct proc_point *cpu = NULL;
	size_t n = proc_timeline_load(db, "user_ns + sys_ns", 1LL << 62, &cpu);
	double ns = n ? proc_timeline_at(cpu, n, t1) - proc_timeline_at(cpu, n, t0) : 0;
	free(cpu);
	return ns;
}

/* One finding for the jumps at one site: the first (c[0]) and every later
 * one of the n that shares its site. */
static void jump_finding(struct analysis_ctx *ctx, struct jump_case *c, size_t n, int64_t peak,
			 int64_t interval_ns)
{
	size_t count = 0;
	int64_t largest = 0, smallest = INT64_MAX;
	struct strbuf when = STRBUF_INIT;
	for (size_t k = 0; k < n; k++) {
		if (c[k].done || (k && !jump_same_site(&c[0], &c[k])))
			continue;
		c[k].done = 1;
		count++;
		largest = c[k].size > largest ? c[k].size : largest;
		smallest = c[k].size < smallest ? c[k].size : smallest;
		if (count <= 8)
			strbuf_addf(&when, "%s%.2f s", count > 1 ? ", " : "",
				    (double)c[k].a->t_ns / 1e9);
		else if (count == 9)
			strbuf_addstr(&when, ", ...");
	}
	const struct proc_point *a = c[0].a, *b = c[0].b;
	int64_t rise_ns = b->t_ns - a->t_ns;
	int ramp = count == 1 && !c[0].held && rise_ns >= RSS_RAMP_MIN_READINGS * interval_ns &&
		   cpu_between(ctx->db, a->t_ns, b->t_ns) >= RSS_RAMP_MIN_CPU_NS;
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT;
	if (count > 1) {
		strbuf_addf(&title, "Resident memory jumps %zu times by up to %.0f MiB", count,
			    (double)largest / 1048576.0);
		strbuf_addf(&ev, "RSS rose %zu times by %.0f to %.0f MiB (at %s), falling back in "
				 "between; the first from %.1f MiB to %.1f MiB between %.3f s and "
				 "%.3f s (%.0f%% of the %.1f MiB peak; readings every %.0f ms)",
			    count, (double)smallest / 1048576.0, (double)largest / 1048576.0,
			    when.buf, (double)a->value / 1048576.0,
			    (double)b->value / 1048576.0, (double)a->t_ns / 1e9,
			    (double)b->t_ns / 1e9, 100.0 * (double)c[0].size / (double)peak,
			    (double)peak / 1048576.0, (double)interval_ns / 1e6);
	} else if (ramp) {
		strbuf_addf(&title, "Resident memory grows by %.0f MiB over %.1f s from %.2f s",
			    (double)c[0].size / 1048576.0, (double)rise_ns / 1e9,
			    (double)a->t_ns / 1e9);
		strbuf_addf(&ev,
			    "RSS rose from %.1f MiB to %.1f MiB between %.3f s and %.3f s, %.0f "
			    "MiB/s on average (%.0f%% of the %.1f MiB peak; readings every %.0f ms)",
			    (double)a->value / 1048576.0, (double)b->value / 1048576.0,
			    (double)a->t_ns / 1e9, (double)b->t_ns / 1e9,
			    (double)c[0].size / 1048576.0 / ((double)rise_ns / 1e9),
			    100.0 * (double)c[0].size / (double)peak, (double)peak / 1048576.0,
			    (double)interval_ns / 1e6);
	} else {
		strbuf_addf(&title, "Resident memory jumps by %.0f MiB at %.2f s",
			    (double)c[0].size / 1048576.0, (double)a->t_ns / 1e9);
		strbuf_addf(&ev,
			    "RSS went from %.1f MiB to %.1f MiB between %.3f s and %.3f s (%.0f%% "
			    "of the %.1f MiB peak; readings every %.0f ms)",
			    (double)a->value / 1048576.0, (double)b->value / 1048576.0,
			    (double)a->t_ns / 1e9, (double)b->t_ns / 1e9,
			    100.0 * (double)c[0].size / (double)peak, (double)peak / 1048576.0,
			    (double)interval_ns / 1e6);
	}
	json_t *top = c[0].held ? c[0].held : json_array_get(c[0].allocating, 0);
	if (c[0].held) {
		strbuf_addf(&ev, "; allocated before it and touched then: %s, holding %.1f MiB "
				 "live, more than all that was resident before the jump",
			    c[0].loc.buf, json_number_value(json_object_get(top, "bytes")) / 1048576.0);
	} else if (c[0].named) {
		char *mode = recording_meta_text(ctx->db, "alloc_mode");
		strbuf_addf(&ev, "; allocating then: %s, whose live heap grew by %.1f MiB "
				 "(%.1f MiB allocated%s)",
			    c[0].loc.buf, json_number_value(json_object_get(top, "bytes")) / 1048576.0,
			    json_number_value(json_object_get(top, "allocated_bytes")) /
				    1048576.0,
			    mode && strcmp(mode, "full") ? ", estimated from samples" : "");
		free(mode);
	} else if (c[0].allocating) {
		strbuf_addf(&ev, "; no tracked allocation site grew by %.0f%% of the jump "
				 "then (memory allocated earlier and touched now, file "
				 "mappings, or memory the tracker does not see)",
			    100.0 * RSS_JUMP_ALLOCATING_MIN_SHARE);
	}
	if (c[0].who)
		strbuf_addf(&ev, "; running then: %s (%lld samples)", c[0].ran.buf,
			    (long long)json_integer_value(json_object_get(c[0].who, "samples")));
	struct strbuf loc = STRBUF_INIT, next = STRBUF_INIT;
	if (c[0].loc.len)
		strbuf_add(&loc, c[0].loc.buf, c[0].loc.len);
	else
		strbuf_addf(&loc, "between %.3f s and %.3f s of the run", (double)a->t_ns / 1e9,
			    (double)b->t_ns / 1e9);
	const char *fn = json_string_value(json_object_get(c[0].named ? top : c[0].who,
							   "function"));
	if (c[0].held)
		strbuf_addf(&title, " as %s's block is touched", fn);
	else if (c[0].named)
		strbuf_addf(&title, " while %s allocates", fn);
	else if (ramp && fn)
		strbuf_addf(&title, " while %s runs", fn);
	if (ramp && strstr(c[0].loc.buf ? c[0].loc.buf : "", ".py:"))
		strbuf_addf(&next, "Check what %s keeps: handle the items as they come (iterate, "
				   "or yield them from a generator, and write results out as they "
				   "are ready) instead of holding them all, or keep less per item "
				   "(tuples or classes with __slots__ instead of dicts, only the "
				   "fields used)",
			    fn ? fn : "that code");
	else if (ramp)
		strbuf_addf(&next, "Check what %s keeps: process the data as it arrives instead "
				   "of holding all of it, free what is done with, or store it more "
				   "compactly",
			    fn ? fn : "that code");
	else if (count > 1)
		strbuf_addf(&next, "Build the large block once and reuse it: %s makes it anew "
				   "each time (the memory goes back to the system in between and "
				   "is faulted in again); allocate it before the loop, or keep the "
				   "previous one",
			    fn ? fn : "that code");
	else
		strbuf_addf(&next, "Check what %s allocates at once: process the data in "
				   "chunks or stream it, reuse one buffer, or free the previous "
				   "one before building the next%s",
			    fn ? fn : "that code",
			    c[0].named || c[0].allocating
				    ? ""
				    : "; `sonde run --memory` names the allocating call site "
				      "when the allocation tracker is available");
	struct finding f = {
		.id = "memory.rss_jump",
		.title = title.buf,
		.dimension = "memory",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = count > 1 ? "Repeated RSS step: the same code builds a large block, "
					 "drops it and builds it again, so each round pays the "
					 "page faults of fresh memory"
			     : ramp ? "RSS growth: memory rises for as long as the code runs: it "
				      "keeps what it makes (a list, dict or cache holding every "
				      "item), or fills a large block bit by bit, rather than "
				      "allocating and touching it at once"
				    : "RSS step: one operation makes a large allocation (or "
				      "touches a large mapping) at once",
		.next_step = next.buf,
		.validation = "memory.peak_rss_bytes and the jump in memory.rss_jumps shrink",
		.impact_s = -1,
		.impact_bytes = (double)largest,
		.impact_pct = 100.0 * (double)largest / (double)peak,
		.blames_code = c[0].named	 ? FINDING_BLAMES_CODE
			       : c[0].loc.len ? FINDING_BLAMES_GUESS
					      : 0,
	};
	findings_add(ctx->findings, &f);
	strbuf_release(&when);
	strbuf_release(&next);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&loc);
}

/* The function a stretch of the run is attributed to ("" when none). */
static void during_name(sqlite3 *db, int64_t from_ns, int64_t to_ns, struct strbuf *out)
{
	json_t *who = jump_attribution(db, from_ns, to_ns);
	const char *fn = json_string_value(json_object_get(who, "function"));
	strbuf_addstr(out, fn ? fn : "");
	json_decref(who);
}

/* The bytes the site that grew most in [from_ns, to_ns) grew by, from the
 * allocation tracker's timeline (a bucket back for the malloc that came a
 * moment before its pages were touched); 0 without it. */
static double top_site_grew(sqlite3 *db, int64_t from_ns, int64_t to_ns)
{
	json_t *a = jump_allocating(db, from_ns, to_ns);
	double grew = json_number_value(json_object_get(json_array_get(a, 0), "bytes"));
	json_decref(a);
	return grew;
}

/* When no site grew by a good share of the jump a -> b: the site that was
 * holding the most live heap at b, allocated before the jump, when it holds
 * more than everything resident before it by that share of the jump: a block
 * allocated earlier whose pages were touched during the jump (on a busy
 * machine the touching thread is descheduled for seconds, long after its
 * malloc). NULL when none. */
static json_t *jump_touched(sqlite3 *db, json_t *allocating, const struct proc_point *a,
			    const struct proc_point *b)
{
	double size = (double)sat_sub_i64(b->value, a->value);
	double grew = json_number_value(json_object_get(json_array_get(allocating, 0), "bytes"));
	if (grew >= RSS_JUMP_ALLOCATING_MIN_SHARE * size)
		return NULL;
	json_t *live = jump_allocating(db, INT64_MIN / 2, b->t_ns);
	json_t *top = json_array_get(live, 0);
	double held = json_number_value(json_object_get(top, "bytes"));
	json_t *out = NULL;
	if (top && held - (double)a->value >= RSS_JUMP_ALLOCATING_MIN_SHARE * size)
		out = json_incref(top);
	json_decref(live);
	return out;
}

/* Rises merged across a pause (a busy machine stretches both) may be two
 * causes: a program starting up, then the step of its work. A jump whose
 * longest flat stretch passes RSS_JUMP_PAUSE_NS is cut there when both sides
 * are jumps of their own and different functions ran during them, unless
 * one allocation before the pause accounts for most of both sides (a block
 * whose pages were still being touched after it: on a busy machine the
 * thread that touches them is descheduled, and something else runs). */
static size_t jumps_split(sqlite3 *db, const struct proc_point *v, struct rss_jump *jumps,
			  size_t nj, size_t cap, int64_t peak)
{
	int64_t step_min = peak / 100, need = (int64_t)((double)peak * RSS_JUMP_MIN_SHARE);
	if (need < RSS_JUMP_MIN_BYTES)
		need = RSS_JUMP_MIN_BYTES;
	struct strbuf left = STRBUF_INIT, right = STRBUF_INIT;
	for (size_t k = 0; k < nj && nj < cap; k++) {
		size_t i = jumps[k].from, j = jumps[k].to, pa = i, pb = i;
		for (size_t a = i; a < j;) { /* the longest run of flat steps */
			size_t b = a;
			while (b < j && sat_sub_i64(v[b + 1].value, v[b].value) <= step_min)
				b++;
			if (b > a && v[b].t_ns - v[a].t_ns > v[pb].t_ns - v[pa].t_ns) {
				pa = a;
				pb = b;
			}
			a = b > a ? b : a + 1;
		}
		if (v[pb].t_ns - v[pa].t_ns <= RSS_JUMP_PAUSE_NS || pa == i || pb == j ||
		    sat_sub_i64(v[pa].value, v[i].value) < need ||
		    sat_sub_i64(v[j].value, v[pb].value) < need)
			continue;
		strbuf_reset(&left);
		strbuf_reset(&right);
		during_name(db, v[i].t_ns, v[pa].t_ns, &left);
		during_name(db, v[pb].t_ns, v[j].t_ns, &right);
		if (!strcmp(left.buf ? left.buf : "", right.buf ? right.buf : ""))
			continue;
		int64_t bucket_ns = 0;
		recording_meta_int(db, "alloc_site_bucket_ns", &bucket_ns);
		double rise_left = (double)sat_sub_i64(v[pa].value, v[i].value),
		       rise_right = (double)sat_sub_i64(v[j].value, v[pb].value);
		if (top_site_grew(db, sat_sub_i64(v[i].t_ns, bucket_ns), v[pa].t_ns) >=
		    rise_left + rise_right / 2)
			continue;
		memmove(&jumps[k + 2], &jumps[k + 1], (nj - k - 1) * sizeof(*jumps));
		jumps[k] = (struct rss_jump){ i, pa };
		jumps[k + 1] = (struct rss_jump){ pb, j };
		nj++;
	}
	strbuf_release(&left);
	strbuf_release(&right);
	return nj;
}

/* The resident bytes of the processes that started in (from_ns, to_ns], at
 * their last reading by to_ns: a forked child's RSS counts every page it
 * shares with its parent, so a jump made of new processes is not memory the
 * program allocated. 0 when none or unknown. */
static int64_t spawned_bytes(sqlite3 *db, int64_t from_ns, int64_t to_ns)
{
	sqlite3_stmt *st;
	int64_t sum = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT coalesce(sum((SELECT rss_bytes FROM proc_samples s"
			       " WHERE s.pid = p.pid AND s.t_ns <= ?2 ORDER BY s.t_ns DESC"
			       " LIMIT 1)), 0) FROM processes p"
			       " WHERE p.start_ns > ?1 AND p.start_ns <= ?2",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, from_ns);
	sqlite3_bind_int64(st, 2, to_ns);
	if (sqlite3_step(st) == SQLITE_ROW)
		sum = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return sum > 0 && sum < RSS_BYTES_MAX ? sum : 0;
}

static void jumps_report(struct analysis_ctx *ctx, json_t *mem, const struct proc_point *v,
			 size_t n, int64_t peak, int64_t interval_ns)
{
	struct rss_jump jumps[RSS_JUMPS_COUNTED];
	struct jump_case cases[RSS_JUMPS_COUNTED];
	size_t nc = 0;
	size_t nj = peak > 0 ? jumps_find(v, n, peak, jumps, RSS_JUMPS_COUNTED) : 0;
	nj = jumps_split(ctx->db, v, jumps, nj, RSS_JUMPS_COUNTED, peak);
	json_t *arr = json_array(), *unlisted = json_array();
	for (size_t k = 0; k < nj; k++) {
		const struct proc_point *a = &v[jumps[k].from], *b = &v[jumps[k].to];
		int64_t size = sat_sub_i64(b->value, a->value);
		int64_t spawned = spawned_bytes(ctx->db, a->t_ns, b->t_ns);
		int finding = (double)size >= RSS_JUMP_FINDING_SHARE * (double)peak &&
			      size >= RSS_JUMP_FINDING_MIN_BYTES && 2 * spawned < size;
		if (k >= RSS_JUMPS_MAX && !finding)
			continue;
		/* The growth happened between the reading before and the one after. */
		json_t *who = jump_attribution(ctx->db, a->t_ns, b->t_ns);
		json_t *o = json_pack("{s:f, s:f, s:f, s:I, s:I, s:I}", "start_s",
				      (double)a->t_ns / 1e9, "end_s", (double)b->t_ns / 1e9,
				      "duration_s", (double)sat_sub_i64(b->t_ns, a->t_ns) / 1e9, "size_bytes",
				      (json_int_t)size, "before_bytes", (json_int_t)a->value,
				      "after_bytes", (json_int_t)b->value);
		json_object_set_new(o, "during", who ? who : json_null());
		json_object_set_new(o, "new_processes_bytes", json_integer((json_int_t)spawned));
		/* A block is often allocated a moment before its pages are touched
		 * (a descheduled thread on a busy machine: longer), so before the
		 * reading that opens the jump: look back a reading interval, or a
		 * fifth of the jump's own length when that is longer. */
		int64_t back_ns = sat_sub_i64(b->t_ns, a->t_ns) / RSS_JUMP_LOOKBACK_DIV;
		json_t *allocating = jump_allocating(
			ctx->db, sat_sub_i64(a->t_ns, back_ns > interval_ns ? back_ns : interval_ns),
			b->t_ns);
		json_object_set_new(o, "allocating", allocating ? allocating : json_null());
		json_t *held = allocating ? jump_touched(ctx->db, allocating, a, b) : NULL;
		if (held)
			json_object_set_new(o, "touched", held);
		/* Listed: the first RSS_JUMPS_MAX; the rest only count in findings. */
		json_array_append_new(k < RSS_JUMPS_MAX ? arr : unlisted, o);
		if (!finding)
			continue;
		struct jump_case *c = &cases[nc++];
		*c = (struct jump_case){ a, b, size, who, allocating, held, STRBUF_INIT, STRBUF_INIT,
					 0, 0 };
		jump_case_locate(c);
	}
	for (size_t k = 0; k < nc; k++)
		if (!cases[k].done)
			jump_finding(ctx, &cases[k], nc - k, peak, interval_ns);
	for (size_t k = 0; k < nc; k++) {
		strbuf_release(&cases[k].loc);
		strbuf_release(&cases[k].ran);
	}
	json_object_set_new(mem, "rss_jumps", arr);
	if (nj > RSS_JUMPS_MAX)
		json_object_set_new(mem, "rss_jumps_total", json_integer((json_int_t)nj));
	json_decref(unlisted);
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
	struct proc_point *v;
	size_t n = timeline_load(ctx->db, &v);
	size_t peak = 0;
	for (size_t i = 1; i < n; i++)
		if (v[i].value > v[peak].value)
			peak = i;
	/* The kernel's high-water mark sees peaks between two readings. */
	int64_t hwm = -1;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].peak_rss_bytes > hwm)
			hwm = ps->v[i].peak_rss_bytes;
	json_t *mem = json_object();
	int64_t sampled = n ? v[peak].value : -1;
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

static const char *const memory_rss_provides[] = { "memory", NULL };

static const char *const memory_rss_findings[] = {
	"memory.rss_jump",
	NULL,
};

const struct analysis_ops analysis_memory_rss = {
	.name = "memory_rss",
	.findings = memory_rss_findings,
	.provides = memory_rss_provides,
	.run = memory_rss_run,
};
