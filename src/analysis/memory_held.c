/* memory_held: memory a Python program holds until it ends. A leak finding
 * ("memory.leak") for what the program's own code allocated and never let go
 * of while it worked, although the interpreter frees it at shutdown (so the
 * tracker's leak at exit misses it): a cache that is never evicted, a list
 * that only grows.
 *
 * The main work ends at the last Python sample of the leader process with a
 * frame of the program's own (frames.h; atexit handlers and the standard
 * library's shutdown are not the work). The sites' live bytes then come from
 * the allocation timeline (allocated minus freed per 100 ms bucket, up to
 * that moment), summed per location (heap_site_describe: one Python line is
 * one site, whatever native code under it allocated). The largest is a
 * finding when it holds at least HELD_MIN_BYTES and HELD_MIN_SHARE of the
 * heap peak at that moment, kept allocating over at least HELD_GROWTH_SHARE
 * of the work (a structure built in one phase and used to the end is a
 * working set, not a leak), and at least HELD_FREED_SHARE of it was freed
 * only after (at shutdown): else it is a true leak at exit, said by
 * memory_heap. Work shorter than a second is not judged. */
#include "analysis.h"
#include "findings.h"
#include "frames.h"
#include "memory_heap.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HELD_MIN_BYTES (16.0 * 1024 * 1024)
#define HELD_MIN_SHARE 0.25
#define HELD_FREED_SHARE 0.5
#define HELD_NODES_MAX 64 /* sites looked at, largest first */
#define HELD_GROWTH_SHARE 0.6 /* of the work, the span over which it kept allocating */
#define HELD_WORK_MIN_NS 1000000000LL

struct work_end {
	struct stack_set ss;
	size_t *path;
	int64_t first_ns, last_ns; /* -1: none */
};

static void on_sample(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct work_end *w = arg;
	(void)tid;
	(void)weight;
	if (t_ns <= w->last_ns)
		return;
	size_t n = stack_set_path(&w->ss, node, w->path, STACK_DEPTH_MAX);
	size_t k = frame_own_index(&w->ss, w->path, n);
	if (k < n) {
		const struct stack_frame_rec *f = &w->ss.frames[w->path[k]];
		if (f->kind && !strcmp(f->kind, "python") && f->file &&
		    !frame_is_python_stdlib(f->file)) {
			if (w->first_ns < 0)
				w->first_ns = t_ns;
			w->last_ns = t_ns;
		}
	}
}

/* The main work's first and last moments, ns since the start; -1 when
 * unknown. */
static int64_t main_work(sqlite3 *db, int64_t *first_ns)
{
	struct work_end w = { .ss = STACK_SET_INIT, .first_ns = -1, .last_ns = -1 };
	struct strbuf err = STRBUF_INIT;
	if (!stack_set_load_filtered(db, "python",
				     "pid IN (SELECT pid FROM processes WHERE is_leader = 1)", &w.ss,
				     &err) &&
	    w.ss.total_samples) {
		w.path = xmalloc(STACK_DEPTH_MAX * sizeof(*w.path));
		if (stack_set_each_sample(db, &w.ss, INT64_MIN, INT64_MAX, on_sample, &w, &err))
			w.last_ns = -1;
	}
	free(w.path);
	stack_set_release(&w.ss);
	strbuf_release(&err);
	*first_ns = w.first_ns;
	return w.last_ns;
}

struct held_site {
	char *location;
	json_t *site; /* the largest node's description */
	double held, freed_after, largest;
	int64_t first_ns, last_ns; /* its buckets that allocated, in the work */
};

static void held_release(struct held_site *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].location);
		json_decref(v[i].site);
	}
	free(v);
}

/* Adds a node's bytes held at the end and freed after it to its location's. */
static void held_add(sqlite3 *db, struct held_site **v, size_t *n, int64_t node, double held,
		     double freed_after, int64_t first_ns, int64_t last_ns)
{
	json_t *site = heap_site_describe(db, node);
	const char *loc = json_string_value(json_object_get(site, "location"));
	if (!site || !loc || !json_object_get(site, "python_site")) {
		json_decref(site);
		return;
	}
	size_t i;
	for (i = 0; i < *n && strcmp((*v)[i].location, loc); i++)
		;
	if (i == *n) {
		*v = xrealloc(*v, (*n + 1) * sizeof(**v));
		(*v)[i] = (struct held_site){ .location = xstrdup(loc), .first_ns = first_ns,
					      .last_ns = last_ns };
		(*n)++;
	}
	struct held_site *h = &(*v)[i];
	if (first_ns < h->first_ns)
		h->first_ns = first_ns;
	if (last_ns > h->last_ns)
		h->last_ns = last_ns;
	h->held += held;
	h->freed_after += freed_after;
	if (held > h->largest) {
		json_decref(h->site);
		h->site = json_incref(site);
		h->largest = held;
	}
	json_decref(site);
}

