/* locks: time threads spent waiting to acquire a lock, where they waited, and
 * where the lock's holder was meanwhile. Report key `locks`; finding
 * "concurrency.lock_wait".
 *
 * A wait is an offcpu interval whose stack went to sleep in a lock: a pthread
 * mutex or rwlock (C), or, under a Python frame, CPython's lock acquire (the
 * semaphore it sleeps on). For a Python thread the place is the Python line
 * it waited at (its python samples inside the interval); a line in the
 * standard library's threading or queue module waits for an event (a
 * Condition, Event, Queue, join), not for a lock another thread holds, and is
 * left out. The holder is read from the other threads of the process during
 * the waits: the place where they were most often, other than the waiting
 * place itself; when they were mostly off the CPU there, the lock was held
 * across a wait (a sleep, I/O, a network call). */
#include "analysis.h"
#include "frames.h"
#include "offcpu.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LOCK_WAIT_MIN_S 0.2
#define LOCK_WAIT_MIN_SHARE 0.25 /* of the wall time, summed over threads */
#define LOCK_INTERVALS_MAX 8000 /* kept for the holder's search (pairs are compared) */
#define LOCK_PLACES_LISTED 5

struct py_sample {
	int64_t t_ns, tid, node;
	int on_cpu;
};

struct wait_place {
	char *key; /* "file:function:line" */
	double seconds;
	struct hashmap tids;
};

struct interval {
	int64_t t_ns, end_ns, tid;
	size_t place; /* SIZE_MAX: not a lock wait (other intervals, for the holder) */
	size_t node;  /* the offcpu node */
};

struct locks {
	sqlite3 *db;
	struct stack_set off, py;
	signed char *lock_node; /* per offcpu node: 1 lock wait, 0 not, -1 unknown */
	struct py_sample *samples; /* python samples by (tid, t_ns) */
	size_t nsamples;
	struct wait_place *places;
	size_t nplaces, allocplaces;
	struct hashmap place_index;
	struct interval *iv;
	size_t niv, allociv;
	size_t *path;
};

static int is_lock_fn(const char *fn, int python)
{
	static const char *const mutex[] = {
		"pthread_mutex_lock", "__pthread_mutex_lock", "___pthread_mutex_lock",
		"__lll_lock_wait", "__lll_lock_wait_private", "pthread_rwlock_rdlock",
		"pthread_rwlock_wrlock", "__pthread_rwlock_rdlock", "__pthread_rwlock_wrlock",
		"pthread_mutex_timedlock", "pthread_mutex_clocklock", NULL,
	};
	static const char *const py_lock[] = {
		"PyThread_acquire_lock_timed", "_PyMutex_LockTimed", "_PyMutex_LockSlow",
		"acquire_timed", "lock_PyThread_acquire_lock", "rlock_acquire", "sem_clockwait",
		"sem_timedwait", "sem_wait", "__new_sem_wait_slow64", "__new_sem_wait_slow", NULL,
	};
	for (size_t i = 0; mutex[i]; i++)
		if (!strcmp(fn, mutex[i]))
			return 1;
	for (size_t i = 0; python && py_lock[i]; i++)
		if (!strcmp(fn, py_lock[i]))
			return 1;
	return 0;
}

/* C functions that wait for an event through a lock of their own: a
 * queue.SimpleQueue's get sleeps in a lock acquire until an item comes (an
 * empty queue, not a lock another thread holds). */
static int is_event_wait_fn(const char *fn)
{
	return !strcmp(fn, "_queue_SimpleQueue_get_impl") || !strcmp(fn, "_queue_SimpleQueue_get");
}

