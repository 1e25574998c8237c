/* hotspots: where the on-CPU samples are, by function (self and total), by
 * call path (a context-sensitive call tree) and by line, with a finding when
 * one function dominates. Reads the samples of the recording's mode
 * (stack_set_load_mode: cpu reads "mixed", "cpu" or on-CPU "python" samples;
 * wall every "python" sample; gil those of the thread holding the GIL). */
#include "analysis.h"
#include "frames.h"
#include "py_patterns.h"
#include "hwcounters.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOTSPOTS_MAX 20
#define HOT_FUNCS_FOR_LINES 5
#define HOT_LINES_MAX 10
#define CALL_TREE_MAX 60
#define CALL_TREE_MIN_PCT 1.0
#define CALL_TREE_DEPTH_MAX 64
#define DOMINANT_SELF_PCT 20.0
/* A function whose samples are this much system code it calls gets a finding
 * about that cost (page faults, system calls, copies), not about its own code. */
#define CHARGED_SYSTEM_SHARE 0.4
#define CHARGED_LEAVES_NAMED 3
#define CHARGED_FAULTS_SHARE 0.25 /* of the system part: page faults are the cause */
/* A Python function whose writes to an unbuffered file take this share of
 * the samples, and this share of the samples charged to it, gets a finding
 * about the missing buffer. */
#define UNBUFFERED_MIN_PCT 10.0
#define UNBUFFERED_MIN_SHARE 0.25

struct func_count {
	size_t func;
	int64_t self, total;
	size_t last_leaf; /* leaf index + 1 that last counted total: once per sample */
	int best_line;	  /* the line with most self samples, or any line seen */
	int64_t best_line_samples;
	/* Samples charged to it as the nearest frame of the program's own code
	 * (frames.h), by what the system frames under it did; own_line is the
	 * line it was at in the heaviest such stack. */
	int64_t charged[FRAME_COST_N], charged_total;
	int own_line;
	int64_t own_line_samples;
};

struct line_count {
	size_t func;
	int line;
	int64_t samples;
};

struct hot {
	const struct stack_set *ss;
	struct func_count *funcs; /* indexed by func */
	struct line_count *lines;
	size_t nlines, lines_alloc;
	int64_t total;
};

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

static void count_lines(struct hot *h, struct hashmap *index, size_t func, int line, int64_t n)
{
	int64_t key[2] = { (int64_t)func, line };
	int64_t *found = hashmap_get(index, key, sizeof(key));
	if (!found) {
		if (h->nlines == h->lines_alloc) {
			h->lines_alloc = h->lines_alloc ? 2 * h->lines_alloc : 64;
			h->lines = xrealloc(h->lines, h->lines_alloc * sizeof(*h->lines));
		}
		h->lines[h->nlines] = (struct line_count){ func, line, 0 };
		found = hashmap_put(index, key, sizeof(key), (int64_t)h->nlines++);
	}
	h->lines[*found].samples += n;
}

/* Charges a stack's samples to its nearest own frame, by what the frames
 * under that frame did. */
static void charge_own(struct hot *h, const size_t *path, size_t n, int64_t samples)
{
	size_t k = frame_own_index(h->ss, path, n);
	if (k == n)
		return;
	const char *names[STACK_DEPTH_MAX];
	size_t m = 0;
	int interpreter = 0;
	for (size_t i = k + 1; i < n; i++) {
		const struct stack_frame_rec *fr = &h->ss->frames[path[i]];
		names[m++] = fr->function;
		interpreter |= frame_is_interpreter(fr->module);
	}
	enum frame_cost cost = frame_cost_of(names, m);
	if (interpreter && cost == FRAME_COST_OTHER)
		cost = FRAME_COST_INTERPRETER;
	const struct stack_frame_rec *fr = &h->ss->frames[path[k]];
	struct func_count *fc = &h->funcs[fr->func];
	fc->charged[cost] += samples;
	fc->charged_total += samples;
	if (samples > fc->own_line_samples && fr->line > 0) {
		fc->own_line = fr->line;
		fc->own_line_samples = samples;
	}
}

/* Self counts the leaf's function; total counts each function on the stack
 * once per sample, however often recursion repeats it. */
