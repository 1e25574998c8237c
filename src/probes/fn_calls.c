/* fn_calls: uprobe entry and return events paired per thread into timed
 * calls, callers symbolized, rows written. */
#include "fn_calls.h"
#include "fn_table.h"
#include "../record/recorder.h"
#include "../symbols/elfsym.h"
#include "../symbols/maps.h"
#include "../symbols/symbolize.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define FN_DEPTH 64	      /* open calls kept per thread; deeper ones are counted */
#define FN_THREADS_MAX 65536  /* threads tracked; more are not timed */
#define FN_PROCS_MAX 4096     /* processes whose maps and load biases are kept */
#define FN_CALLERS_MAX 100000 /* distinct (target, process, address) callers cached */

struct fn_open {
	uint32_t target;
	int64_t t_ns;
};

struct fn_thread {
	int depth; /* may exceed FN_DEPTH: the deeper entries are not kept */
	struct fn_open st[FN_DEPTH];
};

struct fn_proc {
	pid_t pid;
	int maps_read;
	struct maps maps;
	int64_t *bias; /* per target: entry ip - its vaddr; bias_known says when set */
	uint8_t *bias_known;
};

struct fn_calls {
	struct recorder *rec;
	int64_t start_ns;
	struct fn_calls_target *targets;
	struct fn_calls_counts *counts;
	size_t n;
	sqlite3_stmt *ins_call, *ins_caller;
	struct hashmap thread_ids; /* tid -> index in threads */
	struct fn_thread **threads;
	size_t nthreads;
	struct fn_proc *procs;
	size_t nprocs;
	struct hashmap callers;	    /* (target, pid, ip) -> caller id, or -1 */
	struct hashmap caller_name; /* (target, function, file) -> caller id */
	int64_t next_caller;
	struct symbolizer *sym;
	int64_t rows;
};

struct fn_calls *fn_calls_new(struct recorder *rec, int64_t start_ns,
			      const struct fn_calls_target *targets, size_t n)
{
	struct fn_calls *fc = xcalloc(1, sizeof(*fc));
	fc->rec = rec;
	fc->start_ns = start_ns;
	fc->n = n;
	fc->targets = xcalloc(n ? n : 1, sizeof(*fc->targets));
	memcpy(fc->targets, targets, n * sizeof(*targets));
	fc->counts = xcalloc(n ? n : 1, sizeof(*fc->counts));
	sqlite3 *db = recorder_db(rec);
	if (!db || sqlite3_prepare_v2(db, FN_CALLS_INSERT, -1, &fc->ins_call, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, FN_CALLERS_INSERT, -1, &fc->ins_caller, NULL) != SQLITE_OK) {
		fn_calls_free(fc);
		return NULL;
	}
	fc->sym = symbolizer_new();
	return fc;
}