/* 1 when the offcpu stack ending at node went to sleep in a lock. */
static int node_is_lock(struct locks *lk, size_t node)
{
	if (lk->lock_node[node] >= 0)
		return lk->lock_node[node];
	size_t n = stack_set_path(&lk->off, node, lk->path, STACK_DEPTH_MAX);
	int python = 0, lock = 0;
	for (size_t k = 0; k < n; k++) {
		python |= frame_is_interpreter(lk->off.frames[lk->path[k]].module);
		if (is_event_wait_fn(lk->off.frames[lk->path[k]].function))
			n = 0; /* not a lock */
	}
	for (size_t k = n; k-- > 0 && !lock;)
		lock = is_lock_fn(lk->off.frames[lk->path[k]].function, python);
	lk->lock_node[node] = (signed char)lock;
	return lock;
}

static int sample_cmp(const void *a, const void *b)
{
	const struct py_sample *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

/* Every python sample (time, thread, node index, on the CPU), by thread
 * and time. 0, or -1 when the recording cannot be read. */
static int py_samples_load(struct locks *lk)
{
	sqlite3_stmt *st;
	size_t alloc = 0;
	if (sqlite3_prepare_v2(lk->db, "SELECT t_ns, tid, node, on_cpu FROM samples"
				       " WHERE source = 'python'",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 2);
		int64_t *node = hashmap_get(&lk->py.node_index, &id, sizeof(id));
		if (!node)
			continue;
		if (lk->nsamples == alloc) {
			alloc = alloc ? 2 * alloc : 1024;
			lk->samples = xrealloc(lk->samples, alloc * sizeof(*lk->samples));
		}
		lk->samples[lk->nsamples++] = (struct py_sample){
			sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), *node,
			sqlite3_column_type(st, 3) == SQLITE_NULL || sqlite3_column_int(st, 3) };
	}
	sqlite3_finalize(st);
	if (lk->nsamples > 1)
		qsort(lk->samples, lk->nsamples, sizeof(*lk->samples), sample_cmp);
	return 0;
}

