/* asyncio_lag: the event loop blocked (asyncio.loop_blocked): the loop's
 * heartbeat ran late; the loop thread's Python samples inside the late
 * windows name the code that held it (CPU work, or a blocking call when its
 * samples are off the CPU). Report key `asyncio.loop_lag`: per loop thread,
 * its late beats and the places that held it. Part of the asyncio analysis
 * (asyncio.c runs it; asyncio_model.h). */
#include "asyncio_model.h"
#include "analysis.h"
#include "frames.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AIO_LAG_MIN_NS 200000000LL /* late heartbeats summed, for a finding */
#define AIO_LAG_MIN_SHARE 0.05	    /* of the wall time */
#define AIO_BLOCKERS_LISTED 5
#define AIO_BLOCKERS_MAX 3 /* findings per loop thread */
/* A place that held the loop this long in all is named: a stall the users
 * of a service notice, however long the rest of the run or the other
 * blockers took (on a busy machine the CPU work stretches, a wait does not). */
#define AIO_BLOCKER_MIN_NS 200000000LL

/* ---- the event loop blocked ---- */

struct blocker {
	char *key; /* "file:function" of the innermost own frame */
	int line;  /* its line in the first sample */
	int64_t samples, on_cpu, gil;
};

struct lag_scan {
	const struct stack_set *py;
	size_t *path;
	struct blocker *b;
	size_t nb, ab;
	struct hashmap index;
	int64_t samples;
	int64_t loop_gil, others_gil; /* samples holding the GIL: the loop thread's, others' */
};

/* The innermost Python frame of the program's own code under node: not the
 * standard library's nor sonde's agent; NULL when the loop itself runs (its
 * _run_once or run_forever reached before any code of the program's: the
 * loop between callbacks, or idle in its selector). */
static const struct stack_frame_rec *own_py_frame(struct lag_scan *ls, size_t node)
{
	size_t n = stack_set_path(ls->py, node, ls->path, STACK_DEPTH_MAX);
	for (size_t i = n; i-- > 0;) {
		const struct stack_frame_rec *f = &ls->py->frames[ls->path[i]];
		if (f->file && frame_is_python_stdlib(f->file)) {
			const char *fn = strrchr(f->function, '.');
			fn = fn ? fn + 1 : f->function;
			if (!strcmp(fn, "_run_once") || !strcmp(fn, "run_forever"))
				return NULL;
			continue;
		}
		if (!f->file || strstr(f->file, "_sonde_asyncio"))
			continue;
		return f;
	}
	return NULL;
}

static void lag_sample(struct lag_scan *ls, size_t node, int on_cpu, int gil)
{
	const struct stack_frame_rec *f = own_py_frame(ls, node);
	ls->samples++;
	if (!f)
		return;
	struct strbuf key = STRBUF_INIT;
	strbuf_addf(&key, "%s:%s", f->file, f->function);
	int64_t *i = hashmap_get(&ls->index, key.buf, key.len);
	if (!i) {
		if (ls->nb == ls->ab) {
			ls->ab = ls->ab ? 2 * ls->ab : 16;
			ls->b = xrealloc(ls->b, ls->ab * sizeof(*ls->b));
		}
		ls->b[ls->nb] = (struct blocker){ strbuf_detach(&key), f->line, 0, 0, 0 };
		i = hashmap_put(&ls->index, ls->b[ls->nb].key, strlen(ls->b[ls->nb].key),
				(int64_t)ls->nb);
		ls->nb++;
	}
	ls->b[*i].samples++;
	ls->b[*i].on_cpu += on_cpu;
	ls->b[*i].gil += gil;
	strbuf_release(&key);
}

/* The loop thread's python samples inside each late window of (pid, tid). */
struct window {
	int64_t from_ns, to_ns;
};

static int window_cmp(const void *x, const void *y)
{
	const struct window *a = x, *b = y;
	return a->from_ns < b->from_ns ? -1 : a->from_ns > b->from_ns;
}

/* The process's python samples inside the late windows of (pid, tid): one
 * pass over its samples in time order against the windows sorted by start
 * (the samples table has no index on time; a query per window would read
 * it whole each time). */
