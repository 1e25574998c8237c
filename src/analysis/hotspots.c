/* hotspots: where the on-CPU samples are, by function (self and total), by
 * call path (a context-sensitive call tree) and by line, with a finding when
 * one function dominates. Reads the samples of the recording's mode
 * (stack_set_load_mode: cpu reads "mixed", "cpu" or on-CPU "python" samples;
 * wall every "python" sample; gil those of the thread holding the GIL). */
#include "analysis.h"
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

struct func_count {
	size_t func;
	int64_t self, total;
	size_t last_leaf; /* leaf index + 1 that last counted total: once per sample */
	int best_line;	  /* the line with most self samples, or any line seen */
	int64_t best_line_samples;
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

/* rate_key: the meta key of the samples' rate, NULL when they count an event
 * (report_sampled_s says what is at stake then). */
static void dominant_finding(struct analysis_ctx *ctx, const struct hot *h,
			     const struct func_count *top, const char *source, const char *rate_key)
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
	if (top->best_line > 0 && top->best_line_samples > 0)
		strbuf_addf(&ev, "; hottest line %s:%d with %.0f%% of its samples",
			    fn->file	 ? fn->file
			    : fn->module ? fn->module
					 : "?",
			    top->best_line, pct(top->best_line_samples, top->self));
	struct finding f = {
		.title = title.buf,
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "Dominant hotspot: one function's own code holds a large share of "
			     "the CPU time, so speeding it up pays off directly",
		.next_step =
		    "Open the hottest line and reduce the work done there: a better "
		    "algorithm or data structure, hoisting invariant work out of the loop, "
		    "or cache-friendly access; see hot_lines and the call_tree for who calls it",
		.validation = "its hotspots[].self_pct and target.wall_s fall",
		.impact_s = wall_s > 0 ? stake_s : -1,
		.impact_bytes = -1,
		.impact_pct = wall_s > 0 ? 100.0 * stake_s / wall_s : self,
	};
	findings_add(ctx->findings, &f);
	strbuf_release(&title);
	strbuf_release(&loc);
	strbuf_release(&ev);
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
		dominant_finding(ctx, &h, &ranked[0], label,
				 by_event ? NULL : python ? "python_rate_hz" : "cpu_rate_hz");
	}
	free(event);
	free(ranked);
	hot_release(&h);
	stack_set_release(&ss);
	return 0;
}

const struct analysis_ops analysis_hotspots = { .name = "hotspots", .run = hotspots_run };
