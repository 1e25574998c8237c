/* thread_pools: Python thread pools far larger than their work, and pools
 * whose every thread is busy with tasks that mostly wait. Report key
 * `thread_pools`; findings "concurrency.oversized_pool" and
 * "concurrency.undersized_pool".
 *
 * A pool is the threads of one process whose names differ only in their
 * digits ("worker-3", "ThreadPoolExecutor-0_12"), at least POOL_MIN_THREADS
 * of them. A thread waits for work when its innermost Python frame is the
 * standard library's queue or condition wait (queue.py, threading.py) or a
 * concurrent.futures worker's loop; otherwise it works (on the CPU, or
 * waiting on I/O for its task). At each python tick (the python probe reads
 * every thread of a process at one moment) the pool's working threads are
 * counted: when at most a quarter of the pool ever worked at once, the rest
 * only waited. The location is the program's own frame that waits for work
 * (the worker loop's get).
 *
 * A pool of any size whose threads all worked at UNDERSIZED_SATURATED of its
 * ticks, over UNDERSIZED_MIN_SHARE of the run and UNDERSIZED_MIN_S at least,
 * while UNDERSIZED_OFF_CPU of
 * their working samples were off the CPU (the tasks wait: a remote call, a
 * sleep, I/O), is too small: more of the tasks in flight would overlap their
 * waits. Located at the program's own frame the tasks wait in most. */
#include "analysis.h"
#include "frames.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MIN_THREADS 8
#define POOL_MAX_SHARE 0.25 /* of the pool working at once, at most */
#define POOL_MIN_TICKS 20   /* ticks that saw the pool, for a finding */
#define POOLS_LISTED 5
#define UNDERSIZED_SATURATED 0.9 /* of the pool's ticks, every thread working */
#define UNDERSIZED_OFF_CPU 0.8	  /* of its working samples, off the CPU */
#define UNDERSIZED_MIN_SHARE 0.25 /* of the run, the pool saturated ... */
#define UNDERSIZED_MIN_S 1.0	  /* ... and at least this long */
#define UNDERSIZED_MAX_THREADS 64 /* advised at most */

struct pool {
	int64_t pid;
	char *name;	 /* the threads' name without its digits */
	char *example;	 /* one thread's name */
	int64_t threads; /* seen in the samples */
	int64_t peak, ticks, working_samples, samples;
	int64_t saturated;	/* ticks with every thread working */
	int64_t working_off;	/* working samples off the CPU (a second pass) */
	struct hashmap wait_at; /* "file:function:line" of the waiting own frame -> samples */
	struct hashmap work_at; /* ... of the own frame of working samples off the CPU */
};

struct pools {
	sqlite3 *db;
	struct stack_set ss;
	size_t *path;
	struct pool *v;
	size_t n, alloc;
	struct hashmap by_tid; /* tid -> pool index */
	int64_t tick_t, tick_pid;
	int64_t *working; /* per pool, at the current tick */
	int off_pass;	  /* on_sample reads the off-CPU samples (work_at, working_off) */
};

/* "worker-12" -> "worker-", "ThreadPoolExecutor-0_3" -> "ThreadPoolExecutor-_". */
static char *name_key(const char *name)
{
	char *k = xstrdup(name);
	size_t j = 0;
	for (size_t i = 0; k[i]; i++)
		if (k[i] < '0' || k[i] > '9')
			k[j++] = k[i];
	k[j] = '\0';
	return k;
}