static void lag_windows_scan(const struct aio *a, struct lag_scan *ls, int64_t pid, int64_t tid)
{
	sqlite3_stmt *w, *s;
	struct window *v = NULL;
	size_t n = 0, alloc = 0;
	if (sqlite3_prepare_v2(a->db, "SELECT t_ns, late_ns FROM aio_lag WHERE pid = ? AND tid = ?",
			       -1, &w, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(w, 1, pid);
	sqlite3_bind_int64(w, 2, tid);
	while (sqlite3_step(w) == SQLITE_ROW) {
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		int64_t t = sqlite3_column_int64(w, 0), late = sqlite3_column_int64(w, 1);
		v[n++] = (struct window){ t - (late > 0 ? late : 0), t };
	}
	sqlite3_finalize(w);
	if (!n || sqlite3_prepare_v2(a->db, "SELECT node, on_cpu, gil, tid, t_ns FROM samples"
					    " WHERE source = 'python' AND pid = ? ORDER BY t_ns",
				     -1, &s, NULL) != SQLITE_OK) {
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), window_cmp);
	size_t k = 0;
	sqlite3_bind_int64(s, 1, pid);
	while (k < n && sqlite3_step(s) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(s, 4);
		while (k < n && v[k].to_ns < t)
			k++;
		if (k == n || t < v[k].from_ns)
			continue;
		int gil = sqlite3_column_type(s, 2) != SQLITE_NULL && sqlite3_column_int(s, 2) == 1;
		if (sqlite3_column_int64(s, 3) != tid) {
			ls->others_gil += gil;
			continue;
		}
		ls->loop_gil += gil;
		int64_t id = sqlite3_column_int64(s, 0);
		int64_t *node = hashmap_get(&ls->py->node_index, &id, sizeof(id));
		if (node)
			lag_sample(ls, (size_t)*node,
				   /* running or queued for a CPU (2): work, not a wait */
				   sqlite3_column_type(s, 1) == SQLITE_NULL ||
					   sqlite3_column_int(s, 1) != 0,
				   gil);
	}
	sqlite3_finalize(s);
	free(v);
}

static int blocker_cmp(const void *x, const void *y)
{
	const struct blocker *a = x, *b = y;
	return a->samples < b->samples ? 1 : a->samples > b->samples ? -1 : 0;
}

/* The finding for one blocker of a loop thread (b NULL: no sample names
 * the code), charged its share of the late time. */
static void blocker_emit(struct analysis_ctx *ctx, const struct lag_scan *ls,
			 const struct blocker *b, int64_t pid, int64_t tid, int64_t late_ns,
			 int64_t beats, int64_t max_ns, int64_t max_t_ns, double wall_s)
{
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT, loc = STRBUF_INIT;
	/* CPU work holds the GIL; a blocking call releases it. Without GIL
	 * figures (a recording that has none): on the CPU or not. */
	int cpu = !b || (ls->loop_gil ? 2 * b->gil >= b->samples : 2 * b->on_cpu >= b->samples);
	double share = b ? (double)b->samples / (double)ls->samples : 1.0;
	double mine_s = share * (double)late_ns / 1e9;
	const char *fn = "?";
	if (b) {
		const char *colon = strrchr(b->key, ':');
		fn = colon ? colon + 1 : b->key;
		strbuf_addf(&loc, "%s:%d", b->key, b->line);
		strbuf_addf(&title, "%s in %s blocks the event loop for %.1f s",
			    cpu ? "CPU work" : "A blocking call", fn, mine_s);
	} else {
		strbuf_addf(&loc, "process %lld, thread %lld", (long long)pid, (long long)tid);
		strbuf_addf(&title, "The event loop is blocked for %.1f s", mine_s);
	}
	strbuf_addf(&ev, "the loop's heartbeat (every 50 ms) ran late %lld times, %.3f s in all, "
			 "the longest %.3f s at %.3f s",
		    (long long)beats, (double)late_ns / 1e9, (double)max_ns / 1e9,
		    (double)max_t_ns / 1e9);
	if (b) {
		strbuf_addf(&ev, "; in those windows the loop thread (tid %lld) was in %s in %lld "
				 "of its %lld Python samples (%.0f%%: %.3f s of the lateness), %.0f%% "
				 "of them on the CPU",
			    (long long)tid, loc.buf, (long long)b->samples, (long long)ls->samples,
			    100.0 * share, mine_s, 100.0 * (double)b->on_cpu / (double)b->samples);
		if (ls->loop_gil)
			strbuf_addf(&ev, ", holding the GIL in %.0f%%",
				    100.0 * (double)b->gil / (double)b->samples);
	} else {
		strbuf_addstr(&ev, "; no Python samples of the loop thread name the code (run with "
				   "the python probe on)");
	}
	if (cpu)
		strbuf_addf(&next, "Move the CPU work in %s off the event loop: `await "
				   "loop.run_in_executor(pool, func, *args)` with a "
				   "concurrent.futures.ProcessPoolExecutor for pure-Python work (a "
				   "thread pool still holds the GIL), or split it and `await "
				   "asyncio.sleep(0)` between slices of a few milliseconds",
			    fn);
	else
		strbuf_addf(&next, "Make the blocking call in %s asynchronous: an asyncio client "
				   "(aiohttp, httpx.AsyncClient, asyncpg, aiofiles) or `await "
				   "asyncio.to_thread(func, *args)` (3.9+; loop.run_in_executor before)",
			    fn);
	aio_finding_emit(ctx, "asyncio.loop_blocked", title.buf, loc.buf, ev.buf,
			 cpu ? "Event-loop blocker: CPU work runs on the loop thread, so no other task "
			       "(no I/O, no timer) makes progress meanwhile"
			     : "Event-loop blocker: a synchronous call (network, file, fsync, "
			       "time.sleep) waits on the loop thread, so no other task makes progress",
			 next.buf, "asyncio.loop_lag.late_s falls", mine_s, wall_s);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
	strbuf_release(&loc);
}

/* What held one loop thread in its late windows, into its loop_lag entry o,
 * and a finding per place whose share of the windows' samples, times the
 * late time, is at least AIO_BLOCKER_MIN_NS (at most AIO_BLOCKERS_MAX; the
 * first always). Other threads holding
 * the GIL through the windows more than the loop thread did is GIL
 * contention (python.gil_contention says so), not code on the loop: no
 * finding then. */
static void blocked_finding(struct analysis_ctx *ctx, const struct aio *a,
			    const struct stack_set *py, json_t *o, int64_t pid, int64_t tid,
			    int64_t late_ns, int64_t beats, int64_t max_ns, int64_t max_t_ns,
			    double wall_s)
{
	struct lag_scan ls = { .py = py, .index = HASHMAP_INIT };
	ls.path = xmalloc(STACK_DEPTH_MAX * sizeof(*ls.path));
	if (py->nnodes)
		lag_windows_scan(a, &ls, pid, tid);
	if (ls.nb > 1)
		qsort(ls.b, ls.nb, sizeof(*ls.b), blocker_cmp);
	json_object_set_new(o, "samples", json_integer(ls.samples));
	json_object_set_new(o, "gil_loop_samples", json_integer(ls.loop_gil));
	json_object_set_new(o, "gil_other_samples", json_integer(ls.others_gil));
	json_t *arr = json_array();
	struct strbuf loc = STRBUF_INIT;
	for (size_t i = 0; i < ls.nb && i < AIO_BLOCKERS_LISTED; i++) {
		json_t *b = json_object();
		strbuf_reset(&loc);
		strbuf_addf(&loc, "%s:%d", ls.b[i].key, ls.b[i].line);
		json_object_set_new(b, "location", report_string(loc.buf, loc.len));
		json_object_set_new(b, "samples", json_integer(ls.b[i].samples));
		json_object_set_new(b, "on_cpu", json_integer(ls.b[i].on_cpu));
		json_object_set_new(b, "gil", json_integer(ls.b[i].gil));
		json_array_append_new(arr, b);
	}
	strbuf_release(&loc);
	json_object_set_new(o, "blockers", arr);
	if (ls.others_gil <= ls.loop_gil) {
		if (!ls.nb)
			blocker_emit(ctx, &ls, NULL, pid, tid, late_ns, beats, max_ns, max_t_ns, wall_s);
		for (size_t i = 0; i < ls.nb && i < AIO_BLOCKERS_MAX; i++) {
			double share = (double)ls.b[i].samples / (double)ls.samples;
			if (!i || share * (double)late_ns >= (double)AIO_BLOCKER_MIN_NS)
				blocker_emit(ctx, &ls, &ls.b[i], pid, tid, late_ns, beats, max_ns,
					     max_t_ns, wall_s);
		}
	}
	for (size_t i = 0; i < ls.nb; i++)
		free(ls.b[i].key);
	free(ls.b);
	free(ls.path);
	hashmap_release(&ls.index);
}

json_t *aio_lag_analyse(struct analysis_ctx *ctx, const struct aio *a, double wall_s)
{
	json_t *arr = json_array();
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(a->db, "SELECT pid, tid, COUNT(*), SUM(late_ns), MAX(late_ns),"
				      " (SELECT t_ns FROM aio_lag l2 WHERE l2.pid = l.pid AND"
				      "  l2.tid = l.tid ORDER BY late_ns DESC LIMIT 1)"
				      " FROM aio_lag l GROUP BY pid, tid ORDER BY SUM(late_ns) DESC",
			       -1, &st, NULL) != SQLITE_OK)
		return arr;
	struct stack_set py = STACK_SET_INIT;
	struct strbuf err = STRBUF_INIT;
	int have_py = -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		int64_t beats = sqlite3_column_int64(st, 2), late = sqlite3_column_int64(st, 3);
		int64_t max = sqlite3_column_int64(st, 4), max_t = sqlite3_column_int64(st, 5);
		json_t *o = json_object();
		json_object_set_new(o, "pid", json_integer(pid));
		json_object_set_new(o, "tid", json_integer(tid));
		json_object_set_new(o, "late_beats", json_integer(beats));
		json_object_set_new(o, "late_s", json_real((double)late / 1e9));
		json_object_set_new(o, "max_late_s", json_real((double)max / 1e9));
		json_object_set_new(o, "max_late_at_s", json_real((double)max_t / 1e9));
		json_array_append_new(arr, o);
		if (late < AIO_LAG_MIN_NS || (wall_s > 0 && late < AIO_LAG_MIN_SHARE * wall_s * 1e9))
			continue;
		if (have_py < 0)
			have_py = !stack_set_load(ctx->db, "python", &py, &err);
		blocked_finding(ctx, a, &py, o, pid, tid, late, beats, max, max_t, wall_s);
	}
	sqlite3_finalize(st);
	stack_set_release(&py);
	strbuf_release(&err);
	return arr;
}
