/* torch: PyTorch on the CPU, for a program whose stacks go through libtorch.
 * Report key `torch`; findings "cpu.torch_row_loop",
 * "concurrency.torch_dataloader_starved", "concurrency.torch_oversubscribed".
 *
 * - operators: the on-CPU samples (mixed: Python with native below) charged
 *   to the program's own Python line (torch_file_is_own) and the outermost
 *   torch operator under it (torch_op_name: aten::addmm, AddmmBackward0).
 * - a row loop: the on-CPU samples of own lines inside a `for` over a
 *   tensor's rows that indexes them (torch_row_loop_at, from the source
 *   file), some of them with torch below: the operators, and the
 *   interpreter between them, run once per row where one batched call
 *   would do. Its share is of the samples outside DataLoader workers.
 * - a starved DataLoader: python samples (on and off the CPU) of a thread
 *   inside DataLoader's __next__, against that thread's samples while it
 *   iterated; the workers' own code (their dataset) is the cause named.
 * - oversubscribed intra-op threads: off-CPU time of threads that called a
 *   torch operator and wait inside the OpenMP runtime (the end of a parallel
 *   region) in a process with more OpenMP threads than CPUs; the location is
 *   the program's torch.set_num_threads call when its source has one.
 *
 * Nothing is added for a recording without libtorch frames. */
#include "analysis.h"
#include "torch_model.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPS_LISTED	  15
#define LOOP_MIN_SAMPLES  10
#define LOOP_MIN_SHARE	  0.02 /* of the run's on-CPU samples */
#define WAIT_MIN_SAMPLES  20
#define WAIT_MIN_SHARE	  0.2 /* of the iterating thread's time in its loop */
#define BARRIER_MIN_S	  0.2
#define BARRIER_MIN_SHARE 0.02 /* of the wall time */
#define SOURCE_FILES_MAX  50
#define SOURCE_FILE_MAX	  (2 * 1024 * 1024)
#define DATALOADER_FILE	  "torch/utils/data/dataloader.py"
#define WORKER_FILE	  "torch/utils/data/_utils/worker.py"

struct torch_an {
	sqlite3 *db;
	struct analysis_ctx *ctx;
	struct stack_set ss;
	size_t *path;
	struct hashmap ops;	    /* "file\tfunction\tline\top" -> on-CPU samples */
	struct hashmap lines;	    /* "file\tfunction\tline" -> on-CPU samples with torch below */
	struct hashmap own_lines;   /* "file\tfunction\tline" -> every on-CPU sample there */
	int64_t cpu_samples;	    /* on-CPU samples outside DataLoader workers */
	struct hashmap wait_at;	    /* "tid\tfile\tfunction\tline" -> samples in __next__ */
	struct hashmap thread_t;    /* tid -> first wait t_ns, "tid+" -> last */
	struct hashmap thread_all;  /* tid -> its samples between those */
	struct hashmap worker_at;   /* "file\tfunction\tline" of workers' own code -> samples */
	struct hashmap workers;	    /* tid of a worker with its own code on the CPU -> samples */
	int64_t worker_samples;	    /* every python sample inside _worker_loop */
	struct hashmap omp_threads; /* tid of an OpenMP worker -> 1 */
	struct hashmap barrier;	    /* tid of a caller -> ns waited in the OpenMP runtime */
	struct hashmap barrier_op;  /* operator -> ns */
	struct hashmap pid_of;	    /* tid -> pid */
	int pass;		    /* of the python samples: 1 the waits, 2 the windows */
};

static void count(struct hashmap *m, const void *key, size_t len, int64_t n)
{
	int64_t *v = hashmap_get(m, key, len);
	if (v)
		*v += n;
	else
		hashmap_put(m, key, len, n);
}

static int is_python(const struct stack_frame_rec *f)
{
	return f->kind && !strcmp(f->kind, "python");
}

static int file_ends(const char *file, const char *tail)
{
	size_t n = file ? strlen(file) : 0, k = strlen(tail);
	return n >= k && !strcmp(file + n - k, tail);
}