static int pools_load(struct pools *ps)
{
	sqlite3_stmt *st;
	if (!recording_has_table(ps->db, "threads") ||
	    sqlite3_prepare_v2(ps->db,
			       "SELECT t.pid, t.tid, t.name FROM threads t JOIN (SELECT DISTINCT pid,"
			       " tid FROM samples WHERE source = 'python') s ON s.pid = t.pid AND"
			       " s.tid = t.tid ORDER BY t.pid, t.name",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	struct hashmap index = HASHMAP_INIT; /* pid + key -> pool */
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		const char *name = (const char *)sqlite3_column_text(st, 2);
		if (!name || !strpbrk(name, "0123456789"))
			continue; /* a pool's threads are numbered; MainThread is not one */
		char *key = name_key(name);
		struct strbuf k = STRBUF_INIT;
		strbuf_addf(&k, "%lld/%s", (long long)pid, key);
		int64_t *i = hashmap_get(&index, k.buf, k.len);
		if (!i) {
			if (ps->n == ps->alloc) {
				ps->alloc = ps->alloc ? 2 * ps->alloc : 16;
				ps->v = xrealloc(ps->v, ps->alloc * sizeof(*ps->v));
			}
			ps->v[ps->n] = (struct pool){ .pid = pid, .name = key, .example = xstrdup(name),
						     .wait_at = HASHMAP_INIT, .work_at = HASHMAP_INIT };
			i = hashmap_put(&index, k.buf, k.len, (int64_t)ps->n++);
			key = NULL;
		}
		free(key);
		strbuf_release(&k);
		struct pool *p = &ps->v[*i];
		p->threads++;
		hashmap_put(&ps->by_tid, &tid, sizeof(tid), *i);
	}
	sqlite3_finalize(st);
	hashmap_release(&index);
	return 0;
}

static int stdlib_wait_frame(const struct stack_frame_rec *f)
{
	if (!f->file || !frame_is_python_stdlib(f->file))
		return 0;
	const char *base = strrchr(f->file, '/');
	base = base ? base + 1 : f->file;
	return !strcmp(base, "queue.py") || !strcmp(base, "threading.py") ||
	       strstr(f->file, "concurrent/futures/thread.py") != NULL;
}

static void tick_close(struct pools *ps)
{
	for (size_t i = 0; i < ps->n && !ps->off_pass; i++) {
		if (ps->v[i].pid == ps->tick_pid) {
			ps->v[i].ticks++;
			if (ps->working[i] > ps->v[i].peak)
				ps->v[i].peak = ps->working[i];
			ps->v[i].saturated += ps->working[i] >= ps->v[i].threads;
		}
		ps->working[i] = 0;
	}
}

/* Counts one more sample at the key of frame f in map. */
static void place_count(struct hashmap *map, const struct stack_frame_rec *f)
{
	struct strbuf key = STRBUF_INIT;
	strbuf_addf(&key, "%s:%s:%d", f->file, f->function, f->line);
	int64_t *c = hashmap_get(map, key.buf, key.len);
	if (c)
		++*c;
	else
		hashmap_put(map, key.buf, key.len, 1);
	strbuf_release(&key);
}

/* The program's own frame of the stack in path[0..n), innermost first; NULL
 * when every frame is the standard library's. */
static const struct stack_frame_rec *own_frame(const struct pools *ps, size_t n)
{
	for (size_t k = n; k-- > 0;) {
		const struct stack_frame_rec *f = &ps->ss.frames[ps->path[k]];
		if (f->file && !frame_is_python_stdlib(f->file))
			return f;
	}
	return NULL;
}

static void on_sample(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct pools *ps = arg;
	(void)weight;
	int64_t *pi = hashmap_get(&ps->by_tid, &tid, sizeof(tid));
	int64_t pid = pi ? ps->v[*pi].pid : -1;
	if (t_ns != ps->tick_t || pid != ps->tick_pid) {
		tick_close(ps);
		ps->tick_t = t_ns;
		ps->tick_pid = pid;
	}
	if (!pi)
		return;
	struct pool *p = &ps->v[*pi];
	size_t n = stack_set_path(&ps->ss, node, ps->path, STACK_DEPTH_MAX);
	if (!n)
		return;
	int works = !stdlib_wait_frame(&ps->ss.frames[ps->path[n - 1]]);
	const struct stack_frame_rec *own = own_frame(ps, n);
	if (ps->off_pass) { /* the off-CPU samples only */
		if (works) {
			p->working_off++;
			if (own)
				place_count(&p->work_at, own);
		}
		return;
	}
	p->samples++;
	if (works) {
		ps->working[*pi]++;
		p->working_samples++;
		return;
	}
	if (own) /* the program's own frame that waits for work */
		place_count(&p->wait_at, own);
}

/* The key of map's largest count, NULL when it is empty. */
static const struct hashmap_slot *top_place(const struct hashmap *map)
{
	const struct hashmap_slot *best = NULL;
	for (size_t i = 0; i < map->cap; i++) {
		const struct hashmap_slot *sl = &map->slots[i];
		if (sl->key && (!best || sl->value > best->value))
			best = sl;
	}
	return best;
}

/* A pool whose threads are all busy with tasks that mostly wait. */
static void undersized_finding(struct analysis_ctx *ctx, const struct pool *p, double wall_s,
			       double busy_s)
{
	const struct hashmap_slot *at = top_place(&p->work_at);
	double off = (double)p->working_off / (double)p->working_samples;
	long long n = (long long)p->threads;
	long long want = (long long)((double)n / (1.0 - off < 0.05 ? 0.05 : 1.0 - off) + 0.5);
	want = want < 2 * n ? 2 * n : want > UNDERSIZED_MAX_THREADS ? UNDERSIZED_MAX_THREADS : want;
	struct strbuf loc = STRBUF_INIT, title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
	if (at)
		strbuf_add(&loc, at->key, at->key_len);
	else
		strbuf_addf(&loc, "process %lld, threads %s", (long long)p->pid, p->example);
	strbuf_addf(&title, "Every thread of a pool of %lld (%s) is busy with tasks that wait %.0f%% "
			    "of the time",
		    n, p->example, 100.0 * off);
	strbuf_addf(&ev, "%lld threads named like %s in process %lld all worked at %lld of %lld "
			 "python ticks (%.1f s); %lld of their %lld working samples were off the "
			 "CPU (%.0f%%)",
		    n, p->example, (long long)p->pid, (long long)p->saturated, (long long)p->ticks,
		    busy_s, (long long)p->working_off, (long long)p->working_samples, 100.0 * off);
	if (at) {
		strbuf_addstr(&ev, "; the tasks wait most at ");
		strbuf_add(&ev, at->key, at->key_len);
	}
	strbuf_addf(&next, "Run more of the tasks at once: raise the pool's size from %lld to about "
			   "%lld (max_workers=), since each task waits %.0f%% of its time and more "
			   "of them in flight overlap the waits; or issue the calls with asyncio. "
			   "If they all wait on one shared thing (a lock, a server that takes one "
			   "request at a time), more workers will not help: that thing is the limit",
		    n, want, 100.0 * off);
	struct finding f = {
		.id = "concurrency.undersized_pool",
		.title = title.buf,
		.dimension = "concurrency",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "Thread pool too small for waiting work: all its threads are taken by "
			     "tasks that spend most of their time waiting, so the work queues "
			     "behind them while the CPUs idle",
		.next_step = next.buf,
		.validation = "target.wall_s falls and the pool's threads are no longer all busy",
		.blames_code = at ? FINDING_BLAMES_CODE : 0,
	};
	/* What more threads could save: the waiting share of the time it was full. */
	findings_add_time(ctx->findings, &f, busy_s * off * (1.0 - (double)n / (double)want),
			  wall_s);
	strbuf_release(&loc);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
}

static void pool_finding(struct analysis_ctx *ctx, const struct pool *p, double wall_s)
{
	const struct hashmap_slot *top = top_place(&p->wait_at);
	struct {
		const char *key;
		size_t len;
	} where = { top ? top->key : NULL, top ? top->key_len : 0 };
	struct strbuf loc = STRBUF_INIT, title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
	if (where.key)
		strbuf_add(&loc, where.key, where.len);
	else
		strbuf_addf(&loc, "process %lld, threads %s", (long long)p->pid, p->example);
	strbuf_addf(&title, "A pool of %lld threads (%s) never had more than %lld working at once",
		    (long long)p->threads, p->example, (long long)p->peak);
	strbuf_addf(&ev, "%lld threads named like %s in process %lld; over %lld python ticks at "
			 "most %lld of them worked at once (not waiting for work in a queue or "
			 "condition); %lld of their %lld samples worked (%.0f%%)",
		    (long long)p->threads, p->example, (long long)p->pid, (long long)p->ticks,
		    (long long)p->peak, (long long)p->working_samples, (long long)p->samples,
		    p->samples ? 100.0 * (double)p->working_samples / (double)p->samples : 0.0);
	if (where.key) {
		strbuf_addstr(&ev, "; they wait for work at ");
		strbuf_add(&ev, where.key, where.len);
	}
	strbuf_addf(&next, "Start about %lld workers instead of %lld (the most that ever "
			   "worked at once, with a little room): each idle thread still costs a "
			   "stack, a wake-up on every put and a share of the GIL's hand-offs; for "
			   "CPU work in CPython, more threads than cores never help",
		    (long long)(p->peak + 1 > 2 ? p->peak + 1 : 2), (long long)p->threads);
	struct finding f = {
		.id = "concurrency.oversized_pool",
		.title = title.buf,
		.dimension = "concurrency",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "Thread pool far larger than its work: most of its threads only ever "
			     "wait for work",
		.next_step = next.buf,
		.validation = "thread_pools[].threads falls to about peak_working",
		.impact_s = -1,
		.impact_bytes = -1,
		/* A cost of threads, not of time: ranked low, by the share idle. */
		.impact_pct = 2.0 * (1.0 - (double)p->peak / (double)p->threads),
		.blames_code = where.key ? FINDING_BLAMES_CODE : 0,
	};
	(void)wall_s;
	findings_add(ctx->findings, &f);
	strbuf_release(&loc);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
}

static void pools_release(struct pools *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->v[i].name);
		free(ps->v[i].example);
		hashmap_release(&ps->v[i].wait_at);
		hashmap_release(&ps->v[i].work_at);
	}
	free(ps->v);
	free(ps->working);
	free(ps->path);
	hashmap_release(&ps->by_tid);
	stack_set_release(&ps->ss);
}