static void hot_count(struct hot *h, const struct stack_set *ss)
{
	struct hashmap line_index = HASHMAP_INIT;
	size_t *path = xmalloc(STACK_DEPTH_MAX * sizeof(*path));
	h->ss = ss;
	h->funcs = xcalloc(ss->nfuncs ? ss->nfuncs : 1, sizeof(*h->funcs));
	for (size_t f = 0; f < ss->nfuncs; f++)
		h->funcs[f].func = f;
	h->total = ss->total_samples;
	for (size_t l = 0; l < ss->nleaves; l++) {
		const struct stack_leaf *leaf = &ss->leaves[l];
		size_t n = stack_set_path(ss, leaf->node, path, STACK_DEPTH_MAX);
		for (size_t k = 0; k < n; k++) {
			const struct stack_frame_rec *fr = &ss->frames[path[k]];
			struct func_count *fc = &h->funcs[fr->func];
			if (!fc->best_line)
				fc->best_line = fr->line;
			if (fc->last_leaf == l + 1)
				continue;
			fc->last_leaf = l + 1;
			fc->total += leaf->samples;
		}
		if (!n)
			continue;
		const struct stack_frame_rec *leaf_fr = &ss->frames[path[n - 1]];
		h->funcs[leaf_fr->func].self += leaf->samples;
		count_lines(h, &line_index, leaf_fr->func, leaf_fr->line, leaf->samples);
		charge_own(h, path, n, leaf->samples);
	}
	for (size_t i = 0; i < h->nlines; i++) {
		struct func_count *fc = &h->funcs[h->lines[i].func];
		if (h->lines[i].line > 0 && h->lines[i].samples > fc->best_line_samples) {
			fc->best_line = h->lines[i].line;
			fc->best_line_samples = h->lines[i].samples;
		}
	}
	free(path);
	hashmap_release(&line_index);
}

static void hot_release(struct hot *h)
{
	free(h->funcs);
	free(h->lines);
}

static const struct stack_set *cmp_ss;

static int func_cmp(const void *a, const void *b)
{
	const struct func_count *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(cmp_ss->funcs[x->func].function, cmp_ss->funcs[y->func].function);
}

static int line_cmp(const void *a, const void *b)
{
	const struct line_count *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->line - y->line;
}

static json_t *str_or_null(const char *s)
{
	return s ? report_string(s, strlen(s)) : json_null();
}

static void set_func_fields(json_t *o, const struct stack_func *fn, int line)
{
	json_object_set_new(o, "function", str_or_null(fn->function));
	json_object_set_new(o, "file", str_or_null(fn->file));
	json_object_set_new(o, "line", line > 0 ? json_integer(line) : json_null());
	json_object_set_new(o, "module", str_or_null(fn->module));
}

/* Functions sorted by self, then total; the caller frees. */
static struct func_count *ranked_funcs(const struct hot *h)
{
	struct func_count *v = xmalloc((h->ss->nfuncs ? h->ss->nfuncs : 1) * sizeof(*v));
	memcpy(v, h->funcs, h->ss->nfuncs * sizeof(*v));
	cmp_ss = h->ss;
	qsort(v, h->ss->nfuncs, sizeof(*v), func_cmp);
	return v;
}

static json_t *hotspots_json(const struct hot *h, const struct func_count *ranked)
{
	json_t *list = json_array();
	for (size_t i = 0; i < h->ss->nfuncs && i < HOTSPOTS_MAX; i++) {
		const struct func_count *fc = &ranked[i];
		if (!fc->total)
			break;
		json_t *o = json_object();
		set_func_fields(o, &h->ss->funcs[fc->func], fc->best_line);
		json_object_set_new(o, "self_pct", json_real(pct(fc->self, h->total)));
		json_object_set_new(o, "total_pct", json_real(pct(fc->total, h->total)));
		json_object_set_new(o, "samples", json_integer(fc->self));
		json_object_set_new(o, "total_samples", json_integer(fc->total));
		json_array_append_new(list, o);
	}
	return list;
}

/* The hottest lines of the hottest functions (by self samples at the leaf). */
static json_t *hot_lines_json(struct hot *h, const struct func_count *ranked)
{
	json_t *list = json_array();
	if (h->nlines)
		qsort(h->lines, h->nlines, sizeof(*h->lines), line_cmp);
	size_t shown = 0;
	for (size_t i = 0; i < h->nlines && shown < HOT_LINES_MAX; i++) {
		const struct line_count *lc = &h->lines[i];
		int hot = 0;
		for (size_t k = 0; k < HOT_FUNCS_FOR_LINES && k < h->ss->nfuncs; k++)
			hot |= ranked[k].self > 0 && ranked[k].func == lc->func;
		if (!hot || lc->line <= 0)
			continue;
		json_t *o = json_object();
		set_func_fields(o, &h->ss->funcs[lc->func], lc->line);
		json_object_set_new(o, "samples", json_integer(lc->samples));
		json_object_set_new(o, "pct", json_real(pct(lc->samples, h->total)));
		json_object_set_new(o, "function_pct",
				    json_real(pct(lc->samples, h->funcs[lc->func].self)));
		json_array_append_new(list, o);
		shown++;
	}
	return list;
}