/* The innermost own Python frame in path[from, to), or to. */
static size_t own_frame(const struct torch_an *t, size_t from, size_t to)
{
	for (size_t k = to; k-- > from;) {
		const struct stack_frame_rec *f = &t->ss.frames[t->path[k]];
		if (is_python(f) && torch_file_is_own(f->file))
			return k;
	}
	return to;
}

static void frame_key(const struct stack_frame_rec *f, struct strbuf *key)
{
	strbuf_addf(key, "%s\t%s\t%d", f->file, f->function, f->line);
}

/* Whether path[0, n) runs inside a DataLoader worker process's loop. */
static int in_worker(const struct torch_an *t, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct stack_frame_rec *f = &t->ss.frames[t->path[k]];
		if (is_python(f) && file_ends(f->file, WORKER_FILE) &&
		    strstr(f->function, "_worker_loop"))
			return 1;
	}
	return 0;
}

/* The operators and the lines with torch below, from the on-CPU samples. */
static void ops_collect(struct torch_an *t)
{
	for (size_t i = 0; i < t->ss.nleaves; i++) {
		const struct stack_leaf *lf = &t->ss.leaves[i];
		size_t n = stack_set_path(&t->ss, lf->node, t->path, STACK_DEPTH_MAX);
		if (!in_worker(t, n))
			t->cpu_samples += lf->samples;
		size_t u = own_frame(t, 0, n);
		if (u == n)
			continue;
		struct strbuf op = STRBUF_INIT, key = STRBUF_INIT;
		int torch_below = 0;
		for (size_t k = u + 1; k < n; k++) {
			const struct stack_frame_rec *f = &t->ss.frames[t->path[k]];
			if (is_python(f))
				continue;
			torch_below |= torch_module_is_torch(f->module);
			if (!op.len)
				torch_op_name(f->function, &op);
		}
		const struct stack_frame_rec *own = &t->ss.frames[t->path[u]];
		frame_key(own, &key);
		count(&t->own_lines, key.buf, key.len, lf->samples);
		if (torch_below)
			count(&t->lines, key.buf, key.len, lf->samples);
		if (op.len) {
			strbuf_addf(&key, "\t%s", op.buf);
			count(&t->ops, key.buf, key.len, lf->samples);
		}
		strbuf_release(&op);
		strbuf_release(&key);
	}
}

/* Splits "a\tb\tc..." into at most n fields (pointers into a copy, owned by
 * the caller: free(fields[0])). */
static size_t key_split(const char *key, size_t len, char **fields, size_t n)
{
	char *s = xmalloc(len + 1);
	memcpy(s, key, len);
	s[len] = '\0';
	size_t k = 0;
	fields[k++] = s;
	for (char *p = s; *p && k < n; p++)
		if (*p == '\t') {
			*p = '\0';
			fields[k++] = p + 1;
		}
	for (size_t j = k; j < n; j++)
		fields[j] = s + len;
	return k;
}

static int by_value_desc(const void *a, const void *b)
{
	const struct hashmap_slot *x = *(const struct hashmap_slot *const *)a;
	const struct hashmap_slot *y = *(const struct hashmap_slot *const *)b;
	return (x->value < y->value) - (x->value > y->value);
}

/* The used slots of m, largest value first (free the array); *n their count. */
static const struct hashmap_slot **slots_sorted(const struct hashmap *m, size_t *n)
{
	const struct hashmap_slot **v = xmalloc((m->len + 1) * sizeof(*v));
	*n = 0;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			v[(*n)++] = &m->slots[i];
	qsort(v, *n, sizeof(*v), by_value_desc);
	return v;
}