static int thread_pools_run(struct analysis_ctx *ctx)
{
	struct pools ps = { .db = ctx->db, .ss = STACK_SET_INIT, .by_tid = HASHMAP_INIT,
			    .tick_t = INT64_MIN, .tick_pid = -1 };
	struct strbuf err = STRBUF_INIT;
	int ret = 0;
	if (!recording_has_table(ctx->db, "samples") || pools_load(&ps))
		goto out;
	if (!ps.n)
		goto out;
	if (stack_set_load(ctx->db, "python", &ps.ss, &err)) {
		ret = -1;
		goto out;
	}
	ps.path = xmalloc(STACK_DEPTH_MAX * sizeof(*ps.path));
	ps.working = xcalloc(ps.n, sizeof(*ps.working));
	if (stack_set_each_sample(ctx->db, &ps.ss, INT64_MIN, INT64_MAX, on_sample, &ps, &err)) {
		ret = -1;
		goto out;
	}
	tick_close(&ps);
	/* Again over the samples off the CPU: how much of the work waits. */
	struct stack_set all = ps.ss;
	ps.ss = (struct stack_set)STACK_SET_INIT;
	ps.off_pass = 1;
	if (!stack_set_load_filtered(ctx->db, "python", "on_cpu = 0", &ps.ss, &err))
		stack_set_each_sample(ctx->db, &ps.ss, INT64_MIN, INT64_MAX, on_sample, &ps, &err);
	stack_set_release(&ps.ss);
	ps.ss = all;
	int64_t rate = 0;
	if (recording_meta_int(ctx->db, "python_rate_hz", &rate) || rate <= 0)
		rate = 0;
	json_t *arr = json_array();
	double wall_s = report_wall_s(ctx->db);
	for (size_t i = 0; i < ps.n; i++) {
		const struct pool *p = &ps.v[i];
		double busy_s = rate ? (double)p->saturated / (double)rate : 0;
		if (p->ticks >= POOL_MIN_TICKS && p->working_samples > 0 && wall_s > 0 &&
		    (double)p->saturated >= UNDERSIZED_SATURATED * (double)p->ticks &&
		    busy_s >= UNDERSIZED_MIN_SHARE * wall_s && busy_s >= UNDERSIZED_MIN_S &&
		    (double)p->working_off >= UNDERSIZED_OFF_CPU * (double)p->working_samples)
			undersized_finding(ctx, p, wall_s, busy_s);
		if (p->threads < POOL_MIN_THREADS || !p->ticks)
			continue;
		if (json_array_size(arr) < POOLS_LISTED) {
			json_t *o = json_object();
			json_object_set_new(o, "pid", json_integer(p->pid));
			json_object_set_new(o, "name", report_string(p->example, strlen(p->example)));
			json_object_set_new(o, "threads", json_integer(p->threads));
			json_object_set_new(o, "peak_working", json_integer(p->peak));
			json_object_set_new(o, "ticks", json_integer(p->ticks));
			json_object_set_new(o, "working_samples", json_integer(p->working_samples));
			json_object_set_new(o, "samples", json_integer(p->samples));
			json_array_append_new(arr, o);
		}
		if (p->ticks >= POOL_MIN_TICKS &&
		    (double)p->peak <= POOL_MAX_SHARE * (double)p->threads)
			pool_finding(ctx, p, wall_s);
	}
	json_object_set_new(ctx->report, "thread_pools", arr);
out:
	strbuf_release(&err);
	pools_release(&ps);
	return ret;
}

static const char *const thread_pools_findings[] = {
	"concurrency.oversized_pool",
	"concurrency.undersized_pool",
	NULL,
};

const struct analysis_ops analysis_thread_pools = {
	.name = "thread_pools",
	.findings = thread_pools_findings,
	.run = thread_pools_run,
};
