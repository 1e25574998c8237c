/* asyncio: what the asyncio agent recorded (src/probes/asyncio.c), read as a
 * senior engineer reads an async service. Report key `asyncio`; findings:
 *
 * - asyncio.loop_blocked: the loop's heartbeat ran late (asyncio_lag.c).
 * - asyncio.long_tail: one task of a batch (the tasks one call site created
 *   within a second) ran far longer than its siblings, and the batch waited
 *   for it after the others had finished.
 * - asyncio.retry_storm: retry waits that come back in waves
 *   (asyncio_retries.c).
 * - asyncio.fanout_memory: RSS grew by much while one call site's batch of
 *   tasks ran: each task held a copy of something large.
 * - asyncio.unbounded_fanout: one call site kept hundreds of tasks working
 *   at once (in flight, not waiting on a semaphore or lock), and fewer than
 *   a quarter of them ever waited on a semaphore (a site whose tasks do is
 *   bounded by it).
 *
 * This file loads the tables, builds the sites and their report entries and
 * runs the whole; asyncio_lag.c reads the loop's lag (loop_lag),
 * asyncio_retries.c the retry waits (retries); asyncio_model.h holds what
 * the three share.
 *
 * Times in the aio_* tables are ns since the run's start, like the samples'. */
#include "asyncio_model.h"
#include "analysis.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AIO_FANOUT_MIN 200	    /* tasks of one site working at once */
#define AIO_BATCH_NS 1000000000LL  /* siblings: created within this of each other */
#define AIO_TAIL_MIN_NS 1000000000LL /* the late finisher held its batch this long */
#define AIO_TAIL_SIBLINGS_MIN 9
#define AIO_TAIL_RATIO 2.0 /* its length against its siblings' median */
#define AIO_TAIL_HELD_RATIO 1.0 /* the time it held the batch alone, against that median */
#define AIO_MEM_MIN_TASKS 100 /* a fan-out, for the memory it holds */
#define AIO_MEM_MIN_BYTES (32.0 * 1024 * 1024)
#define AIO_MEM_MIN_SHARE 0.25 /* of the run's peak RSS */
#define AIO_MEM_SLACK_S 0.15	/* the RSS readings' period, and a little */
#define AIO_SITES_LISTED 10

struct key2 {
	int64_t a, b;
};

static const struct aio_loc *loc_get(const struct aio *a, int64_t pid, int64_t id)
{
	struct key2 k = { pid, id };
	int64_t *i = hashmap_get(&a->loc_index, &k, sizeof(k));
	return i ? &a->locs[*i] : NULL;
}

/* "file:function:line" of a location; "?" when unknown. */
void aio_loc_text(const struct aio *a, int64_t pid, int64_t id, struct strbuf *out)
{
	const struct aio_loc *l = loc_get(a, pid, id);
	if (!l)
		strbuf_addstr(out, "?");
	else if (l->line > 0)
		strbuf_addf(out, "%s:%s:%d", l->file, l->function, l->line);
	else
		strbuf_addf(out, "%s:%s", l->file, l->function);
}

const char *aio_loc_function(const struct aio *a, int64_t pid, int64_t id)
{
	const struct aio_loc *l = loc_get(a, pid, id);
	return l ? l->function : "?";
}

static char *col_dup(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return xstrdup(t ? (const char *)t : "?");
}

static int locs_load(struct aio *a)
{
	sqlite3_stmt *st;
	size_t alloc = 0;
	if (sqlite3_prepare_v2(a->db, "SELECT pid, id, function, file, line FROM aio_locations", -1,
			       &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (a->nlocs == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			a->locs = xrealloc(a->locs, alloc * sizeof(*a->locs));
		}
		struct key2 k = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) };
		a->locs[a->nlocs] = (struct aio_loc){ col_dup(st, 2), col_dup(st, 3),
						      sqlite3_column_int(st, 4) };
		hashmap_put(&a->loc_index, &k, sizeof(k), (int64_t)a->nlocs++);
	}
	sqlite3_finalize(st);
	return 0;
}

/* Tasks by (pid, site, creation time); a task never seen to end ends with
 * the run. */