/* Depth first, heaviest child first, down to CALL_TREE_MIN_PCT. */
static void call_tree_walk(const struct stack_tree *t, const struct stack_set *ss, size_t i,
			   json_t *path, json_t *out, int64_t total)
{
	size_t n;
	size_t *kids = stack_tree_children(t, ss, i, &n);
	for (size_t k = 0; k < n && json_array_size(out) < CALL_TREE_MAX; k++) {
		const struct stack_tree_node *nd = &t->v[kids[k]];
		if (pct(nd->total, total) < CALL_TREE_MIN_PCT)
			break; /* sorted: the rest are smaller */
		const struct stack_func *fn = &ss->funcs[nd->func];
		json_t *o = json_object();
		json_t *p = json_copy(path);
		json_array_append_new(p, str_or_null(fn->function));
		set_func_fields(o, fn, 0);
		json_object_del(o, "line");
		json_object_set_new(o, "depth", json_integer(nd->depth));
		json_object_set_new(o, "path", json_incref(p));
		json_object_set_new(o, "self_pct", json_real(pct(nd->self, total)));
		json_object_set_new(o, "total_pct", json_real(pct(nd->total, total)));
		json_object_set_new(o, "samples", json_integer(nd->total));
		json_array_append_new(out, o);
		if (nd->depth < CALL_TREE_DEPTH_MAX)
			call_tree_walk(t, ss, kids[k], p, out, total);
		json_decref(p);
	}
	free(kids);
}

static json_t *call_tree_json(const struct stack_set *ss)
{
	struct stack_tree t = STACK_TREE_INIT;
	stack_tree_build(ss, 0, &t);
	json_t *path = json_array(), *out = json_array();
	call_tree_walk(&t, ss, 0, path, out, t.v[0].total);
	json_decref(path);
	stack_tree_release(&t);
	return out;
}

static void location(struct strbuf *sb, const struct stack_func *fn, int line)
{
	if (fn->file)
		strbuf_addf(sb, "%s:", fn->file);
	else if (fn->module)
		strbuf_addf(sb, "%s:", fn->module);
	strbuf_addstr(sb, fn->function);
	if (line > 0)
		strbuf_addf(sb, ":%d", line);
}

/* Samples charged to fc that ran system code (not its own, nor the
 * interpreter's C code under its Python line). */
static int64_t system_charged(const struct func_count *fc)
{
	return fc->charged_total - fc->charged[FRAME_COST_OWN] -
	       fc->charged[FRAME_COST_INTERPRETER];
}

static void system_leaves(const struct hot *h, size_t func, struct strbuf *out);

/* Samples charged to func that ran code under it, by function (indexed by
 * func; free it): the innermost frame's (leaves) or the frame right under
 * func's (its callees). */
static int64_t *charged_under(const struct hot *h, size_t func, int leaves)
{
	int64_t *by = xcalloc(h->ss->nfuncs ? h->ss->nfuncs : 1, sizeof(*by));
	size_t *path = xmalloc(STACK_DEPTH_MAX * sizeof(*path));
	for (size_t l = 0; l < h->ss->nleaves; l++) {
		size_t n = stack_set_path(h->ss, h->ss->leaves[l].node, path, STACK_DEPTH_MAX);
		size_t k = frame_own_index(h->ss, path, n);
		if (k + 1 < n && h->ss->frames[path[k]].func == func)
			by[h->ss->frames[path[leaves ? n - 1 : k + 1]].func] += h->ss->leaves[l].samples;
	}
	free(path);
	return by;
}

/* The calls a Python function's own line makes, heaviest first, as the
 * program names them: "json.dumps 31%, json.loads 14%" (shares of every
 * sample charged to func that ran under a call). Returns the samples the
 * named calls stand for. */
static int64_t own_calls(const struct hot *h, size_t func, struct strbuf *out)
{
	int64_t *by_callee = charged_under(h, func, 0);
	int64_t named = 0;
	for (int shown = 0; shown < CHARGED_LEAVES_NAMED; shown++) {
		size_t best = 0;
		for (size_t f = 1; f < h->ss->nfuncs; f++)
			if (by_callee[f] > by_callee[best])
				best = f;
		if (!by_callee[best] || pct(by_callee[best], h->total) < 1.0)
			break;
		const struct stack_func *fn = &h->ss->funcs[best];
		strbuf_addstr(out, shown ? ", " : "");
		if (fn->kind && !strcmp(fn->kind, "python"))
			frame_python_name(fn->function, fn->file, out);
		else if (!frame_c_python_name(fn->function, out))
			strbuf_addstr(out, fn->function);
		strbuf_addf(out, " %.0f%%", pct(by_callee[best], h->total));
		named += by_callee[best];
		by_callee[best] = 0;
	}
	free(by_callee);
	return named;
}

