/* thread_samples: the flame graph's samples per thread, in time order, for
 * the pprof and speedscope exporters (thread_samples.h). */
#include "thread_samples.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

struct grouping {
	struct thread_samples *ts;
	struct hashmap index; /* (pid, tid) -> index in ts->threads */
	size_t alloc;
};

static struct sampled_thread *thread_of(struct grouping *g, int64_t pid, int64_t tid)
{
	int64_t key[2] = {pid, tid};
	int64_t *ix = hashmap_get(&g->index, key, sizeof(key));
	struct thread_samples *ts = g->ts;
	if (ix)
		return &ts->threads[*ix];
	if (ts->nthreads == g->alloc) {
		g->alloc = g->alloc ? 2 * g->alloc : 8;
		ts->threads = xrealloc(ts->threads, g->alloc * sizeof(*ts->threads));
	}
	struct sampled_thread *th = &ts->threads[ts->nthreads];
	*th = (struct sampled_thread){.pid = pid, .tid = tid};
	hashmap_put(&g->index, key, sizeof(key), (int64_t)ts->nthreads++);
	return th;
}

static void sample_add(void *arg, const struct stack_sample *s)
{
	struct sampled_thread *th = thread_of(arg, s->pid, s->tid);
	if (th->n == th->alloc) {
		th->alloc = th->alloc ? 2 * th->alloc : 64;
		th->v = xrealloc(th->v, th->alloc * sizeof(*th->v));
	}
	th->v[th->n++] = (struct thread_sample){s->t_ns, s->node, s->weight};
}

/* Names the threads that were sampled, from the threads table. */
static void names_read(sqlite3 *db, struct grouping *g)
{
	sqlite3_stmt *st = recording_prepare(db, "threads", "SELECT pid, tid, name FROM threads");
	if (!st)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t key[2] = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
		int64_t *ix = hashmap_get(&g->index, key, sizeof(key));
		const char *name = (const char *)sqlite3_column_text(st, 2);
		struct sampled_thread *th = ix ? &g->ts->threads[*ix] : NULL;
		if (th && name && *name && !th->name)
			th->name = xstrndup(name, strnlen(name, STACK_NAME_MAX));
	}
	sqlite3_finalize(st);
}

static int thread_cmp(const void *a, const void *b)
{
	const struct sampled_thread *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int64_t meta_or_zero(sqlite3 *db, const char *key)
{
	int64_t v = 0;
	return recording_meta_int(db, key, &v) || v < 0 ? 0 : v;
}

int thread_samples_load(sqlite3 *db, struct thread_samples *ts, struct strbuf *err)
{
	*ts = (struct thread_samples)THREAD_SAMPLES_INIT;
	ts->mode = stack_mode_of(db);
	ts->source = "cpu";
	if (stack_set_load_mode(db, ts->mode, &ts->set, &ts->source, err) < 0)
		return -1;
	int64_t hz =
	    meta_or_zero(db, !strcmp(ts->source, "python") ? "python_rate_hz" : "cpu_rate_hz");
	ts->period_ns = hz > 0 ? (1000000000 + hz / 2) / hz : 0;
	ts->start_unix_ns = meta_or_zero(db, "start_unix_ns");
	ts->wall_ns = meta_or_zero(db, "wall_ns");
	struct grouping g = {.ts = ts, .index = HASHMAP_INIT};
	int rc = 0;
	if (ts->set.total_samples)
		rc = stack_set_each_sample_of(db, &ts->set, sample_add, &g, err);
	if (!rc) {
		names_read(db, &g);
		if (ts->nthreads)
			qsort(ts->threads, ts->nthreads, sizeof(*ts->threads), thread_cmp);
	}
	hashmap_release(&g.index);
	if (rc)
		thread_samples_release(ts);
	return rc;
}

void thread_samples_release(struct thread_samples *ts)
{
	for (size_t i = 0; i < ts->nthreads; i++) {
		free(ts->threads[i].name);
		free(ts->threads[i].v);
	}
	free(ts->threads);
	stack_set_release(&ts->set);
	*ts = (struct thread_samples)THREAD_SAMPLES_INIT;
}