static json_t *ops_json(struct torch_an *t)
{
	size_t n;
	const struct hashmap_slot **v = slots_sorted(&t->ops, &n);
	json_t *arr = json_array();
	for (size_t i = 0; i < n && i < OPS_LISTED; i++) {
		char *f[4];
		key_split(v[i]->key, v[i]->key_len, f, 4);
		json_t *o = json_object();
		json_object_set_new(o, "operator", report_string(f[3], strlen(f[3])));
		json_object_set_new(o, "file", report_string(f[0], strlen(f[0])));
		json_object_set_new(o, "function", report_string(f[1], strlen(f[1])));
		json_object_set_new(o, "line", json_integer(atoi(f[2])));
		json_object_set_new(o, "samples", json_integer(v[i]->value));
		json_object_set_new(
		    o, "share_pct",
		    json_real(100.0 * (double)v[i]->value / (double)t->cpu_samples));
		json_object_set_new(
		    o, "cpu_s",
		    json_real(report_sampled_s(t->db, "cpu_rate_hz", (double)v[i]->value, -1)));
		json_array_append_new(arr, o);
		free(f[0]);
	}
	free(v);
	return arr;
}

/* The source of an own file, or NULL (free it). */
static char *source_read(const char *file, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	if (!file || file[0] != '/' || file_read_strbuf(file, &sb, SOURCE_FILE_MAX) <= 0) {
		strbuf_release(&sb);
		return NULL;
	}
	*len = sb.len;
	return strbuf_detach(&sb);
}

/* The operators of lines [from, to] of file, most samples first, ", "-joined. */
static void loop_ops(struct torch_an *t, const char *file, int from, int to, struct strbuf *out)
{
	size_t n, listed = 0;
	const struct hashmap_slot **v = slots_sorted(&t->ops, &n);
	struct hashmap seen = HASHMAP_INIT;
	for (size_t i = 0; i < n && listed < 6; i++) {
		char *f[4];
		key_split(v[i]->key, v[i]->key_len, f, 4);
		int line = atoi(f[2]);
		if (!strcmp(f[0], file) && line >= from && line <= to &&
		    !hashmap_get(&seen, f[3], strlen(f[3]))) {
			hashmap_put(&seen, f[3], strlen(f[3]), 1);
			strbuf_addf(out, "%s%s", listed++ ? ", " : "", f[3]);
		}
		free(f[0]);
	}
	hashmap_release(&seen);
	free(v);
}

/* What a finding says, built up, then added by words_add. */
struct words {
	struct strbuf loc, title, ev, next;
};

/* Adds the finding w words (and releases them). */
static void words_add(struct torch_an *t, struct words *w, const char *id, const char *dimension,
		      const char *diagnosis, const char *validation, double impact_s,
		      int blames_code)
{
	struct finding fd = {
		.id = id,
		.title = w->title.buf,
		.dimension = dimension,
		.location = w->loc.buf,
		.evidence = w->ev.buf,
		.diagnosis = diagnosis,
		.next_step = w->next.buf,
		.validation = validation,
		.impact_s = impact_s,
		.impact_bytes = -1,
		.blames_code = blames_code,
	};
	findings_add(t->ctx->findings, &fd);
	strbuf_release(&w->loc);
	strbuf_release(&w->title);
	strbuf_release(&w->ev);
	strbuf_release(&w->next);
}