static void held_finding(struct analysis_ctx *ctx, const struct held_site *h, double end_s,
			 double live_total, double peak)
{
	const char *fn = json_string_value(json_object_get(h->site, "function"));
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
	strbuf_addf(&title, "Memory leak until exit: %s still holds %.0f MiB when the work ends",
		    fn ? fn : h->location, h->held / 1048576.0);
	strbuf_addf(&ev, "%.1f MiB allocated at %s were still live when the program's own code "
			 "last ran (%.2f s), %.0f%% of the %.1f MiB live then; %.1f MiB of it were "
			 "freed only after that, as the interpreter shut down; the heap peak was "
			 "%.1f MiB",
		    h->held / 1048576.0, h->location, end_s, 100.0 * h->held / live_total,
		    live_total / 1048576.0, h->freed_after / 1048576.0, peak / 1048576.0);
	strbuf_addf(&next, "Bound what %s keeps: evict from the cache or collection it fills (a "
			   "size limit, functools.lru_cache(maxsize=...), a dict pruned as it "
			   "grows), keep a smaller summary instead of each object, or drop the "
			   "reference once it is used",
		    fn ? fn : "that code");
	struct finding f = {
		.id = "memory.leak",
		.title = title.buf,
		.dimension = "memory",
		.location = h->location,
		.evidence = ev.buf,
		.diagnosis = "Leak until exit: memory kept for the whole run and released only "
			     "when the interpreter shuts down (a cache never evicted, a collection "
			     "that only grows)",
		.next_step = next.buf,
		.validation = "memory.heap.peak_bytes falls; the site's bytes live at the end of the "
			      "work fall",
		.impact_s = -1,
		.impact_bytes = h->held,
		.impact_pct = peak > 0 ? fmin(100.0, 100.0 * h->held / peak) : 0,
		.blames_code = FINDING_BLAMES_CODE,
	};
	findings_add(ctx->findings, &f);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
}

static int memory_held_run(struct analysis_ctx *ctx)
{
	sqlite3 *db = ctx->db;
	if (!recording_has_table(db, "alloc_site_timeline") || !recording_has_table(db, "alloc_sites"))
		return 0;
	int64_t start_ns, end_ns = main_work(db, &start_ns);
	if (end_ns < 0 || end_ns - start_ns < HELD_WORK_MIN_NS)
		return 0;
	/* A bucket counts for the work when it started before the work's end. */
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT node, TOTAL(CASE WHEN t_ns <= ?1 THEN allocated_bytes -"
			       " freed_bytes END) AS held, TOTAL(CASE WHEN t_ns > ?1 THEN"
			       " freed_bytes END), MIN(CASE WHEN t_ns <= ?1 AND allocated_bytes > 0"
			       " THEN t_ns END), MAX(CASE WHEN t_ns <= ?1 AND allocated_bytes > 0"
			       " THEN t_ns END) FROM alloc_site_timeline GROUP BY node"
			       " ORDER BY held DESC LIMIT ?2",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, end_ns);
	sqlite3_bind_int(st, 2, HELD_NODES_MAX);
	struct held_site *v = NULL;
	size_t n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		double held = sqlite3_column_double(st, 1), freed = sqlite3_column_double(st, 2);
		if (held > 0 && isfinite(held) && isfinite(freed))
			held_add(db, &v, &n, sqlite3_column_int64(st, 0), held, freed,
				 sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
	}
	sqlite3_finalize(st);
	double live_total = 0, peak = 0;
	/* The last reading with something live: a 100 ms that no allocation
	 * fell in reads 0 in recordings of an older sonde. */
	if (sqlite3_prepare_v2(db, "SELECT (SELECT live_bytes FROM alloc_timeline WHERE t_ns <= ?"
				   " AND live_bytes > 0 ORDER BY t_ns DESC LIMIT 1), (SELECT"
				   " MAX(live_bytes) FROM"
				   " alloc_timeline)",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, end_ns);
		if (sqlite3_step(st) == SQLITE_ROW) {
			live_total = sqlite3_column_double(st, 0);
			peak = sqlite3_column_double(st, 1);
		}
		sqlite3_finalize(st);
	}
	const struct held_site *best = NULL;
	for (size_t i = 0; i < n; i++)
		if (!best || v[i].held > best->held)
			best = &v[i];
	/* It grew for most of the work: built once and used to the end is a
	 * working set, not a leak. */
	if (best && live_total > 0 && best->held >= HELD_MIN_BYTES &&
	    (double)(best->last_ns - best->first_ns) >=
		HELD_GROWTH_SHARE * (double)(end_ns - start_ns) &&
	    best->held >= HELD_MIN_SHARE * (live_total > best->held ? live_total : best->held) &&
	    best->freed_after >= HELD_FREED_SHARE * best->held)
		held_finding(ctx, best, (double)end_ns / 1e9,
			     live_total > best->held ? live_total : best->held, peak);
	held_release(v, n);
	return 0;
}

static const char *const memory_held_findings[] = {
	"memory.leak",
	NULL,
};

const struct analysis_ops analysis_memory_held = {
	.name = "memory_held",
	.findings = memory_held_findings,
	.run = memory_held_run,
};