/* Adds f, a finding about the program's code whose stake is sampled time:
 * stake_s of the run's wall_s (share_pct of the samples when the run's
 * length is unknown). */
static void sampled_finding_add(struct analysis_ctx *ctx, struct finding *f, double wall_s,
				double stake_s, double share_pct)
{
	f->impact_s = wall_s > 0 ? stake_s : -1;
	f->impact_bytes = -1;
	f->impact_pct = wall_s > 0 ? 100.0 * stake_s / wall_s : share_pct;
	f->blames_code = FINDING_BLAMES_CODE;
	findings_add(ctx->findings, f);
}

/* rate_key: the meta key of the samples' rate, NULL when they count an event
 * (report_sampled_s says what is at stake then). charged: top's counts are
 * what is charged to it (its own code and the code it runs through), said in
 * the evidence with the functions under it. */
static void dominant_finding(struct analysis_ctx *ctx, const struct hot *h,
			     const struct func_count *top, const char *source, const char *rate_key,
			     int charged, const struct py_pattern *search)
{
	double self = pct(top->self, h->total);
	if (self < DOMINANT_SELF_PCT || h->total < 10)
		return;
	double wall_s = report_wall_s(ctx->db);
	double stake_s = report_sampled_s(ctx->db, rate_key, (double)top->self, self);
	const struct stack_func *fn = &h->ss->funcs[top->func];
	struct strbuf title = STRBUF_INIT, loc = STRBUF_INIT, ev = STRBUF_INIT;
	strbuf_addf(&title, "%s takes %.0f%% of the %s samples", fn->function, self, source);
	location(&loc, fn, top->best_line);
	strbuf_addf(&ev, "%s: self %.1f%% (%lld of %lld %s samples), total %.1f%%", fn->function,
		    self, (long long)top->self, (long long)h->total, source,
		    pct(top->total, h->total));
	struct strbuf calls = STRBUF_INIT;
	int64_t in_calls = 0;
	if (charged && fn->kind && !strcmp(fn->kind, "python"))
		in_calls = own_calls(h, top->func, &calls);
	if (charged) {
		strbuf_addf(&ev, "; self counts the code it runs through: its own %.1f%%, the "
				 "interpreter's C code %.1f%%, system code %.1f%% (under it: ",
			    pct(top->charged[FRAME_COST_OWN], h->total),
			    pct(top->charged[FRAME_COST_INTERPRETER], h->total),
			    pct(system_charged(top), h->total));
		system_leaves(h, top->func, &ev);
		strbuf_addch(&ev, ')');
		if (calls.len)
			strbuf_addf(&ev, "; the calls it makes: %s", calls.buf);
	}
	/* Most of a Python line's time is in the calls it makes (the standard
	 * library's, a C module's): the advice is about calling them less. */
	struct strbuf next = STRBUF_INIT;
	int about_calls = in_calls > 0 && in_calls >= top->self / 2;
	/* A search that scans the whole list for each item: the pattern has a
	 * name and one fix. */
	const char *scan = NULL, *scan_c = NULL;
	int64_t scanned = 0;
	if (charged && search && search->samples && 2 * search->samples >= top->self) {
		scanned = search->samples;
		scan = search->python;
		scan_c = search->c_function;
	}
	if (scan) {
		strbuf_reset(&title);
		strbuf_addf(&title, "%s searches a list in a loop: %s takes %.0f%% of the %s samples",
			    fn->function, scan, pct(scanned, h->total), source);
		strbuf_addf(&ev, "; %.1f%% of the samples scan a sequence in %s", pct(scanned, h->total),
			    scan_c);
		strbuf_addf(&next,
			    "In %s, %s scans the whole sequence on every test (%s %.0f%%): keep "
			    "the items in a set (or a dict keyed by them) beside or instead of "
			    "the list, and test membership there, one hash lookup each",
			    fn->function, scan, scan_c, pct(scanned, h->total));
	} else if (about_calls)
		strbuf_addf(&next,
			    "Most of %s's time is in the calls it makes (%s): call them less "
			    "often (reuse their results, hoist them out of the loop, batch the "
			    "work) or use a cheaper equivalent; see the call_tree for where each "
			    "one's time goes",
			    fn->function, calls.buf);
	else
		strbuf_addstr(&next, "Open the hottest line and reduce the work done there: a better "
				     "algorithm or data structure, hoisting invariant work out of "
				     "the loop, or cache-friendly access; see hot_lines and the "
				     "call_tree for who calls it");
	if (top->best_line > 0 && top->best_line_samples > 0)
		strbuf_addf(&ev, "; hottest line %s:%d with %.0f%% of its samples",
			    fn->file	 ? fn->file
			    : fn->module ? fn->module
					 : "?",
			    top->best_line, pct(top->best_line_samples, top->self));
	struct finding f = {
		.id = scan ? "cpu.linear_search" : "cpu.hotspot",
		.title = title.buf,
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = scan ? "Linear search in a loop: each membership test (or index, "
				    "remove, count) on a list reads its items one by one, so the "
				    "loop costs the list's length for every item: quadratic time"
			     : about_calls
				 ? "Dominant hotspot: one function holds a large share of the CPU "
				   "time, most of it in the calls it makes, so calling them less "
				   "pays off directly"
				 : "Dominant hotspot: one function's own code holds a large share of "
				   "the CPU time, so speeding it up pays off directly",
		.next_step = next.buf,
		.validation = scan ? "its hotspots[].self_pct falls to a few percent and "
				     "target.wall_s falls"
				   : "its hotspots[].self_pct and target.wall_s fall",
	};
	sampled_finding_add(ctx, &f, wall_s, stake_s, self);
	strbuf_release(&title);
	strbuf_release(&loc);
	strbuf_release(&ev);
	strbuf_release(&calls);
	strbuf_release(&next);
}