/* cpu.torch_row_loop: torch called once per row of a batch in a Python loop. */
static void row_loop_findings(struct torch_an *t)
{
	struct loop_acc {
		char *file, *function, *tensor, *var;
		int line, last;
		int64_t samples, torch_samples;
	} *loops = NULL;
	size_t nloops = 0;
	char *text = NULL, *text_file = NULL;
	size_t text_len = 0, n;
	const struct hashmap_slot **v = slots_sorted(&t->own_lines, &n);
	for (size_t i = 0; i < n; i++) {
		char *f[3];
		key_split(v[i]->key, v[i]->key_len, f, 3);
		if (!text_file || strcmp(text_file, f[0])) {
			free(text);
			free(text_file);
			text_file = xstrdup(f[0]);
			text = source_read(f[0], &text_len);
		}
		struct torch_row_loop loop;
		int line = atoi(f[2]);
		if (text && torch_row_loop_at(text, text_len, line, &loop)) {
			size_t j = 0;
			while (j < nloops &&
			       (loops[j].line != loop.line || strcmp(loops[j].file, f[0])))
				j++;
			if (j == nloops) {
				loops = xrealloc(loops, (nloops + 1) * sizeof(*loops));
				loops[nloops++] = (struct loop_acc){ xstrdup(f[0]),
								     xstrdup(f[1]),
								     xstrdup(loop.tensor),
								     xstrdup(loop.var),
								     loop.line,
								     line,
								     0,
								     0 };
			}
			loops[j].samples += v[i]->value;
			int64_t *torch = hashmap_get(&t->lines, v[i]->key, v[i]->key_len);
			if (torch)
				loops[j].torch_samples += *torch;
			if (line > loops[j].last)
				loops[j].last = line;
		}
		free(f[0]);
	}
	free(v);
	free(text);
	free(text_file);
	for (size_t j = 0; j < nloops; j++) {
		struct loop_acc *l = &loops[j];
		double share = t->cpu_samples ? (double)l->samples / (double)t->cpu_samples : 0;
		if (l->torch_samples && l->samples >= LOOP_MIN_SAMPLES && share >= LOOP_MIN_SHARE) {
			double s = report_sampled_s(t->db, "cpu_rate_hz", (double)l->samples, -1);
			struct words w = { STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT };
			struct strbuf ops = STRBUF_INIT;
			loop_ops(t, l->file, l->line, l->last, &ops);
			strbuf_addf(&w.loc, "%s:%s:%d", l->file, l->function, l->line);
			strbuf_addf(&w.title,
				    "A Python loop over the rows of %s calls torch operators "
				    "one row at a time",
				    l->tensor);
			strbuf_addf(&w.ev,
				    "%lld on-CPU samples (%.2f s, %.1f%% of the CPU samples "
				    "outside DataLoader workers) on lines %d-%d, inside "
				    "`for %s in range(...)` over %s's rows at line %d; %lld of "
				    "them in the torch operators those lines call",
				    (long long)l->samples, s, 100.0 * share, l->line + 1, l->last,
				    l->var, l->tensor, l->line, (long long)l->torch_samples);
			if (ops.len)
				strbuf_addf(&w.ev, "; operators: %s", ops.buf);
			strbuf_addf(&w.next,
				    "Vectorise: replace the loop at %s:%d with the same "
				    "operations on the whole batch at once, along dim=1 "
				    "with keepdim=True (%s.mean(dim=1, keepdim=True), "
				    "gather for per-row shifts, a (N, 1) tensor for per-row "
				    "factors), or torch.vmap over the row function: one "
				    "operator call per batch instead of one per row, so the "
				    "Python and dispatcher overhead is paid once",
				    l->file, l->line, l->tensor);
			words_add(
			    t, &w, "cpu.torch_row_loop", "cpu",
			    "Per-sample Python loop where a batched torch operator would do: "
			    "each row pays the interpreter and the dispatcher for a tiny kernel",
			    "torch.operators under these lines fall, and the step's CPU time "
			    "with them",
			    s, FINDING_BLAMES_CODE);
			strbuf_release(&ops);
		}
		free(l->file);
		free(l->function);
		free(l->tensor);
		free(l->var);
	}
	free(loops);
}

