/* asyncio_pools: tasks queueing for a pool far smaller than the fan-out
 * (connection-pool exhaustion), from the asyncio agent's pool records.
 *
 * The agent names each asyncio.Semaphore, aiohttp connector and httpx pool
 * that ever made a task wait (its value or limit when it was made: the
 * pool's slots, and where it was made; table aio_pools) and every acquire or
 * request that waited (aio_waits, with the pool, its kind and the slots in
 * use). Per pool: the tasks that waited, how long in all, at the 95th
 * percentile and at most at once, and the share of those tasks' lives spent
 * waiting. The finding is located at the call site that made the waiting
 * tasks (the fan-out); its evidence names where the pool is sized. Report
 * key `asyncio.pools`
 * (pools that made at least one task wait; a sort and one pass over its
 * waits each); finding asyncio.pool_exhausted
 * when at least POOL_QUEUE_RATIO times the slots (and POOL_QUEUE_MIN tasks)
 * waited at once, waiting was at least POOL_WAIT_SHARE of their lives, and
 * tasks waited for at least POOL_SPAN_MIN_NS of the run and POOL_SPAN_SHARE
 * of its wall time. A pool the program sized to its fan-out, or a fan-out
 * bounded to the pool (workers over a queue), has no such queue; a semaphore
 * made in the function that made the waiting tasks is a limit the fan-out
 * put on itself (own_limit), never this finding.
 *
 * Runs after the asyncio analysis (it adds to its report object). */
#include "analysis.h"
#include "findings.h"
#include "../record/reader.h"
#include "../util/satmath.h"
#include "../util/stats.h"
#include "../util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POOL_QUEUE_RATIO 8	      /* tasks waiting at once, against the slots */
#define POOL_QUEUE_MIN 16	      /* ... and at least this many */
#define POOL_WAIT_SHARE 0.5	      /* of the waiting tasks' lives */
#define POOL_SPAN_MIN_NS 500000000LL /* tasks waited this long in all (union) */
#define POOL_SPAN_SHARE 0.05	      /* ... and this share of the wall time */
#define POOLS_LISTED 10

struct pool_wait {
	int64_t t_ns, end_ns, task;
};

struct pool {
	int64_t pid, id, slots, site, caller;
	int64_t waits, tasks, wait_ns, span_ns, peak, lives_ns, first_ns, p95_ns;
	int64_t in_flight_max; /* -1: not recorded */
	int64_t acquire_site, fanout_site, fanout_tasks;
	char kind[16]; /* of most of its waits: semaphore, aiohttp, httpx */
};