static int tasks_load(struct aio *a)
{
	sqlite3_stmt *st;
	size_t alloc = 0;
	if (sqlite3_prepare_v2(a->db, "SELECT pid, id, site, coro, created_ns, done_ns, state"
				      " FROM aio_tasks ORDER BY pid, site, created_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (a->ntasks == alloc) {
			alloc = alloc ? 2 * alloc : 1024;
			a->tasks = xrealloc(a->tasks, alloc * sizeof(*a->tasks));
		}
		struct aio_task *t = &a->tasks[a->ntasks];
		const char *state = (const char *)sqlite3_column_text(st, 6);
		*t = (struct aio_task){ .pid = sqlite3_column_int64(st, 0),
					.id = sqlite3_column_int64(st, 1),
					.site = sqlite3_column_int64(st, 2),
					.coro = sqlite3_column_int64(st, 3),
					.created_ns = sqlite3_column_int64(st, 4) };
		t->done = sqlite3_column_type(st, 5) != SQLITE_NULL;
		t->done_ns = t->done ? sqlite3_column_int64(st, 5) : a->wall_ns;
		if (t->done_ns < t->created_ns)
			t->done_ns = t->created_ns;
		t->cancelled = state && !strcmp(state, "cancelled");
		t->failed = state && strcmp(state, "ok") && !t->cancelled;
		struct key2 k = { t->pid, t->id };
		hashmap_put(&a->task_index, &k, sizeof(k), (int64_t)a->ntasks++);
	}
	sqlite3_finalize(st);
	return 0;
}

static int dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

struct delta {
	int64_t t_ns;
	int d;
};

static int delta_cmp(const void *x, const void *y)
{
	const struct delta *a = x, *b = y;
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	return a->d - b->d; /* ends before starts at one instant */
}

/* Sweeps +1/-1 steps: the peak, and the time spent above `above`. */
static int64_t sweep(struct delta *v, size_t n, int64_t above, int64_t *above_ns)
{
	qsort(v, n, sizeof(*v), delta_cmp);
	int64_t cur = 0, peak = 0;
	*above_ns = 0;
	for (size_t i = 0; i < n; i++) {
		if (cur >= above && i > 0)
			*above_ns += v[i].t_ns - v[i - 1].t_ns;
		cur += v[i].d;
		if (cur > peak)
			peak = cur;
	}
	return peak;
}

/* Per site: counts, lengths, and how many of its tasks were in flight and
 * working (in flight, not waiting on a semaphore or lock) at once. */