static void on_python(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct torch_an *t = arg;
	(void)weight;
	size_t n = stack_set_path(&t->ss, node, t->path, STACK_DEPTH_MAX);
	if (t->pass == 2) { /* the thread's samples within its waiting window */
		int64_t *first = hashmap_get(&t->thread_t, &tid, sizeof(tid));
		char k[sizeof(tid) + 1];
		memcpy(k, &tid, sizeof(tid));
		k[sizeof(tid)] = '+';
		int64_t *last = hashmap_get(&t->thread_t, k, sizeof(k));
		if (first && last && t_ns >= *first && t_ns <= *last)
			count(&t->thread_all, &tid, sizeof(tid), 1);
		return;
	}
	size_t next = n, worker = n;
	for (size_t k = 0; k < n; k++) {
		const struct stack_frame_rec *f = &t->ss.frames[t->path[k]];
		if (next == n && file_ends(f->file, DATALOADER_FILE) &&
		    strstr(f->function, "__next__"))
			next = k;
		if (worker == n && file_ends(f->file, WORKER_FILE) &&
		    strstr(f->function, "_worker_loop"))
			worker = k;
	}
	if (worker < n) {
		t->worker_samples++;
		size_t o = own_frame(t, worker + 1, n);
		if (o < n) {
			struct strbuf key = STRBUF_INIT;
			frame_key(&t->ss.frames[t->path[o]], &key);
			count(&t->worker_at, key.buf, key.len, 1);
			count(&t->workers, &tid, sizeof(tid), 1);
			strbuf_release(&key);
		}
		return;
	}
	size_t o = next < n ? own_frame(t, 0, next) : n;
	if (o >= next)
		return;
	struct strbuf key = STRBUF_INIT;
	strbuf_addf(&key, "%lld\t", (long long)tid);
	frame_key(&t->ss.frames[t->path[o]], &key);
	count(&t->wait_at, key.buf, key.len, 1);
	strbuf_release(&key);
	if (!hashmap_get(&t->thread_t, &tid, sizeof(tid)))
		hashmap_put(&t->thread_t, &tid, sizeof(tid), t_ns);
	char k[sizeof(tid) + 1];
	memcpy(k, &tid, sizeof(tid));
	k[sizeof(tid)] = '+';
	hashmap_put(&t->thread_t, k, sizeof(k), t_ns);
}

/* concurrency.torch_dataloader_starved; fills out (the report's dataloader). */
static void dataloader_finding(struct torch_an *t, json_t *out)
{
	size_t n, nw, nb;
	const struct hashmap_slot **v = slots_sorted(&t->wait_at, &n);
	const struct hashmap_slot **wk = slots_sorted(&t->worker_at, &nw);
	const struct hashmap_slot **busy = slots_sorted(&t->workers, &nb);
	if (!n)
		goto out;
	char *f[4], *g[3] = { NULL, NULL, NULL };
	key_split(v[0]->key, v[0]->key_len, f, 4);
	int64_t tid = atoll(f[0]), waited = 0;
	for (size_t i = 0; i < n; i++) /* every line this thread waited at */
		if (atoll(v[i]->key) == tid)
			waited += v[i]->value;
	int64_t *all = hashmap_get(&t->thread_all, &tid, sizeof(tid));
	double share = all && *all ? (double)waited / (double)*all : 0;
	double wait_s = report_sampled_s(t->db, "python_rate_hz", (double)waited, -1);
	json_object_set_new(out, "wait_s", json_real(wait_s));
	json_object_set_new(out, "wait_share_pct", json_real(100.0 * share));
	json_object_set_new(out, "workers", json_integer((json_int_t)nb));
	struct strbuf at = STRBUF_INIT;
	strbuf_addf(&at, "%s:%s:%s", f[1], f[2], f[3]);
	json_object_set_new(out, "loop", report_string(at.buf, at.len));
	int64_t worker_own = 0;
	for (size_t i = 0; i < nw; i++)
		worker_own += wk[i]->value;
	if (nw)
		key_split(wk[0]->key, wk[0]->key_len, g, 3);
	if (waited >= WAIT_MIN_SAMPLES && share >= WAIT_MIN_SHARE && nw) {
		struct words w = { STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT };
		/* the cause: the workers' own code, at its hottest line */
		strbuf_addf(&w.loc, "%s:%s:%s", g[0], g[1], g[2]);
		strbuf_addf(&w.title,
			    "The training loop waits %.0f%% of its time for the "
			    "DataLoader's next batch; its workers are busy in %s",
			    100.0 * share, g[1]);
		strbuf_addf(&w.ev,
			    "the loop at %s waited in DataLoader's __next__ for %.2f s "
			    "(%lld of its %lld samples, %.0f%%); %zu worker process%s ran "
			    "the program's own code in %lld of their %lld samples, most in "
			    "%s at line %s (%lld samples)",
			    at.buf, wait_s, (long long)waited, (long long)(all ? *all : 0),
			    100.0 * share, nb, nb == 1 ? "" : "es", (long long)worker_own,
			    (long long)t->worker_samples, g[1], g[2], (long long)wk[0]->value);
		strbuf_addf(&w.next,
			    "Make %s cheaper: build the samples once (in __init__, or "
			    "saved to disk) or with tensor operations instead of a Python "
			    "loop per element; or raise DataLoader's num_workers (%zu now) "
			    "up to the cores the step leaves free",
			    g[1], nb);
		words_add(t, &w, "concurrency.torch_dataloader_starved", "concurrency",
			  "Input-bound training: the DataLoader's workers make "
			  "batches slower than the step consumes them",
			  "torch.dataloader.wait_share_pct falls toward 0", wait_s,
			  FINDING_BLAMES_CODE);
	}
	strbuf_release(&at);
	free(f[0]);
	free(g[0]);
out:
	free(v);
	free(wk);
	free(busy);
}