/* The function most samples are charged to as the program's own code. */
static const struct func_count *charged_top(const struct hot *h)
{
	const struct func_count *best = NULL;
	for (size_t f = 0; f < h->ss->nfuncs; f++)
		if (!best || h->funcs[f].charged_total > best->charged_total)
			best = &h->funcs[f];
	return best && best->charged_total > 0 ? best : NULL;
}

/* The system functions the samples charged to func ended in, heaviest first:
 * "memset 30%, clear_page_erms 5%" (shares of every sample). */
static void system_leaves(const struct hot *h, size_t func, struct strbuf *out)
{
	int64_t *by_leaf = charged_under(h, func, 1);
	for (int shown = 0; shown < CHARGED_LEAVES_NAMED; shown++) {
		size_t best = 0;
		for (size_t f = 1; f < h->ss->nfuncs; f++)
			if (by_leaf[f] > by_leaf[best])
				best = f;
		if (!by_leaf[best])
			break;
		strbuf_addf(out, "%s%s %.0f%%", shown ? ", " : "", h->ss->funcs[best].function,
			    pct(by_leaf[best], h->total));
		by_leaf[best] = 0;
	}
	free(by_leaf);
}

struct charged_words {
	const char *id, *what, *diagnosis, *next_c, *next_python, *validation;
};

/* What to say, per cost, in C and in Python. */
static const struct charged_words charged_words[FRAME_COST_N] = {
	[FRAME_COST_PAGE_FAULT] = {
		"cpu.fresh_memory", "faulting in fresh memory",
		"Fresh memory: the pages it writes were just allocated (or were "
		"returned to the system and mapped again), so the kernel faults in and zeroes "
		"each 4 KiB page on first touch, and that costs more than the work done with them",
		"If it allocates a large buffer on every pass, allocate it once, outside the loop, "
		"and reuse it (a large malloc/calloc and free per pass maps and unmaps fresh pages "
		"each time: glibc serves large blocks with mmap); if it needs the memory once, "
		"touch less of it (smaller element types, work in chunks)",
		"If it builds a large object on every pass, build it once and reuse it (fill a "
		"bytearray, array or NumPy array in place, use `out=` arguments); if it needs the "
		"memory once, hold less of it (generators, smaller types, work in chunks)",
		"cpu.minor_faults and cpu.sys_s fall, and so does this function's share of the "
		"samples" },
	[FRAME_COST_SYSCALL] = {
		"cpu.syscalls", "in system calls",
		"System-call bound: it enters the kernel so often that the calls' fixed cost "
		"outweighs the work each one does",
		"Batch the calls: read and write bigger blocks (buffered I/O, one writev for many "
		"small writes), and move calls that do not change out of the loop",
		"Batch the calls: read and write bigger blocks (buffered files, one write of a "
		"joined string instead of many small ones), and move calls that do not change out "
		"of the loop",
		"cpu.sys_s and cpu.voluntary_ctx_switches fall" },
	[FRAME_COST_MEMORY_OPS] = {
		"cpu.memory_copies", "filling and copying memory",
		"Bulk memory traffic: it clears or copies large buffers, and the C library's "
		"memset/memcpy time is spent on its behalf",
		"Avoid the copy or the clear: pass pointers or views instead of copies, clear "
		"only the part that is used, and reuse buffers that need no clearing",
		"Avoid the copies: slice with memoryview instead of bytes, extend one bytearray "
		"instead of concatenating, and reuse buffers",
		"this function's share of the samples falls" },
	[FRAME_COST_OTHER] = {
		"cpu.system_code", "in system code it calls",
		"System code on its behalf: most of its samples are in the C library, the "
		"dynamic loader or the kernel, which it calls",
		"Open the system functions named in the evidence and call them less often, or "
		"with more work per call",
		"Open the system functions named in the evidence and call them less often, or "
		"with more work per call",
		"this function's share of the samples falls" },
};