static void sites_build(struct aio *a)
{
	size_t alloc = 0;
	for (size_t i = 0; i < a->ntasks;) {
		size_t k = i;
		while (k < a->ntasks && a->tasks[k].pid == a->tasks[i].pid &&
		       a->tasks[k].site == a->tasks[i].site)
			k++;
		if (a->nsites == alloc) {
			alloc = alloc ? 2 * alloc : 16;
			a->sites = xrealloc(a->sites, alloc * sizeof(*a->sites));
		}
		a->sites[a->nsites++] = (struct aio_site){ .pid = a->tasks[i].pid,
							   .site = a->tasks[i].site,
							   .coro = a->tasks[i].coro,
							   .first = i, .n = k - i };
		i = k;
	}
	/* The waits, each charged to its task's site. */
	struct delta **waits = xcalloc(a->nsites ? a->nsites : 1, sizeof(*waits));
	size_t *nwaits = xcalloc(a->nsites ? a->nsites : 1, sizeof(*nwaits));
	size_t *await_ = xcalloc(a->nsites ? a->nsites : 1, sizeof(*await_));
	int64_t *site_of = xmalloc((a->ntasks ? a->ntasks : 1) * sizeof(*site_of));
	for (size_t s = 0; s < a->nsites; s++)
		for (size_t i = 0; i < a->sites[s].n; i++)
			site_of[a->sites[s].first + i] = (int64_t)s;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(a->db, "SELECT pid, task, t_ns, wait_ns, kind FROM aio_waits"
				      " ORDER BY pid, task",
			       -1, &st, NULL) == SQLITE_OK) {
		struct key2 last = { -1, -1 };
		while (sqlite3_step(st) == SQLITE_ROW) {
			struct key2 k = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) };
			int64_t *ti = hashmap_get(&a->task_index, &k, sizeof(k));
			if (!ti)
				continue;
			size_t s = (size_t)site_of[*ti];
			if (nwaits[s] + 2 > await_[s]) {
				await_[s] = await_[s] ? 2 * await_[s] : 64;
				waits[s] = xrealloc(waits[s], await_[s] * sizeof(**waits));
			}
			int64_t t = sqlite3_column_int64(st, 2), w = sqlite3_column_int64(st, 3);
			waits[s][nwaits[s]++] = (struct delta){ t, -1 };
			waits[s][nwaits[s]++] = (struct delta){ t + (w > 0 ? w : 0), +1 };
			a->sites[s].waits++;
			const char *kind = (const char *)sqlite3_column_text(st, 4);
			/* semaphores and connection pools: all but locks */
			if (kind && strcmp(kind, "lock") && (k.a != last.a || k.b != last.b)) {
				a->sites[s].sem_tasks++;
				last = k;
			}
		}
		sqlite3_finalize(st);
	}
	for (size_t s = 0; s < a->nsites; s++) {
		struct aio_site *site = &a->sites[s];
		const struct aio_task *t = &a->tasks[site->first];
		size_t n = site->n, nd = 2 * n + nwaits[s];
		struct delta *d = xmalloc(nd * sizeof(*d));
		double *len = xmalloc(n * sizeof(*len));
		for (size_t i = 0; i < n; i++) {
			d[2 * i] = (struct delta){ t[i].created_ns, +1 };
			d[2 * i + 1] = (struct delta){ t[i].done_ns, -1 };
			len[i] = (double)(t[i].done_ns - t[i].created_ns) / 1e9;
			site->failed += t[i].failed;
			site->cancelled += t[i].cancelled;
		}
		int64_t unused;
		site->peak_in_flight = sweep(d, 2 * n, INT64_MAX, &unused);
		if (nwaits[s])
			memcpy(d + 2 * n, waits[s], nwaits[s] * sizeof(*d));
		site->peak_active = sweep(d, nd, AIO_FANOUT_MIN, &site->active_ns);
		qsort(len, n, sizeof(*len), dbl_cmp);
		site->median_s = len[n / 2];
		site->p95_s = len[(size_t)(0.95 * (double)(n - 1))];
		site->max_s = len[n - 1];
		free(len);
		free(d);
		free(waits[s]);
	}
	free(waits);
	free(nwaits);
	free(await_);
	free(site_of);
}

static json_t *sites_json(const struct aio *a)
{
	size_t *order = xmalloc((a->nsites ? a->nsites : 1) * sizeof(*order));
	for (size_t i = 0; i < a->nsites; i++)
		order[i] = i;
	for (size_t i = 1; i < a->nsites; i++) /* by tasks, most first */
		for (size_t k = i; k > 0 && a->sites[order[k]].n > a->sites[order[k - 1]].n; k--) {
			size_t t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	json_t *arr = json_array();
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < a->nsites && i < AIO_SITES_LISTED; i++) {
		const struct aio_site *s = &a->sites[order[i]];
		json_t *o = json_object();
		strbuf_reset(&sb);
		aio_loc_text(a, s->pid, s->site, &sb);
		json_object_set_new(o, "location", report_string(sb.buf, sb.len));
		strbuf_reset(&sb);
		aio_loc_text(a, s->pid, s->coro, &sb);
		json_object_set_new(o, "coroutine", report_string(sb.buf, sb.len));
		json_object_set_new(o, "pid", json_integer(s->pid));
		json_object_set_new(o, "tasks", json_integer((json_int_t)s->n));
		json_object_set_new(o, "peak_in_flight", json_integer(s->peak_in_flight));
		json_object_set_new(o, "peak_working", json_integer(s->peak_active));
		json_object_set_new(o, "waits", json_integer(s->waits));
		json_object_set_new(o, "semaphore_tasks", json_integer(s->sem_tasks));
		json_object_set_new(o, "median_s", json_real(s->median_s));
		json_object_set_new(o, "p95_s", json_real(s->p95_s));
		json_object_set_new(o, "max_s", json_real(s->max_s));
		json_object_set_new(o, "failed", json_integer(s->failed));
		json_object_set_new(o, "cancelled", json_integer(s->cancelled));
		json_array_append_new(arr, o);
	}
	strbuf_release(&sb);
	free(order);
	return arr;
}