static void on_offcpu(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight_ns)
{
	struct torch_an *t = arg;
	(void)t_ns;
	size_t n = stack_set_path(&t->ss, node, t->path, STACK_DEPTH_MAX);
	int omp = 0, torch = 0, outer_omp = -1;
	struct strbuf op = STRBUF_INIT;
	for (size_t k = 0; k < n; k++) {
		const struct stack_frame_rec *f = &t->ss.frames[t->path[k]];
		int is_omp = torch_module_is_openmp(f->module);
		omp |= is_omp;
		torch |= torch_module_is_torch(f->module);
		if (outer_omp < 0 && f->module && f->module[0] != '[' &&
		    !strstr(f->module, "libc.so") && !strstr(f->module, "libc-"))
			outer_omp = is_omp;
		if (!op.len)
			torch_op_name(f->function, &op);
	}
	if (omp && !torch && outer_omp == 1)
		hashmap_put(&t->omp_threads, &tid, sizeof(tid), 1);
	if (omp && torch) {
		count(&t->barrier, &tid, sizeof(tid), weight_ns);
		if (op.len)
			count(&t->barrier_op, op.buf, op.len, weight_ns);
	}
	strbuf_release(&op);
}

static void pids_load(struct torch_an *t)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(t->db, "SELECT pid, tid FROM threads", -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		if (!hashmap_get(&t->pid_of, &tid, sizeof(tid)))
			hashmap_put(&t->pid_of, &tid, sizeof(tid), pid);
	}
	sqlite3_finalize(st);
}

/* The program's torch.set_num_threads call (in its own Python files) that
 * asks for more threads than cpus, else its first: "file:function:line" in
 * loc and its argument; 0 when there is none. */
static int set_threads_call(struct torch_an *t, int64_t cpus, struct strbuf *loc, char arg[64])
{
	sqlite3_stmt *st;
	int found = 0, files = 0;
	if (sqlite3_prepare_v2(t->db, "SELECT DISTINCT file FROM frames WHERE kind = 'python'", -1,
			       &st, NULL) != SQLITE_OK)
		return 0;
	while (found < 2 && files < SOURCE_FILES_MAX && sqlite3_step(st) == SQLITE_ROW) {
		const char *file = (const char *)sqlite3_column_text(st, 0);
		size_t len;
		char *text, a[64];
		int line = 0;
		if (!torch_file_is_own(file) || !(text = source_read(file, &len)))
			continue;
		files++;
		while (found < 2 && torch_set_threads_find(text, len, line + 1, &line, a)) {
			char *end;
			long n = strtol(a, &end, 10);
			int over = end != a && !*end && n > cpus;
			if (found && !over)
				continue;
			strbuf_reset(loc);
			strbuf_addf(loc, "%s:", file);
			if (!torch_enclosing_def(text, len, line, loc))
				strbuf_addstr(loc, "<module>");
			strbuf_addf(loc, ":%d", line);
			memcpy(arg, a, sizeof(a));
			found = over ? 2 : 1;
		}
		free(text);
	}
	sqlite3_finalize(st);
	return found > 0;
}