/* Says so when the program ran with PYTHONUNBUFFERED set. */
static void unbuffered_env(struct analysis_ctx *ctx, struct strbuf *ev)
{
	int64_t env = 0;
	if (!recording_meta_int(ctx->db, "env_pythonunbuffered", &env) && env)
		strbuf_addstr(ev, "; PYTHONUNBUFFERED is set in the program's environment, which "
				  "makes every write to sys.stdout and sys.stderr a system call");
}

/* The finding for a function most of whose samples are system code it calls
 * (memset, the kernel's page faults, system calls): the cost is charged to
 * it, the program's own code, and named by what the system code did. */
static void charged_finding(struct analysis_ctx *ctx, const struct hot *h,
			    const struct func_count *fc, const char *source, const char *rate_key)
{
	const struct stack_func *fn = &h->ss->funcs[fc->func];
	/* Page faults name the cause whenever they are a good part of it: the
	 * fill or copy that touches fresh pages costs less once they are reused. */
	enum frame_cost worst = FRAME_COST_PAGE_FAULT;
	int64_t system = system_charged(fc);
	if ((double)fc->charged[FRAME_COST_PAGE_FAULT] < CHARGED_FAULTS_SHARE * (double)system)
		for (int c = FRAME_COST_PAGE_FAULT; c < FRAME_COST_INTERPRETER; c++)
			if (fc->charged[c] > fc->charged[worst])
				worst = (enum frame_cost)c;
	const struct charged_words *w = &charged_words[worst];
	double share = pct(fc->charged_total, h->total);
	double wall_s = report_wall_s(ctx->db);
	double stake_s = report_sampled_s(ctx->db, rate_key, (double)fc->charged_total, share);
	int python = fn->kind && !strcmp(fn->kind, "python");
	struct strbuf title = STRBUF_INIT, loc = STRBUF_INIT, ev = STRBUF_INIT;
	strbuf_addf(&title, "%s spends %.0f%% of the %s samples %s", fn->function,
		    pct(fc->charged[worst], h->total), source, w->what);
	location(&loc, fn, fc->own_line);
	strbuf_addf(&ev, "%s and the system code it calls: %.1f%% (%lld of %lld %s samples): ",
		    fn->function, share, (long long)fc->charged_total, (long long)h->total, source);
	for (int c = 0, first = 1; c < FRAME_COST_N; c++) {
		if (!fc->charged[c])
			continue;
		strbuf_addf(&ev, "%s%s %.1f%%", first ? "" : ", ", frame_cost_name((enum frame_cost)c),
			    pct(fc->charged[c], h->total));
		first = 0;
	}
	strbuf_addstr(&ev, "; system functions under it: ");
	system_leaves(h, fc->func, &ev);
	if (python && worst == FRAME_COST_SYSCALL)
		unbuffered_env(ctx, &ev);
	struct finding f = {
		.id = w->id,
		.title = title.buf,
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = w->diagnosis,
		.next_step = python ? w->next_python : w->next_c,
		.validation = w->validation,
	};
	sampled_finding_add(ctx, &f, wall_s, stake_s, share);
	strbuf_release(&title);
	strbuf_release(&loc);
	strbuf_release(&ev);
}

/* The finding for a Python function whose writes go to a file without a
 * buffer: each one is a write(2) system call, however small. */