void aio_finding_emit(struct analysis_ctx *ctx, const char *id, const char *title,
		      const char *location, const char *evidence, const char *diagnosis,
		      const char *next, const char *validation, double impact_s, double wall_s)
{
	struct finding f = {
		.id = id,
		.title = title,
		.dimension = "concurrency",
		.location = location,
		.evidence = evidence,
		.diagnosis = diagnosis,
		.next_step = next,
		.validation = validation,
		.blames_code = FINDING_BLAMES_CODE,
	};
	findings_add_time(ctx->findings, &f, impact_s, wall_s);
}

/* ---- unbounded fan-out ---- */

static void fanout_findings(struct analysis_ctx *ctx, const struct aio *a, double wall_s)
{
	struct strbuf loc = STRBUF_INIT, title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
	for (size_t i = 0; i < a->nsites; i++) {
		const struct aio_site *s = &a->sites[i];
		/* Tasks that wait on a semaphore are bounded by it: at their
		 * creation they all count as working until their first step
		 * reaches the semaphore. */
		if (s->peak_active < AIO_FANOUT_MIN || 4 * s->sem_tasks >= (int64_t)s->n)
			continue;
		const struct aio_task *t = &a->tasks[s->first];
		strbuf_reset(&loc);
		strbuf_reset(&title);
		strbuf_reset(&ev);
		strbuf_reset(&next);
		aio_loc_text(a, s->pid, s->site, &loc);
		strbuf_addf(&title, "%s runs %lld %s tasks at once (unbounded concurrency)",
			    aio_loc_function(a, s->pid, s->site), (long long)s->peak_active,
			    aio_loc_function(a, s->pid, s->coro));
		strbuf_addf(&ev, "%zu tasks of ", s->n);
		aio_loc_text(a, s->pid, s->coro, &ev);
		strbuf_addf(&ev, " created here between %.3f s and %.3f s; up to %lld in flight and "
				 "%lld working at once (not waiting on a semaphore, lock or pool; %lld "
				 "such waits in all); more than %d worked at once for %.3f s; each "
				 "ran %.3f s at the median, %.3f s at most; %lld failed",
			    (double)t[0].created_ns / 1e9, (double)t[s->n - 1].created_ns / 1e9,
			    (long long)s->peak_in_flight, (long long)s->peak_active,
			    (long long)s->waits, AIO_FANOUT_MIN, (double)s->active_ns / 1e9,
			    s->median_s, s->max_s, (long long)s->failed);
		strbuf_addf(&next, "Bound the fan-out in %s: hold an asyncio.Semaphore(N) around "
				   "each call (`async with sem:`), or start N worker tasks that take "
				   "items from an asyncio.Queue; size N to what the service and the "
				   "connection pool take (tens, not %lld)",
			    aio_loc_function(a, s->pid, s->site), (long long)s->peak_active);
		/* At stake: the time it ran unbounded (a risk to what it calls and to
		 * memory more than a cost of its own). */
		aio_finding_emit(ctx, "asyncio.unbounded_fanout", title.buf, loc.buf, ev.buf,
				 "Unbounded concurrency: every item of a large batch is started at once "
				 "(gather or create_task over the whole list), so the service, the "
				 "connection pool and memory take the whole batch together",
				 next.buf, "asyncio.sites[].peak_working falls to the bound",
				 (double)s->active_ns / 1e9, wall_s);
	}
	strbuf_release(&loc);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
}

/* ---- memory that grows with a fan-out ---- */

/* Of the report's RSS timeline: the last reading at or before from_s (0 when
 * none) into *before, and the peak over [from_s, to_s] into *peak. */
static void rss_around(json_t *tl, double from_s, double to_s, double *before, double *peak)
{
	size_t i;
	json_t *p;
	*before = *peak = 0;
	json_array_foreach(tl, i, p) {
		double t = json_number_value(json_object_get(p, "t_s"));
		double rss = json_number_value(json_object_get(p, "rss_bytes"));
		if (t <= from_s && rss > 0)
			*before = rss;
		if (t >= from_s && t <= to_s && rss > *peak)
			*peak = rss;
	}
}