/* concurrency.torch_oversubscribed; fills out (the report's intra_op). */
static void threads_finding(struct torch_an *t, json_t *out, size_t busy_workers)
{
	size_t n;
	const struct hashmap_slot **v = slots_sorted(&t->barrier, &n);
	int64_t cpus = 0;
	if (!n || recording_meta_int(t->db, "cpus_online", &cpus) || cpus <= 0)
		goto out;
	int64_t tid;
	memcpy(&tid, v[0]->key, sizeof(tid));
	int64_t *pp = hashmap_get(&t->pid_of, &tid, sizeof(tid));
	int64_t pid = pp ? *pp : tid, omp = 0;
	for (size_t i = 0; i < t->omp_threads.cap; i++) {
		const struct hashmap_slot *sl = &t->omp_threads.slots[i];
		int64_t otid, *op;
		if (!sl->key)
			continue;
		memcpy(&otid, sl->key, sizeof(otid));
		op = hashmap_get(&t->pid_of, &otid, sizeof(otid));
		omp += (op ? *op : otid) == pid;
	}
	double wait_s = (double)v[0]->value / 1e9, wall_s = report_wall_s(t->db);
	json_object_set_new(out, "pid", json_integer(pid));
	json_object_set_new(out, "openmp_threads", json_integer(omp));
	json_object_set_new(out, "cpus", json_integer(cpus));
	json_object_set_new(out, "barrier_wait_s", json_real(wait_s));
	if (omp + 1 <= cpus || wait_s < BARRIER_MIN_S ||
	    (wall_s > 0 && wait_s < BARRIER_MIN_SHARE * wall_s))
		goto out;
	struct words w = { STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT };
	struct strbuf ops = STRBUF_INIT;
	char arg[64] = "";
	int at_call = set_threads_call(t, cpus, &w.loc, arg);
	if (at_call)
		json_object_set_new(out, "set_num_threads_at", report_string(w.loc.buf, w.loc.len));
	else
		strbuf_addf(&w.loc, "process %lld", (long long)pid);
	size_t nops;
	const struct hashmap_slot **o = slots_sorted(&t->barrier_op, &nops);
	for (size_t i = 0; i < nops && i < 3; i++) {
		strbuf_addf(&ops, "%s", i ? ", " : "");
		strbuf_add(&ops, o[i]->key, o[i]->key_len);
		strbuf_addf(&ops, " %.2f s", (double)o[i]->value / 1e9);
	}
	free(o);
	strbuf_addf(&w.title,
		    "%lld intra-op threads for %lld CPUs: torch operators wait for "
		    "threads the CPUs cannot run",
		    (long long)omp + 1, (long long)cpus);
	strbuf_addf(&w.ev,
		    "process %lld ran %lld OpenMP worker threads besides its own for "
		    "%lld online CPUs%s; the threads that called torch operators waited "
		    "%.2f s (%.0f%% of the run) inside the OpenMP runtime for the rest of "
		    "their parallel regions",
		    (long long)pid, (long long)omp, (long long)cpus,
		    busy_workers ? ", shared with the DataLoader's worker processes" : "", wait_s,
		    wall_s > 0 ? 100.0 * wait_s / wall_s : 0.0);
	if (ops.len)
		strbuf_addf(&w.ev, " (%s)", ops.buf);
	if (at_call)
		strbuf_addf(&w.ev, "; the program sets torch.set_num_threads(%s) at %s", arg,
			    w.loc.buf);
	int64_t want = cpus - (int64_t)busy_workers;
	strbuf_addf(&w.next,
		    "Give torch at most the cores left to it: "
		    "torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) - "
		    "num_workers)) (here %lld)%s, or OMP_NUM_THREADS in the "
		    "environment; more intra-op threads than free cores make every "
		    "parallel operator wait for its slowest, descheduled thread",
		    (long long)(want > 1 ? want : 1), at_call ? " instead of the fixed count" : "");
	words_add(t, &w, "concurrency.torch_oversubscribed", "concurrency",
		  "Oversubscribed intra-op threads: more OpenMP threads than CPUs",
		  "torch.intra_op.barrier_wait_s falls toward 0", wait_s,
		  at_call ? FINDING_BLAMES_CODE : 0);
	strbuf_release(&ops);
out:
	free(v);
}