/* "file:function:line" of an agent location, "?" when unknown. */
static void pool_loc(sqlite3 *db, int64_t pid, int64_t id, struct strbuf *out, int function_only)
{
	sqlite3_stmt *st;
	size_t before = out->len;
	if (sqlite3_prepare_v2(db, "SELECT function, file, line FROM aio_locations"
				   " WHERE pid = ? AND id = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, id);
		if (sqlite3_step(st) == SQLITE_ROW) {
			const char *fn = (const char *)sqlite3_column_text(st, 0);
			const char *file = (const char *)sqlite3_column_text(st, 1);
			int line = sqlite3_column_int(st, 2);
			if (function_only)
				strbuf_addstr(out, fn ? fn : "?");
			else if (line > 0)
				strbuf_addf(out, "%s:%s:%d", file ? file : "?", fn ? fn : "?", line);
			else
				strbuf_addf(out, "%s:%s", file ? file : "?", fn ? fn : "?");
		}
		sqlite3_finalize(st);
	}
	if (out->len == before)
		strbuf_addch(out, '?');
}

static int end_cmp(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

static int wait_cmp(const void *x, const void *y)
{
	const struct pool_wait *a = x, *b = y;
	return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

static int task_cmp(const void *x, const void *y)
{
	const struct pool_wait *a = x, *b = y;
	return a->task < b->task ? -1 : a->task > b->task;
}

/* The 95th percentile of the tasks' time in the queue, each task's waits
 * summed (an httpx request that queued again, a task that acquired twice).
 * Sorts w by task. */
static void pool_p95(struct pool_wait *w, size_t n, struct pool *p)
{
	double *per_task = xmalloc((n ? n : 1) * sizeof(*per_task));
	size_t tasks = 0;
	qsort(w, n, sizeof(*w), task_cmp);
	for (size_t i = 0; i < n; i++) {
		if (!i || w[i].task != w[i - 1].task)
			per_task[tasks++] = 0;
		per_task[tasks - 1] += (double)(w[i].end_ns - w[i].t_ns);
	}
	p->p95_ns = tasks ? (int64_t)stats_quantile(per_task, tasks, 0.95) : 0;
	free(per_task);
}

/* The pool's waits: their total, the time any task waited (their union),
 * and how many waited at once at most. */
static void pool_waits(sqlite3 *db, struct pool *p)
{
	sqlite3_stmt *st;
	size_t n = 0, alloc = 256;
	struct pool_wait *w = xmalloc(alloc * sizeof(*w));
	if (sqlite3_prepare_v2(db,
			       "SELECT t_ns, wait_ns, task FROM aio_waits WHERE pid = ? AND pool = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, p->pid);
		sqlite3_bind_int64(st, 2, p->id);
		while (sqlite3_step(st) == SQLITE_ROW) {
			if (n == alloc) {
				alloc *= 2;
				w = xrealloc(w, alloc * sizeof(*w));
			}
			int64_t t = sqlite3_column_int64(st, 0), len = sqlite3_column_int64(st, 1);
			w[n++] = (struct pool_wait){ t, sat_add_i64(t, len > 0 ? len : 0),
						     sqlite3_column_int64(st, 2) };
		}
		sqlite3_finalize(st);
	}
	qsort(w, n, sizeof(*w), wait_cmp);
	/* How many waited at once at each start: the starts so far less the
	 * waits ended by then (their ends sorted on their own). */
	int64_t *ends = xmalloc((n ? n : 1) * sizeof(*ends));
	for (size_t i = 0; i < n; i++)
		ends[i] = w[i].end_ns;
	qsort(ends, n, sizeof(*ends), end_cmp);
	size_t ended = 0;
	int64_t covered_to = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		p->wait_ns = sat_add_i64(p->wait_ns, w[i].end_ns - w[i].t_ns);
		if (w[i].end_ns > covered_to) {
			int64_t from = w[i].t_ns > covered_to ? w[i].t_ns : covered_to;
			p->span_ns = sat_add_i64(p->span_ns, w[i].end_ns - from);
			covered_to = w[i].end_ns;
		}
		while (ended < n && ends[ended] <= w[i].t_ns)
			ended++;
		if ((int64_t)(i + 1 - ended) > p->peak)
			p->peak = (int64_t)(i + 1 - ended);
	}
	free(ends);
	p->waits = (int64_t)n;
	p->first_ns = n ? w[0].t_ns : 0;
	pool_p95(w, n, p);
	free(w);
}

static int64_t one_int(sqlite3 *db, const char *sql, int64_t a, int64_t b)
{
	sqlite3_stmt *st;
	int64_t v = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Who waited: the tasks, their lives, the call site that made most of them
 * (and how many it made in all), and where most waits were acquired. */
static void pool_tasks(sqlite3 *db, struct pool *p)
{
	sqlite3_stmt *st;
	p->tasks = one_int(db, "SELECT count(DISTINCT task) FROM aio_waits WHERE pid = ? AND pool = ?",
			   p->pid, p->id);
	p->lives_ns = one_int(db,
			      "SELECT coalesce(sum(done_ns - created_ns), 0) FROM aio_tasks"
			      " WHERE pid = ?1 AND done_ns IS NOT NULL AND id IN"
			      " (SELECT task FROM aio_waits WHERE pid = ?1 AND pool = ?2)",
			      p->pid, p->id);
	p->acquire_site = one_int(db,
				  "SELECT site FROM aio_waits WHERE pid = ? AND pool = ?"
				  " GROUP BY site ORDER BY count(*) DESC LIMIT 1",
				  p->pid, p->id);
	if (sqlite3_prepare_v2(db, "SELECT t.site, count(DISTINCT t.id) FROM aio_tasks t"
				   " JOIN aio_waits w ON w.pid = t.pid AND w.task = t.id"
				   " WHERE t.pid = ?1 AND w.pool = ?2"
				   " GROUP BY t.site ORDER BY 2 DESC LIMIT 1",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, p->pid);
		sqlite3_bind_int64(st, 2, p->id);
		if (sqlite3_step(st) == SQLITE_ROW)
			p->fanout_site = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	p->fanout_tasks = one_int(db, "SELECT count(*) FROM aio_tasks WHERE pid = ? AND site = ?",
				  p->pid, p->fanout_site);
	p->in_flight_max = -1;
	if (recording_has_column(db, "aio_waits", "in_flight"))
		p->in_flight_max = one_int(db,
					   "SELECT coalesce(max(in_flight), -1) FROM aio_waits"
					   " WHERE pid = ? AND pool = ?",
					   p->pid, p->id);
	snprintf(p->kind, sizeof(p->kind), "semaphore");
	if (sqlite3_prepare_v2(db,
			       "SELECT kind FROM aio_waits WHERE pid = ? AND pool = ?"
			       " GROUP BY kind ORDER BY count(*) DESC LIMIT 1",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, p->pid);
		sqlite3_bind_int64(st, 2, p->id);
		const char *kind;
		if (sqlite3_step(st) == SQLITE_ROW &&
		    (kind = (const char *)sqlite3_column_text(st, 0)))
			snprintf(p->kind, sizeof(p->kind), "%s", kind);
		sqlite3_finalize(st);
	}
}

/* The pool as the program wrote it: "asyncio.Semaphore(2)",
 * "aiohttp connector (limit=4)", "httpx pool (max_connections=4)". */
static void pool_name(const struct pool *p, struct strbuf *out)
{
	if (!strcmp(p->kind, "aiohttp"))
		strbuf_addf(out, "aiohttp connector (limit=%lld)", (long long)p->slots);
	else if (!strcmp(p->kind, "httpx"))
		strbuf_addf(out, "httpx pool (max_connections=%lld)", (long long)p->slots);
	else
		strbuf_addf(out, "asyncio.Semaphore(%lld)", (long long)p->slots);
}

/* Where the pool's size is chosen: a semaphore made in a pool class's
 * __init__ is sized by whoever constructs it (the caller), else where it is
 * made. */
static int64_t pool_sized_at(sqlite3 *db, const struct pool *p)
{
	struct strbuf fn = STRBUF_INIT;
	pool_loc(db, p->pid, p->site, &fn, 1);
	size_t len = fn.len;
	int init = len >= 8 && !strcmp(fn.buf + len - 8, "__init__");
	strbuf_release(&fn);
	return init && p->caller ? p->caller : p->site;
}

/* 1 when the semaphore was made in the function that made the tasks
 * waiting on it: a limit the fan-out put on itself (Semaphore(16) around a
 * gather), not a pool it ran into. */
static int pool_is_own_limit(sqlite3 *db, const struct pool *p)
{
	struct strbuf made = STRBUF_INIT, fan = STRBUF_INIT;
	pool_loc(db, p->pid, p->site, &made, 1);
	pool_loc(db, p->pid, p->fanout_site, &fan, 1);
	int same = p->fanout_site && strcmp(made.buf, "?") && !strcmp(made.buf, fan.buf);
	strbuf_release(&made);
	strbuf_release(&fan);
	return same;
}

static void pool_finding(struct analysis_ctx *ctx, const struct pool *p, double wall_s)
{
	double share = p->lives_ns > 0 ? (double)p->wait_ns / (double)p->lives_ns : 0;
	if (p->slots < 1 || pool_is_own_limit(ctx->db, p) || p->peak < POOL_QUEUE_MIN || p->peak < POOL_QUEUE_RATIO * p->slots ||
	    share < POOL_WAIT_SHARE || p->span_ns < POOL_SPAN_MIN_NS ||
	    (wall_s > 0 && (double)p->span_ns / 1e9 < POOL_SPAN_SHARE * wall_s))
		return;
	struct strbuf loc = STRBUF_INIT, sized_at = STRBUF_INIT, made = STRBUF_INIT;
	struct strbuf acq = STRBUF_INIT, fan = STRBUF_INIT, name = STRBUF_INIT, at = STRBUF_INIT;
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT, phase = STRBUF_INIT;
	int64_t sized = pool_sized_at(ctx->db, p);
	/* Where the tasks fan out: the program's call that put them in the queue. */
	pool_loc(ctx->db, p->pid, p->fanout_site ? p->fanout_site : sized, &loc, 0);
	pool_loc(ctx->db, p->pid, sized, &sized_at, 0);
	pool_loc(ctx->db, p->pid, sized, &made, 1);
	pool_loc(ctx->db, p->pid, p->acquire_site, &acq, 0);
	pool_loc(ctx->db, p->pid, p->fanout_site, &fan, 1);
	pool_loc(ctx->db, p->pid, p->site, &at, 0);
	pool_name(p, &name);
	report_phase_at(ctx->report, (double)p->first_ns / 1e9, &phase);
	strbuf_addf(&title,
		    "Tasks queue for a pool of %lld made in %s: up to %lld waiting at once%s%s",
		    (long long)p->slots, made.buf, (long long)p->peak,
		    phase.len ? " in the phase " : "", phase.buf);
	strbuf_addf(
	    &ev,
	    "%lld tasks (of %lld made by %s) waited %.2f s in all (p95 %.3f s a task) on the "
	    "%s made at %s%s%s, acquired at %s: %.0f%% of their time; at most %lld "
	    "waited at once",
	    (long long)p->tasks, (long long)p->fanout_tasks, fan.buf, (double)p->wait_ns / 1e9,
	    (double)p->p95_ns / 1e9, name.buf, at.buf, sized != p->site ? " for " : "",
	    sized != p->site ? sized_at.buf : "", acq.buf, 100.0 * share, (long long)p->peak);
	if (p->in_flight_max >= 0)
		strbuf_addf(&ev, " while %lld of its %lld slots were taken",
			    (long long)p->in_flight_max, (long long)p->slots);
	strbuf_addf(&ev, ", and some task waited during %.2f s of the run",
		    (double)p->span_ns / 1e9);
	strbuf_addf(&next,
		    "Raise the pool's limit where it is chosen (%s: %lld) to the concurrency you "
		    "want from %s (%lld tasks queued at once), or bound that fan-out with an "
		    "asyncio.Semaphore(%lld), the pool's size, so that tasks wait in your code "
		    "rather than inside the client (where a pool timeout counts against them); "
		    "when %lld is the server's own limit, send fewer requests (a batch endpoint, "
		    "caching repeated ones)",
		    sized_at.buf, (long long)p->slots, fan.buf, (long long)p->peak,
		    (long long)p->slots, (long long)p->slots);
	/* At stake: the time tasks queued, less what the slots already served. */
	double stake_s = (double)p->span_ns / 1e9 *
			 (1.0 - (double)p->slots / (double)(p->slots + p->peak));
	struct finding f = {
		.id = "asyncio.pool_exhausted",
		.title = title.buf,
		.dimension = "concurrency",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "Connection-pool exhaustion: the fan-out starts far more tasks than "
			     "the pool has slots, so they queue for it and the batch takes its "
			     "round trips a few at a time",
		.next_step = next.buf,
		.validation = "asyncio.pools[].wait_s, p95_wait_s and peak_waiting fall, and the "
			      "phase's duration with them",
		.blames_code = FINDING_BLAMES_CODE,
	};
	findings_add_time(ctx->findings, &f, stake_s, wall_s);
	strbuf_release(&loc);
	strbuf_release(&sized_at);
	strbuf_release(&made);
	strbuf_release(&acq);
	strbuf_release(&fan);
	strbuf_release(&name);
	strbuf_release(&at);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
	strbuf_release(&phase);
}

static json_t *pool_json(sqlite3 *db, const struct pool *p)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *o = json_object();
	json_object_set_new(o, "pid", json_integer(p->pid));
	json_object_set_new(o, "kind", json_string(p->kind));
	json_object_set_new(o, "slots", json_integer(p->slots));
	pool_loc(db, p->pid, p->site, &sb, 0);
	json_object_set_new(o, "made_at", report_string(sb.buf, sb.len));
	strbuf_reset(&sb);
	pool_loc(db, p->pid, pool_sized_at(db, p), &sb, 0);
	json_object_set_new(o, "sized_at", report_string(sb.buf, sb.len));
	strbuf_reset(&sb);
	pool_loc(db, p->pid, p->acquire_site, &sb, 0);
	json_object_set_new(o, "acquired_at", report_string(sb.buf, sb.len));
	strbuf_reset(&sb);
	pool_loc(db, p->pid, p->fanout_site, &sb, 0);
	json_object_set_new(o, "fanout_at", report_string(sb.buf, sb.len));
	json_object_set_new(o, "own_limit", json_boolean(pool_is_own_limit(db, p)));
	json_object_set_new(o, "waits", json_integer(p->waits));
	json_object_set_new(o, "tasks_waiting", json_integer(p->tasks));
	json_object_set_new(o, "peak_waiting", json_integer(p->peak));
	json_object_set_new(o, "wait_s", json_real((double)p->wait_ns / 1e9));
	json_object_set_new(o, "p95_wait_s", json_real((double)p->p95_ns / 1e9));
	json_object_set_new(o, "waiting_span_s", json_real((double)p->span_ns / 1e9));
	if (p->in_flight_max >= 0)
		json_object_set_new(o, "in_flight_max", json_integer(p->in_flight_max));
	json_object_set_new(o, "wait_share_pct",
			    json_real(p->lives_ns > 0 ? 100.0 * (double)p->wait_ns /
							    (double)p->lives_ns
						      : 0));
	strbuf_release(&sb);
	return o;
}

static int pool_cmp(const void *x, const void *y)
{
	const struct pool *a = x, *b = y;
	return a->wait_ns > b->wait_ns ? -1 : a->wait_ns < b->wait_ns;
}

static int pools_run(struct analysis_ctx *ctx)
{
	json_t *aio = json_object_get(ctx->report, "asyncio");
	if (!json_is_object(aio) || !recording_has_table(ctx->db, "aio_pools") ||
	    !recording_has_column(ctx->db, "aio_waits", "pool"))
		return 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(ctx->db, "SELECT pid, id, slots, site, caller FROM aio_pools", -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	size_t n = 0, alloc = 8;
	struct pool *pools = xmalloc(alloc * sizeof(*pools));
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n == alloc) {
			alloc *= 2;
			pools = xrealloc(pools, alloc * sizeof(*pools));
		}
		pools[n++] = (struct pool){ .pid = sqlite3_column_int64(st, 0),
					    .id = sqlite3_column_int64(st, 1),
					    .slots = sqlite3_column_int64(st, 2),
					    .site = sqlite3_column_int64(st, 3),
					    .caller = sqlite3_column_int64(st, 4) };
	}
	sqlite3_finalize(st);
	double wall_s = report_wall_s(ctx->db);
	for (size_t i = 0; i < n; i++) {
		pool_waits(ctx->db, &pools[i]);
		pool_tasks(ctx->db, &pools[i]);
	}
	qsort(pools, n, sizeof(*pools), pool_cmp);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		pool_finding(ctx, &pools[i], wall_s);
		if (i < POOLS_LISTED)
			json_array_append_new(arr, pool_json(ctx->db, &pools[i]));
	}
	json_object_set_new(aio, "pools", arr);
	free(pools);
	return 0;
}

static const char *const asyncio_pools_needs[] = { "asyncio", "phases", NULL };

static const char *const asyncio_pools_findings[] = {
	"asyncio.pool_exhausted",
	NULL,
};

const struct analysis_ops analysis_asyncio_pools = {
	.name = "asyncio_pools",
	.findings = asyncio_pools_findings,
	.needs = asyncio_pools_needs,
	.run = pools_run,
};