/* Where the memory of an RSS jump inside [from_s, to_s] was allocated (the
 * tracker's site) or, without the tracker, what ran then: "file:function:line"
 * into loc, so the finding shares its cause with that jump's. 0, or -1 when
 * no jump overlaps. */
static int jump_place(json_t *mem, double from_s, double to_s, struct strbuf *loc)
{
	size_t i;
	json_t *j, *best = NULL;
	json_array_foreach(json_object_get(mem, "rss_jumps"), i, j) {
		double st = json_number_value(json_object_get(j, "start_s"));
		double en = json_number_value(json_object_get(j, "end_s"));
		if (st <= to_s && en >= from_s &&
		    (!best || json_number_value(json_object_get(j, "size_bytes")) >
				      json_number_value(json_object_get(best, "size_bytes"))))
			best = j;
	}
	json_t *where = json_array_get(json_object_get(best, "allocating"), 0);
	if (!where)
		where = json_object_get(best, "during");
	const char *fn = json_string_value(json_object_get(where, "function"));
	const char *file = json_string_value(json_object_get(where, "file"));
	/* A module's top-level code runs no task: a jump that began before the
	 * fan-out (the imports of a short program, read in the same 100 ms)
	 * names it, and the fan-out's own place says more. */
	if (!fn || !file || !strcmp(fn, "<module>"))
		return -1;
	strbuf_addf(loc, "%s:%s", file, fn);
	if (json_integer_value(json_object_get(where, "line")) > 0)
		strbuf_addf(loc, ":%lld", (long long)json_integer_value(json_object_get(where, "line")));
	return 0;
}

static void fanout_memory_findings(struct analysis_ctx *ctx, const struct aio *a)
{
	json_t *mem = json_object_get(ctx->report, "memory");
	json_t *tl = json_object_get(mem, "rss_timeline");
	double run_peak = json_number_value(json_object_get(mem, "peak_rss_bytes"));
	if (!json_array_size(tl) || run_peak <= 0)
		return;
	struct strbuf loc = STRBUF_INIT, title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
	for (size_t i = 0; i < a->nsites; i++) {
		const struct aio_site *s = &a->sites[i];
		const struct aio_task *t = &a->tasks[s->first];
		if (s->n < AIO_MEM_MIN_TASKS || s->peak_in_flight < AIO_MEM_MIN_TASKS)
			continue;
		/* The bulk of the fan-out: from its first task to when 90% were done. */
		int64_t *done = xmalloc(s->n * sizeof(*done));
		for (size_t k = 0; k < s->n; k++)
			done[k] = t[k].done_ns;
		qsort(done, s->n, sizeof(*done), aio_i64_cmp);
		double from_s = (double)t[0].created_ns / 1e9;
		double to_s = (double)done[(size_t)(0.9 * (double)(s->n - 1))] / 1e9 + AIO_MEM_SLACK_S;
		free(done);
		double before, peak;
		rss_around(tl, from_s, to_s, &before, &peak);
		double grew = peak - before;
		if (before <= 0 || grew < AIO_MEM_MIN_BYTES || grew < AIO_MEM_MIN_SHARE * run_peak)
			continue;
		double each = grew / (double)s->peak_in_flight;
		strbuf_reset(&loc);
		strbuf_reset(&title);
		strbuf_reset(&ev);
		strbuf_reset(&next);
		/* Located where the memory was allocated, when an RSS jump names
		 * it (one cause with that jump), else at the fan-out that put them
		 * all in flight at once: one cause with its unbounded concurrency,
		 * and not the tasks' coroutine, whose own findings (a long tail)
		 * are other causes. */
		if (jump_place(mem, from_s, to_s, &loc)) {
			strbuf_reset(&loc);
			aio_loc_text(a, s->pid, s->site, &loc);
		}
		strbuf_addf(&title, "Each %s task holds about %.0f KiB: %lld at once take %.0f MiB "
				    "(fan-out at %s)",
			    aio_loc_function(a, s->pid, s->coro), each / 1024, (long long)s->peak_in_flight,
			    grew / (1024.0 * 1024), aio_loc_function(a, s->pid, s->site));
		strbuf_addf(&ev, "RSS went from %.1f MiB to %.1f MiB between %.3f s and %.3f s, while "
				 "the %zu tasks created at ",
			    before / (1024.0 * 1024), peak / (1024.0 * 1024), from_s, to_s, s->n);
		aio_loc_text(a, s->pid, s->site, &ev);
		strbuf_addf(&ev, " ran (up to %lld in flight at once); the run's peak RSS is %.1f MiB",
			    (long long)s->peak_in_flight, run_peak / (1024.0 * 1024));
		strbuf_addf(&next, "Keep the per-task state of %s small: share large objects "
				   "read-only instead of copying them into each task, allocate buffers "
				   "per connection rather than per request, consume results as they "
				   "complete (`asyncio.as_completed`) instead of holding all of them, and "
				   "bound the fan-out in %s so that only N tasks hold memory at once",
			    aio_loc_function(a, s->pid, s->coro), aio_loc_function(a, s->pid, s->site));
		struct finding f = {
			.id = "asyncio.fanout_memory",
			.title = title.buf,
			.dimension = "memory",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Memory grows with the fan-out: every task in flight holds its "
				     "own copy of something large (a context, a buffer, a result), so "
				     "the peak is the fan-out's width times that size",
			.next_step = next.buf,
			.validation = "memory.peak_rss_bytes falls by about this growth",
			.impact_s = -1,
			.impact_bytes = grew,
			.impact_pct = 100.0 * grew / run_peak,
			.blames_code = FINDING_BLAMES_CODE,
		};
		findings_add(ctx->findings, &f);
	}
	strbuf_release(&loc);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
}