static int torch_present(sqlite3 *db)
{
	sqlite3_stmt *st;
	int found = 0;
	if (!recording_has_table(db, "frames") ||
	    sqlite3_prepare_v2(db,
			       "SELECT 1 FROM frames WHERE module LIKE '%/libtorch%' OR module "
			       "LIKE '%/libc10%' LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

static void torch_an_release(struct torch_an *t)
{
	stack_set_release(&t->ss);
	free(t->path);
	hashmap_release(&t->ops);
	hashmap_release(&t->lines);
	hashmap_release(&t->own_lines);
	hashmap_release(&t->wait_at);
	hashmap_release(&t->thread_t);
	hashmap_release(&t->thread_all);
	hashmap_release(&t->worker_at);
	hashmap_release(&t->workers);
	hashmap_release(&t->omp_threads);
	hashmap_release(&t->barrier);
	hashmap_release(&t->barrier_op);
	hashmap_release(&t->pid_of);
}

/* The three passes over the recording, into the report's torch object o. */
static int torch_collect(struct torch_an *t, json_t *o, struct strbuf *err)
{
	json_t *dl = json_object(), *intra = json_object();
	int ret = -1;
	/* operators and row loops, from the on-CPU samples */
	if (stack_set_load_on_cpu(t->db, &t->ss, NULL, err))
		goto out;
	ops_collect(t);
	json_object_set_new(o, "operators", ops_json(t));
	row_loop_findings(t);
	stack_set_release(&t->ss);
	t->ss = (struct stack_set)STACK_SET_INIT;
	/* the DataLoader, from every python sample */
	if (stack_set_load(t->db, "python", &t->ss, err))
		goto out;
	t->pass = 1;
	if (stack_set_each_sample(t->db, &t->ss, INT64_MIN, INT64_MAX, on_python, t, err))
		goto out;
	t->pass = 2;
	if (t->wait_at.len &&
	    stack_set_each_sample(t->db, &t->ss, INT64_MIN, INT64_MAX, on_python, t, err))
		goto out;
	dataloader_finding(t, dl);
	stack_set_release(&t->ss);
	t->ss = (struct stack_set)STACK_SET_INIT;
	/* intra-op threads, from the off-CPU intervals */
	pids_load(t);
	if (stack_set_load(t->db, "offcpu", &t->ss, err) ||
	    stack_set_each_sample(t->db, &t->ss, INT64_MIN, INT64_MAX, on_offcpu, t, err))
		goto out;
	threads_finding(t, intra, t->workers.len);
	ret = 0;
out:
	if (json_object_size(dl))
		json_object_set(o, "dataloader", dl);
	if (json_object_size(intra))
		json_object_set(o, "intra_op", intra);
	json_decref(dl);
	json_decref(intra);
	return ret;
}

static int torch_run(struct analysis_ctx *ctx)
{
	struct torch_an t = { .db = ctx->db, .ctx = ctx, .ss = STACK_SET_INIT };
	struct strbuf err = STRBUF_INIT;
	int ret = 0;
	if (!recording_has_table(ctx->db, "samples") || !torch_present(ctx->db))
		goto out;
	t.path = xmalloc(STACK_DEPTH_MAX * sizeof(*t.path));
	json_t *o = json_object();
	json_object_set_new(ctx->report, "torch", o);
	ret = torch_collect(&t, o, &err);
out:
	strbuf_release(&err);
	torch_an_release(&t);
	return ret;
}

static const char *const torch_findings[] = {
	"cpu.torch_row_loop",
	"concurrency.torch_dataloader_starved",
	"concurrency.torch_oversubscribed",
	NULL,
};

const struct analysis_ops analysis_torch = {
	.name = "torch",
	.findings = torch_findings,
	.run = torch_run,
};