static struct fn_proc *proc_get(struct fn_calls *fc, pid_t pid)
{
	for (size_t i = 0; i < fc->nprocs; i++)
		if (fc->procs[i].pid == pid)
			return &fc->procs[i];
	if (fc->nprocs >= FN_PROCS_MAX)
		return NULL;
	if (!(fc->nprocs & (fc->nprocs + 1)) || !fc->nprocs)
		fc->procs = xrealloc(fc->procs, (2 * fc->nprocs + 2) * sizeof(*fc->procs));
	struct fn_proc *p = &fc->procs[fc->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->maps = (struct maps)MAPS_INIT;
	p->bias = xcalloc(fc->n ? fc->n : 1, sizeof(*p->bias));
	p->bias_known = xcalloc(fc->n ? fc->n : 1, 1);
	return p;
}

void fn_calls_process_seen(struct fn_calls *fc, pid_t pid)
{
	struct fn_proc *p = proc_get(fc, pid);
	if (!p)
		return;
	maps_clear(&p->maps);
	p->maps_read = maps_read_pid(&p->maps, pid) > 0;
}

static struct fn_thread *thread_get(struct fn_calls *fc, uint32_t tid)
{
	int64_t *at = hashmap_get(&fc->thread_ids, &tid, sizeof(tid));
	if (at)
		return fc->threads[*at];
	if (fc->nthreads >= FN_THREADS_MAX)
		return NULL;
	if (!(fc->nthreads & (fc->nthreads + 1)) || !fc->nthreads)
		fc->threads = xrealloc(fc->threads, (2 * fc->nthreads + 2) * sizeof(*fc->threads));
	fc->threads[fc->nthreads] = xcalloc(1, sizeof(struct fn_thread));
	hashmap_put(&fc->thread_ids, &tid, sizeof(tid), (int64_t)fc->nthreads);
	return fc->threads[fc->nthreads++];
}

/* The (module, file offset) of ip in p: its maps, else the probed file. */
static int locate(struct fn_calls *fc, struct fn_proc *p, uint32_t target, uint64_t ip, int *module,
		  uint64_t *offset)
{
	const struct map_entry *e = maps_find(&p->maps, ip);
	if (!e && p->pid && !p->maps_read) {
		fn_calls_process_seen(fc, p->pid);
		e = maps_find(&p->maps, ip);
	}
	if (e && e->path[0]) {
		*module = symbolizer_module(fc->sym, e->path, p->pid);
		*offset = ip - e->start + e->pgoff;
		return *module < 0 ? -1 : 0;
	}
	const struct fn_calls_target *t = &fc->targets[target];
	if (!p->bias_known[target] ||
	    elfsym_vaddr_offset(t->file, ip - (uint64_t)p->bias[target], offset))
		return -1;
	*module = symbolizer_module(fc->sym, t->file, 0);
	return *module < 0 ? -1 : 0;
}

/* The caller id of a return to ip in p (-1: unknown), written once. */
static int64_t caller_of(struct fn_calls *fc, struct fn_proc *p, uint32_t target, uint64_t ip)
{
	struct {
		uint32_t target, pid;
		uint64_t ip;
	} key = {target, p ? (uint32_t)p->pid : 0, ip};
	int64_t *known = hashmap_get(&fc->callers, &key, sizeof(key));
	if (known)
		return *known;
	int64_t id = -1;
	int module;
	uint64_t off;
	struct sym_frame f[SYMBOLIZER_MAX_INLINE + 1];
	if (p && fc->callers.len < FN_CALLERS_MAX && !locate(fc, p, target, ip, &module, &off)) {
		/* ip - 1: inside the call instruction, on the line that called. */
		symbolizer_lookup(fc->sym, module, off ? off - 1 : 0, f, 1);
		struct strbuf name = STRBUF_INIT;
		strbuf_add(&name, &key.target, sizeof(key.target));
		strbuf_addf(&name, "%s%c%s", f[0].function, 0, f[0].file ? f[0].file : "");
		int64_t *have = hashmap_get(&fc->caller_name, name.buf, name.len);
		if (have) {
			id = *have;
		} else {
			id = ++fc->next_caller;
			hashmap_put(&fc->caller_name, name.buf, name.len, id);
			sqlite3_stmt *q = fc->ins_caller;
			sqlite3_bind_int(q, 1, fc->targets[target].id);
			sqlite3_bind_int64(q, 2, id);
			sqlite3_bind_text(q, 3, f[0].function, -1, SQLITE_TRANSIENT);
			if (f[0].file)
				sqlite3_bind_text(q, 4, f[0].file, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_text(q, 4, symbolizer_module_path(fc->sym, module), -1,
						  SQLITE_TRANSIENT);
			if (f[0].line > 0)
				sqlite3_bind_int(q, 5, f[0].line);
			else
				sqlite3_bind_null(q, 5);
			recorder_step(fc->rec, q);
		}
		strbuf_release(&name);
	}
	if (fc->callers.len < FN_CALLERS_MAX)
		hashmap_put(&fc->callers, &key, sizeof(key), id);
	return id;
}

static void call_write(struct fn_calls *fc, const struct fn_event *ev, int64_t start_t,
		       int64_t caller)
{
	struct fn_calls_counts *c = &fc->counts[ev->target];
	if (fc->rows >= FN_TABLE_ROWS_MAX) {
		c->rows_dropped++;
		return;
	}
	sqlite3_stmt *q = fc->ins_call;
	sqlite3_bind_int(q, 1, fc->targets[ev->target].id);
	sqlite3_bind_int64(q, 2, ev->pid);
	sqlite3_bind_int64(q, 3, ev->tid);
	sqlite3_bind_int64(q, 4, start_t - fc->start_ns);
	sqlite3_bind_int64(q, 5, ev->t_ns - start_t);
	sqlite3_bind_null(q, 6);
	if (caller >= 0)
		sqlite3_bind_int64(q, 7, caller);
	else
		sqlite3_bind_null(q, 7);
	recorder_step(fc->rec, q);
	fc->rows++;
	c->timed++;
}

void fn_calls_event(struct fn_calls *fc, const struct fn_event *ev)
{
	if (ev->target >= fc->n)
		return;
	struct fn_calls_counts *c = &fc->counts[ev->target];
	struct fn_thread *th = thread_get(fc, ev->tid);
	struct fn_proc *p = proc_get(fc, (pid_t)ev->pid);
	if (!ev->is_return) {
		c->entries++;
		if (p && !p->bias_known[ev->target]) {
			p->bias[ev->target] = (int64_t)(ev->ip - fc->targets[ev->target].vaddr);
			p->bias_known[ev->target] = 1;
		}
		if (th && th->depth < FN_DEPTH)
			th->st[th->depth] = (struct fn_open){ev->target, ev->t_ns};
		if (th)
			th->depth++;
		return;
	}
	if (!th || !th->depth) {
		c->unpaired_returns++;
		return;
	}
	if (th->depth > FN_DEPTH) { /* the entry of a call too deep to keep */
		th->depth--;
		return;
	}
	/* The innermost open call of this target; those above it lost their
	 * return (a longjmp, a lost record) and are dropped. */
	int at = th->depth - 1;
	while (at >= 0 && th->st[at].target != ev->target)
		at--;
	if (at < 0) {
		c->unpaired_returns++;
		return;
	}
	int64_t start_t = th->st[at].t_ns;
	for (int k = at + 1; k < th->depth; k++)
		fc->counts[th->st[k].target].open_at_end++;
	th->depth = at;
	call_write(fc, ev, start_t, caller_of(fc, p, ev->target, ev->ip));
}

void fn_calls_end(struct fn_calls *fc)
{
	for (size_t i = 0; i < fc->nthreads; i++) {
		struct fn_thread *th = fc->threads[i];
		for (int k = 0; k < th->depth && k < FN_DEPTH; k++)
			fc->counts[th->st[k].target].open_at_end++;
		th->depth = 0;
	}
}

void fn_calls_counts(const struct fn_calls *fc, size_t i, struct fn_calls_counts *out)
{
	*out = i < fc->n ? fc->counts[i] : (struct fn_calls_counts){0};
}

void fn_calls_free(struct fn_calls *fc)
{
	if (!fc)
		return;
	sqlite3_finalize(fc->ins_call);
	sqlite3_finalize(fc->ins_caller);
	for (size_t i = 0; i < fc->nthreads; i++)
		free(fc->threads[i]);
	free(fc->threads);
	for (size_t i = 0; i < fc->nprocs; i++) {
		maps_release(&fc->procs[i].maps);
		free(fc->procs[i].bias);
		free(fc->procs[i].bias_known);
	}
	free(fc->procs);
	hashmap_release(&fc->thread_ids);
	hashmap_release(&fc->callers);
	hashmap_release(&fc->caller_name);
	if (fc->sym)
		symbolizer_free(fc->sym);
	free(fc->targets);
	free(fc->counts);
	free(fc);
}