/* ---- long tail ---- */

static void tail_findings(struct analysis_ctx *ctx, const struct aio *a, double wall_s)
{
	struct strbuf loc = STRBUF_INIT, title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT,
		      phase = STRBUF_INIT;
	for (size_t i = 0; i < a->nsites; i++) {
		const struct aio_site *s = &a->sites[i];
		const struct aio_task *t = &a->tasks[s->first];
		if (s->n < AIO_TAIL_SIBLINGS_MIN + 1)
			continue;
		/* The longest task that ended (one still running at the run's end
		 * held nothing the run saw end). */
		size_t slow = SIZE_MAX;
		for (size_t k = 0; k < s->n; k++)
			if (t[k].done && (slow == SIZE_MAX || t[k].done_ns - t[k].created_ns >
								      t[slow].done_ns - t[slow].created_ns))
				slow = k;
		if (slow == SIZE_MAX)
			continue;
		int64_t others_done = INT64_MIN, siblings = 0;
		double *len = xmalloc(s->n * sizeof(*len));
		for (size_t k = 0; k < s->n; k++) {
			if (k == slow || !t[k].done || t[k].created_ns < t[slow].created_ns - AIO_BATCH_NS ||
			    t[k].created_ns > t[slow].created_ns + AIO_BATCH_NS)
				continue;
			len[siblings++] = (double)(t[k].done_ns - t[k].created_ns);
			if (t[k].done_ns > others_done)
				others_done = t[k].done_ns;
		}
		double slow_ns = (double)(t[slow].done_ns - t[slow].created_ns);
		double median_ns = 0;
		if (siblings) {
			qsort(len, (size_t)siblings, sizeof(*len), dbl_cmp);
			median_ns = len[siblings / 2];
		}
		free(len);
		int64_t held_ns = t[slow].done_ns - others_done;
		if (siblings < AIO_TAIL_SIBLINGS_MIN || held_ns < AIO_TAIL_MIN_NS ||
		    slow_ns < AIO_TAIL_RATIO * median_ns ||
		    (double)held_ns < AIO_TAIL_HELD_RATIO * median_ns)
			continue;
		strbuf_reset(&loc);
		strbuf_reset(&title);
		strbuf_reset(&ev);
		strbuf_reset(&next);
		strbuf_reset(&phase);
		aio_loc_text(a, s->pid, s->coro, &loc);
		/* The phase it held: the one running while it ran alone. */
		report_phase_at(ctx->report, (double)(others_done + t[slow].done_ns) / 2e9, &phase);
		strbuf_addf(&title, "One %s call holds %s%s for %.1f s after its %lld siblings "
				    "finished (long tail)",
			    aio_loc_function(a, s->pid, s->coro), phase.len ? "the phase " : "its batch",
			    phase.buf, (double)held_ns / 1e9, (long long)siblings);
		strbuf_addf(&ev, "task %lld, created at %.3f s by ", (long long)t[slow].id,
			    (double)t[slow].created_ns / 1e9);
		aio_loc_text(a, s->pid, s->site, &ev);
		strbuf_addf(&ev, ", ran %.3f s; the %lld tasks created there within %.0f s of it "
				 "ran %.3f s at the median and were all done %.3f s before it",
			    slow_ns / 1e9, (long long)siblings, (double)AIO_BATCH_NS / 1e9,
			    median_ns / 1e9, (double)held_ns / 1e9);
		strbuf_addf(&next, "Give each %s call a deadline where %s awaits them "
				   "(`asyncio.wait_for(call, timeout)`, a fallback or a retry on "
				   "timeout), or handle results as they come (`asyncio.as_completed`) "
				   "so one slow call does not hold the rest",
			    aio_loc_function(a, s->pid, s->coro), aio_loc_function(a, s->pid, s->site));
		aio_finding_emit(ctx, "asyncio.long_tail", title.buf, loc.buf, ev.buf,
				 "Long-tail call: the batch (a gather, a phase) takes as long as its "
				 "slowest call, which ran far longer than the others",
				 next.buf, "asyncio.sites[].max_s falls towards p95_s, and the phase's duration",
				 (double)held_ns / 1e9, wall_s);
	}
	strbuf_release(&loc);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
	strbuf_release(&phase);
}

