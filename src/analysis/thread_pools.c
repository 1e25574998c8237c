/* thread_pools: Python thread pools far larger than their work. Report key
 * `thread_pools`; finding "concurrency.oversized_pool".
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
 * (the worker loop's get). */
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

struct pool {
	int64_t pid;
	char *name;	 /* the threads' name without its digits */
	char *example;	 /* one thread's name */
	int64_t threads; /* seen in the samples */
	int64_t peak, ticks, working_samples, samples;
	struct hashmap wait_at; /* "file:function:line" of the waiting own frame -> samples */
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
		if (!name || !*name)
			continue;
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
						     .wait_at = HASHMAP_INIT };
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
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->v[i].pid == ps->tick_pid && ps->v[i].threads >= POOL_MIN_THREADS) {
			ps->v[i].ticks++;
			if (ps->working[i] > ps->v[i].peak)
				ps->v[i].peak = ps->working[i];
		}
		ps->working[i] = 0;
	}
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
	if (!pi || ps->v[*pi].threads < POOL_MIN_THREADS)
		return;
	struct pool *p = &ps->v[*pi];
	size_t n = stack_set_path(&ps->ss, node, ps->path, STACK_DEPTH_MAX);
	if (!n)
		return;
	p->samples++;
	if (!stdlib_wait_frame(&ps->ss.frames[ps->path[n - 1]])) {
		ps->working[*pi]++;
		p->working_samples++;
		return;
	}
	for (size_t k = n; k-- > 0;) { /* the program's own frame that waits */
		const struct stack_frame_rec *f = &ps->ss.frames[ps->path[k]];
		if (f->file && !frame_is_python_stdlib(f->file)) {
			struct strbuf key = STRBUF_INIT;
			strbuf_addf(&key, "%s:%s:%d", f->file, f->function, f->line);
			int64_t *c = hashmap_get(&p->wait_at, key.buf, key.len);
			if (c)
				++*c;
			else
				hashmap_put(&p->wait_at, key.buf, key.len, 1);
			strbuf_release(&key);
			break;
		}
	}
}

static void pool_finding(struct analysis_ctx *ctx, const struct pool *p, double wall_s)
{
	struct {
		const char *key;
		size_t len;
		int64_t n;
	} where = { NULL, 0, 0 };
	for (size_t i = 0; i < p->wait_at.cap; i++) {
		const struct hashmap_slot *sl = &p->wait_at.slots[i];
		if (sl->key && sl->value > where.n) {
			where.key = sl->key;
			where.len = sl->key_len;
			where.n = sl->value;
		}
	}
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
	size_t big = 0;
	for (size_t i = 0; i < ps.n; i++)
		big += ps.v[i].threads >= POOL_MIN_THREADS;
	if (!big)
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
	json_t *arr = json_array();
	double wall_s = report_wall_s(ctx->db);
	for (size_t i = 0; i < ps.n; i++) {
		const struct pool *p = &ps.v[i];
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
	NULL,
};

const struct analysis_ops analysis_thread_pools = {
	.name = "thread_pools",
	.findings = thread_pools_findings,
	.run = thread_pools_run,
};