static void unbuffered_finding(struct analysis_ctx *ctx, const struct hot *h,
			       const struct func_count *fc, const struct py_pattern *p,
			       const char *source, const char *rate_key)
{
	const struct stack_func *fn = &h->ss->funcs[fc->func];
	double share = pct(p->samples, h->total);
	double wall_s = report_wall_s(ctx->db);
	double stake_s = report_sampled_s(ctx->db, rate_key, (double)p->samples, share);
	struct strbuf title = STRBUF_INIT, loc = STRBUF_INIT, ev = STRBUF_INIT;
	strbuf_addf(&title, "%s makes a system call per write: its unbuffered or flushed "
			    "writes take %.0f%% of the %s samples",
		    fn->function, share, source);
	location(&loc, fn, fc->own_line);
	strbuf_addf(&ev, "%s and the code it runs through: %.1f%% (%lld of %lld %s samples); "
			 "%.1f%% in %s (the raw file's write, reached from the Python line "
			 "with no buffered writer between them, or through a flush), system "
			 "functions under it: ",
		    fn->function, pct(fc->charged_total, h->total), (long long)fc->charged_total,
		    (long long)h->total, source, share, p->c_function);
	system_leaves(h, fc->func, &ev);
	unbuffered_env(ctx, &ev);
	struct finding f = {
		.id = "cpu.unbuffered_writes",
		.title = title.buf,
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "Unbuffered or flushed writes: each write goes to the file at once, "
			     "because the file has no buffer (python -u or PYTHONUNBUFFERED for "
			     "sys.stdout and sys.stderr, open(..., buffering=0)) or because it is "
			     "flushed after each write (print(..., flush=True), f.flush() in the "
			     "loop), so every write, however small, is a write(2) system call",
		.next_step = "Give the writes a buffer and flush once: build the output and "
			     "write it once (''.join(parts), or json.dumps then one write), drop "
			     "the flush after each item (flush=True, f.flush()), or write through "
			     "a buffered stream (unset PYTHONUNBUFFERED / drop -u for bulk output, "
			     "open files with the default buffering, or wrap a raw file in "
			     "io.BufferedWriter)",
		.validation = "cpu.sys_s falls, and so does this function's share of the samples",
	};
	sampled_finding_add(ctx, &f, wall_s, stake_s, share);
	strbuf_release(&title);
	strbuf_release(&loc);
	strbuf_release(&ev);
}

/* One CPU finding: at the function the most samples are charged to as the
 * program's own code, about the system code it calls when that is most of
 * them, else the dominant hotspot (the leaf view's top function). */
static void cpu_finding(struct analysis_ctx *ctx, const struct hot *h,
			const struct func_count *top, const char *source, const char *rate_key)
{
	const struct func_count *own = charged_top(h);
	const struct stack_func *leaf_fn = &h->ss->funcs[top->func];
	int leaf_charged = frame_is_system(leaf_fn->module, leaf_fn->kind) ||
			   (own && frame_is_interpreter(leaf_fn->module) &&
			    !frame_is_interpreter(h->ss->funcs[own->func].module));
	/* A search in a loop whose comparisons are the C library's (memcmp of
	 * long strings) is still the search: the dominant finding names it. */
	const struct stack_func *own_fn = own ? &h->ss->funcs[own->func] : NULL;
	struct py_pattern search = { 0, NULL, NULL }, unbuffered = { 0, NULL, NULL };
	if (own_fn && own_fn->kind && !strcmp(own_fn->kind, "python")) {
		search = py_pattern_linear_search(h->ss, own->func);
		unbuffered = py_pattern_unbuffered_write(h->ss, own->func);
	}
	int searches = search.samples && 2 * search.samples >= own->charged_total;
	/* Writes without a buffer are the cause of the system calls they make. */
	if (!searches && pct(unbuffered.samples, h->total) >= UNBUFFERED_MIN_PCT &&
	    (double)unbuffered.samples >= UNBUFFERED_MIN_SHARE * (double)own->charged_total) {
		unbuffered_finding(ctx, h, own, &unbuffered, source, rate_key);
		return;
	}
	if (own && !searches && h->total >= 10 &&
	    pct(own->charged_total, h->total) >= DOMINANT_SELF_PCT &&
	    (double)system_charged(own) >= CHARGED_SYSTEM_SHARE * (double)own->charged_total &&
	    (leaf_charged || own->charged_total > top->self)) {
		charged_finding(ctx, h, own, source, rate_key);
		return;
	}
	/* The top leaf is the function's own code, and no function runs more
	 * code through itself than it does: the leaf view's top is the one. */
	if (!leaf_charged && (!own || own->charged_total <= 2 * top->self ||
			      pct(own->charged_total, h->total) < DOMINANT_SELF_PCT)) {
		dominant_finding(ctx, h, top, source, rate_key, 0, NULL);
		return;
	}
	/* The top leaf is code the function runs through (the interpreter's, a
	 * little system code), or another function runs more than twice its
	 * samples through its calls (json.dump's loop writing each chunk to an
	 * unbuffered stream: its own bytecode a sixth, the writes' system calls
	 * and the interpreter's I/O code the rest): the dominant function is the
	 * one they are charged to. */
	if (own) {
		struct func_count as_own = *own;
		as_own.self = own->charged_total;
		as_own.best_line = own->own_line;
		as_own.best_line_samples = 0;
		dominant_finding(ctx, h, &as_own, source, rate_key, 1, &search);
	}
}