static void aio_release(struct aio *a)
{
	for (size_t i = 0; i < a->nlocs; i++) {
		free(a->locs[i].function);
		free(a->locs[i].file);
	}
	free(a->locs);
	hashmap_release(&a->loc_index);
	free(a->tasks);
	hashmap_release(&a->task_index);
	free(a->sites);
}

static int asyncio_run(struct analysis_ctx *ctx)
{
	if (!recording_has_table(ctx->db, "aio_tasks"))
		return 0;
	struct aio a = { .db = ctx->db, .loc_index = HASHMAP_INIT, .task_index = HASHMAP_INIT };
	double wall_s = report_wall_s(ctx->db);
	a.wall_ns = wall_s > 0 ? (int64_t)(wall_s * 1e9) : INT64_MAX / 4;
	int ret = 0;
	if (locs_load(&a) || tasks_load(&a)) {
		report_not_measured(ctx->report, "asyncio", "the recording's aio tables cannot be read");
		ret = -1;
		goto out;
	}
	sqlite3_stmt *st;
	int64_t procs = 0;
	if (sqlite3_prepare_v2(ctx->db, "SELECT COUNT(*) FROM aio_processes", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			procs = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (!procs) /* no Python of the run used asyncio: nothing to say */
		goto out;
	sites_build(&a);
	json_t *o = json_object();
	json_object_set_new(o, "processes", json_integer(procs));
	json_object_set_new(o, "tasks", json_integer((json_int_t)a.ntasks));
	json_object_set_new(o, "sites", sites_json(&a));
	json_object_set_new(o, "loop_lag", aio_lag_analyse(ctx, &a, wall_s));
	json_object_set_new(o, "retries", aio_retries_analyse(ctx, &a, wall_s));
	json_object_set_new(ctx->report, "asyncio", o);
	fanout_findings(ctx, &a, wall_s);
	fanout_memory_findings(ctx, &a);
	tail_findings(ctx, &a, wall_s);
out:
	aio_release(&a);
	return ret;
}

static const char *const asyncio_needs[] = { "memory", "phases", NULL };
static const char *const asyncio_provides[] = { "asyncio", NULL };

static const char *const asyncio_findings[] = {
	"asyncio.unbounded_fanout",
	"asyncio.fanout_memory",
	"asyncio.long_tail",
	"asyncio.loop_blocked",
	"asyncio.retry_storm",
	NULL,
};

const struct analysis_ops analysis_asyncio = {
	.name = "asyncio",
	.findings = asyncio_findings,
	.needs = asyncio_needs,
	.provides = asyncio_provides,
	.run = asyncio_run,
};