/* The first python sample of tid at or after t_ns (index into samples). */
static size_t first_sample(const struct locks *lk, int64_t tid, int64_t t_ns)
{
	size_t lo = 0, hi = lk->nsamples;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct py_sample *s = &lk->samples[mid];
		if (s->tid < tid || (s->tid == tid && s->t_ns < t_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* "file:function:line" of the innermost Python frame of a python node. */
static void py_place(const struct locks *lk, size_t node, struct strbuf *out)
{
	const struct stack_frame_rec *fr = &lk->py.frames[lk->py.nodes[node].frame];
	strbuf_addf(out, "%s:%s:%d", fr->file ? fr->file : "?", fr->function, fr->line);
}

static int stdlib_wait(const struct locks *lk, size_t node)
{
	const char *file = lk->py.frames[lk->py.nodes[node].frame].file;
	if (!file)
		return 0;
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	return !strcmp(base, "threading.py") || !strcmp(base, "queue.py");
}

/* The node of the innermost frame of the program's own code on the python
 * node's stack: the standard library's frames under it (multiprocessing's
 * Lock.__enter__) are the line's lock; -1 when every frame is the standard
 * library's (a thread of its own machinery: a multiprocessing pool's task
 * handler waits for its workers, not for a lock the program can hold less). */
static int64_t py_own_node(const struct locks *lk, size_t node)
{
	for (size_t i = node + 1; i; i = lk->py.nodes[i - 1].parent) {
		const char *file = lk->py.frames[lk->py.nodes[i - 1].frame].file;
		if (file && !frame_is_python_stdlib(file))
			return (int64_t)(i - 1);
	}
	return -1;
}

/* Where an interval of tid waited: its Python line (that of the first python
 * sample inside it, at the program's own frame), else the program's own
 * native frame. 0 when it is a place to count, -1 when it is an event wait,
 * the standard library's own, or unknown. */
static int wait_place_of(struct locks *lk, int64_t tid, int64_t t_ns, int64_t end_ns,
			 size_t off_node, struct strbuf *key)
{
	if (lk->nsamples) {
		size_t i = first_sample(lk, tid, t_ns);
		if (i < lk->nsamples && lk->samples[i].tid == tid && lk->samples[i].t_ns < end_ns) {
			size_t node = (size_t)lk->samples[i].node;
			int64_t own = stdlib_wait(lk, node) ? -1 : py_own_node(lk, node);
			if (own < 0)
				return -1;
			py_place(lk, (size_t)own, key);
			return 0;
		}
	}
	size_t n = stack_set_path(&lk->off, off_node, lk->path, STACK_DEPTH_MAX);
	for (size_t i = 0; i < n; i++) /* a Python thread: its line or nothing */
		if (frame_is_interpreter(lk->off.frames[lk->path[i]].module))
			return -1;
	size_t k = frame_own_index(&lk->off, lk->path, n);
	if (k == n)
		return -1;
	const struct stack_frame_rec *fr = &lk->off.frames[lk->path[k]];
	strbuf_addf(key, "%s:%s:%d", fr->file ? fr->file : fr->module ? fr->module : "?",
		    fr->function, fr->line);
	return 0;
}

static size_t place_get(struct locks *lk, const char *key)
{
	int64_t *i = hashmap_get(&lk->place_index, key, strlen(key));
	if (i)
		return (size_t)*i;
	if (lk->nplaces == lk->allocplaces) {
		lk->allocplaces = lk->allocplaces ? 2 * lk->allocplaces : 16;
		lk->places = xrealloc(lk->places, lk->allocplaces * sizeof(*lk->places));
	}
	lk->places[lk->nplaces] = (struct wait_place){ .key = xstrdup(key) };
	hashmap_put(&lk->place_index, key, strlen(key), (int64_t)lk->nplaces);
	return lk->nplaces++;
}

static int load(struct locks *lk, struct strbuf *err)
{
	if (stack_set_load(lk->db, "offcpu", &lk->off, err))
		return -1;
	if (!lk->off.total_samples)
		return 0;
	if (stack_set_load(lk->db, "python", &lk->py, err))
		return -1;
	if (lk->py.total_samples && py_samples_load(lk)) {
		strbuf_addf(err, "cannot read the python samples: %s", sqlite3_errmsg(lk->db));
		return -1;
	}
	lk->lock_node = xmalloc(lk->off.nnodes ? lk->off.nnodes : 1);
	memset(lk->lock_node, -1, lk->off.nnodes ? lk->off.nnodes : 1);
	lk->path = xmalloc(STACK_DEPTH_MAX * sizeof(*lk->path));
	return 0;
}

static void interval_keep(struct locks *lk, int64_t t_ns, int64_t end_ns, int64_t tid,
			  size_t place, size_t node)
{
	if (lk->niv >= LOCK_INTERVALS_MAX)
		return;
	if (lk->niv == lk->allociv) {
		lk->allociv = lk->allociv ? 2 * lk->allociv : 256;
		lk->iv = xrealloc(lk->iv, lk->allociv * sizeof(*lk->iv));
	}
	lk->iv[lk->niv++] = (struct interval){ t_ns, end_ns, tid, place, node };
}

static void on_off_sample(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct locks *lk = arg;
	if (weight <= 0)
		return;
	if (!node_is_lock(lk, node)) {
		interval_keep(lk, t_ns, t_ns + weight, tid, SIZE_MAX, node);
		return;
	}
	struct strbuf key = STRBUF_INIT;
	if (!wait_place_of(lk, tid, t_ns, t_ns + weight, node, &key)) {
		size_t p = place_get(lk, key.buf);
		struct wait_place *wp = &lk->places[p];
		wp->seconds += (double)weight / 1e9;
		hashmap_put(&wp->tids, &tid, sizeof(tid), 1);
		interval_keep(lk, t_ns, t_ns + weight, tid, p, node);
	}
	strbuf_release(&key);
}

struct holder {
	char *place; /* NULL when no other thread was sampled during the waits */
	int64_t samples, off_cpu; /* at place: samples, and those off the CPU */
};

/* Where the other threads were while threads waited at place p: the place
 * they were sampled at most, other than p (another waiter). Python samples. */
static void holder_find(struct locks *lk, size_t p, struct holder *h)
{
	struct hashmap count = HASHMAP_INIT, off = HASHMAP_INIT;
	struct strbuf key = STRBUF_INIT;
	int64_t best_n = 0;
	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < lk->niv; i++) {
		const struct interval *iv = &lk->iv[i];
		if (iv->place != p)
			continue;
		for (size_t s = 0; s < lk->nsamples;) { /* thread by thread */
			int64_t tid = lk->samples[s].tid;
			size_t next = first_sample(lk, tid, INT64_MAX);
			if (tid != iv->tid)
				for (size_t k = first_sample(lk, tid, iv->t_ns);
				     k < next && lk->samples[k].t_ns < iv->end_ns; k++) {
					size_t node = (size_t)lk->samples[k].node;
					if (stdlib_wait(lk, node))
						continue; /* a join or an event: not holding */
					strbuf_reset(&key);
					py_place(lk, node, &key);
					if (!strcmp(key.buf, lk->places[p].key))
						continue; /* another waiter */
					int64_t *c = hashmap_get(&count, key.buf, key.len);
					int64_t v = c ? ++*c : *hashmap_put(&count, key.buf, key.len, 1);
					if (!lk->samples[k].on_cpu) {
						int64_t *o = hashmap_get(&off, key.buf, key.len);
						if (o)
							++*o;
						else
							hashmap_put(&off, key.buf, key.len, 1);
					}
					if (v > best_n) {
						best_n = v;
						free(h->place);
						h->place = xstrdup(key.buf);
					}
				}
			s = next;
		}
	}
	if (h->place) {
		int64_t *o = hashmap_get(&off, h->place, strlen(h->place));
		h->samples = best_n;
		h->off_cpu = o ? *o : 0;
	}
	hashmap_release(&count);
	hashmap_release(&off);
	strbuf_release(&key);
}

/* Without Python samples: the place the other threads' off-CPU intervals
 * overlapping the waits at p spent most time at (the program's own frame),
 * when that overlap covers at least a third of the waits: the holder waited
 * there with the lock held. samples counts the overlapping intervals. */
static void holder_native(struct locks *lk, size_t p, struct holder *h)
{
	struct hashmap ns = HASHMAP_INIT, count = HASHMAP_INIT;
	struct strbuf key = STRBUF_INIT;
	int64_t best = 0, waited = 0;
	for (size_t i = 0; i < lk->niv; i++) {
		const struct interval *w = &lk->iv[i];
		if (w->place != p)
			continue;
		waited += w->end_ns - w->t_ns;
		for (size_t k = 0; k < lk->niv; k++) {
			const struct interval *o = &lk->iv[k];
			if (o->place != SIZE_MAX || o->tid == w->tid || o->end_ns <= w->t_ns ||
			    o->t_ns >= w->end_ns)
				continue;
			size_t n = stack_set_path(&lk->off, o->node, lk->path, STACK_DEPTH_MAX);
			size_t own = frame_own_index(&lk->off, lk->path, n), j = 0;
			while (j < n && !offcpu_waits_for_others(lk->off.frames[lk->path[j]].function))
				j++;
			if (own == n || j < n)
				continue; /* a join is not holding the lock */
			const struct stack_frame_rec *fr = &lk->off.frames[lk->path[own]];
			strbuf_reset(&key);
			strbuf_addf(&key, "%s:%s:%d", fr->file ? fr->file : fr->module ? fr->module : "?",
				    fr->function, fr->line);
			int64_t lo = o->t_ns > w->t_ns ? o->t_ns : w->t_ns;
			int64_t hi = o->end_ns < w->end_ns ? o->end_ns : w->end_ns;
			int64_t *v = hashmap_get(&ns, key.buf, key.len);
			int64_t sum = v ? (*v += hi - lo) : *hashmap_put(&ns, key.buf, key.len, hi - lo);
			int64_t *c = hashmap_get(&count, key.buf, key.len);
			int64_t nc = c ? ++*c : *hashmap_put(&count, key.buf, key.len, 1);
			if (sum > best) {
				best = sum;
				free(h->place);
				h->place = xstrdup(key.buf);
				h->samples = nc;
			}
		}
	}
	if (h->place && 3 * best < waited) {
		free(h->place);
		h->place = NULL;
	}
	h->off_cpu = h->place ? h->samples : 0;
	hashmap_release(&ns);
	hashmap_release(&count);
	strbuf_release(&key);
}

static int place_cmp(const void *a, const void *b)
{
	const struct wait_place *x = a, *y = b;
	if (x->seconds != y->seconds)
		return x->seconds > y->seconds ? -1 : 1;
	return strcmp(x->key, y->key);
}

static void locks_release(struct locks *lk)
{
	for (size_t i = 0; i < lk->nplaces; i++) {
		free(lk->places[i].key);
		hashmap_release(&lk->places[i].tids);
	}
	free(lk->places);
	hashmap_release(&lk->place_index);
	free(lk->iv);
	free(lk->samples);
	free(lk->lock_node);
	free(lk->path);
	stack_set_release(&lk->off);
	stack_set_release(&lk->py);
}

/* "file:function:line" -> function (into out). */
static void place_function(const char *key, struct strbuf *out)
{
	const char *line = strrchr(key, ':');
	const char *fn = line;
	while (fn && fn > key && fn[-1] != ':')
		fn--;
	if (!line || !fn || fn == key)
		strbuf_addstr(out, key);
	else
		strbuf_add(out, fn, (size_t)(line - fn));
}

static void lock_finding(struct analysis_ctx *ctx, const struct wait_place *wp,
			 const struct holder *h, double wall_s)
{
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, diag = STRBUF_INIT,
		      next = STRBUF_INIT, fn = STRBUF_INIT, hfn = STRBUF_INIT;
	size_t nthreads = wp->tids.len;
	int python = strstr(wp->key, ".py:") != NULL;
	int across_wait = h->place && 2 * h->off_cpu >= h->samples;
	place_function(wp->key, &fn);
	if (h->place)
		place_function(h->place, &hfn);
	const char *s = nthreads == 1 ? "" : "s";
	strbuf_addf(&title, "%zu thread%s wait%s %.1f s for a lock in %s", nthreads, s,
		    nthreads == 1 ? "s" : "", wp->seconds, fn.buf);
	strbuf_addf(&ev, "%.3f s waiting to acquire a lock at %s, summed over %zu thread%s (%.0f%% "
			 "of the %.3f s run)",
		    wp->seconds, wp->key, nthreads, s, 100.0 * wp->seconds / wall_s, wall_s);
	if (h->place)
		strbuf_addf(&ev, "; while they waited, the other threads were most often at %s "
				 "(%lld samples, %.0f%% of them off the CPU)",
			    h->place, (long long)h->samples,
			    100.0 * (double)h->off_cpu / (double)h->samples);
	if (across_wait)
		strbuf_addf(&diag, "Lock held across a wait: the thread holding the lock waits (a "
				   "sleep, I/O, a network call) in %s while the others queue for it",
			    hfn.buf);
	else if (h->place)
		strbuf_addf(&diag, "Lock contention: the holder works in %s while the others queue "
				   "for the lock",
			    hfn.buf);
	else
		strbuf_addstr(&diag, "Lock contention: threads queue for one lock");
	if (across_wait && python)
		strbuf_addf(&next, "Call %s outside the `with lock:` block in %s: do the slow call "
				   "first, then take the lock only to swap its result in",
			    hfn.buf, fn.buf);
	else if (across_wait)
		strbuf_addf(&next, "Call %s outside the locked section in %s (between "
				   "pthread_mutex_lock and unlock): do the slow call first, then lock "
				   "only to publish its result",
			    hfn.buf, fn.buf);
	else if (python)
		strbuf_addf(&next, "Hold the lock in %s for less: move the work out of the `with "
				   "lock:` block, or use one lock per key instead of one for all",
			    fn.buf);
	else
		strbuf_addf(&next, "Hold the lock in %s for less: move the work out of the locked "
				   "section, or split the lock (one per key or shard)",
			    fn.buf);
	double at_stake = wp->seconds < wall_s ? wp->seconds : wall_s;
	struct finding f = {
		.id = "concurrency.lock_wait",
		.title = title.buf,
		.dimension = "concurrency",
		.location = wp->key,
		.evidence = ev.buf,
		.diagnosis = diag.buf,
		.next_step = next.buf,
		.validation = "locks.waits[0].seconds falls and target.wall_s falls",
		.blames_code = FINDING_BLAMES_CODE,
	};
	findings_add_time(ctx->findings, &f, at_stake, wall_s);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&diag);
	strbuf_release(&next);
	strbuf_release(&fn);
	strbuf_release(&hfn);
}

static int locks_run(struct analysis_ctx *ctx)
{
	struct locks lk = { .db = ctx->db, .off = STACK_SET_INIT, .py = STACK_SET_INIT };
	struct strbuf err = STRBUF_INIT;
	int ret = 0;
	if (!recording_has_table(ctx->db, "samples"))
		goto out;
	if (load(&lk, &err)) {
		report_not_measured(ctx->report, "locks", err.buf);
		ret = -1;
		goto out;
	}
	if (!lk.off.total_samples ||
	    stack_set_each_sample(ctx->db, &lk.off, INT64_MIN, INT64_MAX, on_off_sample, &lk, &err))
		goto out;
	if (!lk.nplaces)
		goto out;
	size_t *order = xmalloc(lk.nplaces * sizeof(*order));
	for (size_t i = 0; i < lk.nplaces; i++)
		order[i] = i;
	for (size_t i = 1; i < lk.nplaces; i++) /* few places: insertion sort */
		for (size_t k = i; k > 0 && place_cmp(&lk.places[order[k]], &lk.places[order[k - 1]]) < 0;
		     k--) {
			size_t t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	struct holder h;
	holder_find(&lk, order[0], &h);
	if (!h.place && !lk.nsamples)
		holder_native(&lk, order[0], &h);
	json_t *waits = json_array();
	for (size_t i = 0; i < lk.nplaces && i < LOCK_PLACES_LISTED; i++) {
		const struct wait_place *wp = &lk.places[order[i]];
		json_t *o = json_object();
		json_object_set_new(o, "location", report_string(wp->key, strlen(wp->key)));
		json_object_set_new(o, "seconds", json_real(wp->seconds));
		json_object_set_new(o, "threads", json_integer((json_int_t)wp->tids.len));
		json_array_append_new(waits, o);
	}
	json_t *locks = json_object();
	json_object_set_new(locks, "waits", waits);
	json_t *holder = json_null();
	if (h.place) {
		holder = json_object();
		json_object_set_new(holder, "location", report_string(h.place, strlen(h.place)));
		json_object_set_new(holder, "samples", json_integer(h.samples));
		json_object_set_new(holder, "off_cpu_pct",
				    json_real(100.0 * (double)h.off_cpu / (double)h.samples));
	}
	json_object_set_new(locks, "holder", holder);
	json_object_set_new(ctx->report, "locks", locks);
	double wall_s = report_wall_s(ctx->db);
	const struct wait_place *top = &lk.places[order[0]];
	if (wall_s > 0 && top->seconds >= LOCK_WAIT_MIN_S &&
	    top->seconds >= LOCK_WAIT_MIN_SHARE * wall_s)
		lock_finding(ctx, top, &h, wall_s);
	free(h.place);
	free(order);
out:
	strbuf_release(&err);
	locks_release(&lk);
	return ret;
}

static const char *const locks_findings[] = {
	"concurrency.lock_wait",
	NULL,
};

const struct analysis_ops analysis_locks = {
	.name = "locks",
	.findings = locks_findings,
	.run = locks_run,
};