/* Why there are no stack samples, from the probes table when it says. */
static void not_measured(struct analysis_ctx *ctx)
{
	sqlite3_stmt *st;
	if (!recording_has_table(ctx->db, "probes") ||
	    sqlite3_prepare_v2(
		ctx->db,
		"SELECT name, status, reason FROM probes WHERE name IN ('cpu','python')"
		" ORDER BY name",
		-1, &st, NULL) != SQLITE_OK)
		return;
	struct strbuf why = STRBUF_INIT;
	int ran = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *status = (const char *)sqlite3_column_text(st, 1);
		const char *reason = (const char *)sqlite3_column_text(st, 2);
		if (!name || !status)
			continue;
		if (!strcmp(status, "on")) {
			ran = 1;
			continue;
		}
		strbuf_addf(&why, "%sthe %s probe was %s%s%s", why.len ? "; " : "", name,
			    !strcmp(status, "off") ? "off" : "unavailable", reason ? ": " : "",
			    reason ? reason : "");
	}
	sqlite3_finalize(st);
	if (ran)
		strbuf_addf(&why,
			    "%sthe stack samplers ran but recorded no sample (the run may "
			    "have been too short)",
			    why.len ? "; " : "");
	if (why.len)
		report_not_measured(ctx->report, "hotspots", why.buf);
	strbuf_release(&why);
}

static int hotspots_run(struct analysis_ctx *ctx)
{
	struct stack_set ss = STACK_SET_INIT;
	struct strbuf err = STRBUF_INIT;
	const char *source = NULL;
	enum stack_mode mode = stack_mode_of(ctx->db);
	if (stack_set_load_mode(ctx->db, mode, &ss, &source, &err)) {
		strbuf_release(&err);
		return -1;
	}
	if (!ss.total_samples) {
		stack_set_release(&ss);
		source = NULL;
	}
	strbuf_release(&err);
	if (!source) {
		not_measured(ctx);
		return 0;
	}
	struct hot h = { 0 };
	hot_count(&h, &ss);
	struct func_count *ranked = ranked_funcs(&h);
	json_object_set_new(ctx->report, "hotspots", hotspots_json(&h, ranked));
	json_t *meta = json_object();
	json_object_set_new(meta, "source", json_string(source));
	json_object_set_new(meta, "samples", json_integer(h.total));
	json_object_set_new(meta, "mode", json_string(stack_mode_name(mode)));
	/* --event: the samples count that event (misses, faults), not time. */
	char *event = !strcmp(source, "cpu") ? recording_meta_text(ctx->db, "cpu_event") : NULL;
	int by_event = event && strcmp(event, "cycles") && strcmp(event, "cpu-clock");
	if (event)
		json_object_set_new(meta, "event", json_string(event));
	json_object_set_new(ctx->report, "hotspots_source", meta);
	json_object_set_new(ctx->report, "call_tree", call_tree_json(&ss));
	json_object_set_new(ctx->report, "hot_lines", hot_lines_json(&h, ranked));
	hwcounters_functions(ctx); /* IPC and misses of the hotspots, when sampled */
	if (ss.nfuncs) {
		/* Say what the samples stand for: an event, or what Python's own are. */
		char label[64];
		int python = !strcmp(source, "python");
		snprintf(label, sizeof(label), "%s%s",
			 by_event		  ? event
			 : python		  ? "Python"
			 : !strcmp(source, "mixed") ? "CPU (Python and native)"
						  : "CPU",
			 by_event || !python		? ""
			 : mode == STACK_MODE_WALL	? " wall-time"
			 : mode == STACK_MODE_GIL	? " GIL-held"
							: " on-CPU");
		cpu_finding(ctx, &h, &ranked[0], label,
				 by_event ? NULL : python ? "python_rate_hz" : "cpu_rate_hz");
	}
	free(event);
	free(ranked);
	hot_release(&h);
	stack_set_release(&ss);
	return 0;
}

static const char *const hotspots_provides[] = { "hotspots", "hotspots_source", "call_tree",
						  "findings:cpu", NULL };

static const char *const hotspots_findings[] = {
	"cpu.hotspot",
	"cpu.linear_search",
	"cpu.unbuffered_writes",
	"cpu.fresh_memory",
	"cpu.syscalls",
	"cpu.memory_copies",
	"cpu.system_code",
	"cpu.memory_bound_function",
	NULL,
};

const struct analysis_ops analysis_hotspots = {
	.name = "hotspots",
	.findings = hotspots_findings,
	.provides = hotspots_provides,
	.run = hotspots_run,
};
