/* compare: per-function deltas between two recordings, ranked (see compare.h). */
#include "compare.h"
#include "hygiene.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/stats.h"
#include "../util/strbuf.h"
#include "../util/path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The seconds one sample stands for: an event other than time (--event
 * cache-misses) or a missing rate has none. */
static double run_period_s(sqlite3 *db, const char *source)
{
	int python = !strcmp(source, "python");
	if (!python) {
		char *event = recording_meta_text(db, "cpu_event");
		int by_event = event && strcmp(event, "cycles") && strcmp(event, "cpu-clock");
		free(event);
		if (by_event)
			return NAN;
	}
	int64_t hz = 0;
	if (recording_meta_int(db, python ? "python_rate_hz" : "cpu_rate_hz", &hz) || hz <= 0)
		return NAN;
	return 1.0 / (double)hz;
}

/* The entry of the function fn, added when new. index maps "function\0module"
 * to an entry's index. */
static size_t entry_of(struct compare *c, struct hashmap *index, const struct stack_func *fn)
{
	struct strbuf key = STRBUF_INIT;
	const char *module = path_base(fn->module);
	strbuf_addstr(&key, fn->function);
	strbuf_addch(&key, '\0');
	if (module)
		strbuf_addstr(&key, module);
	int64_t *at = hashmap_get(index, key.buf, key.len);
	size_t i = at ? (size_t)*at : c->n;
	if (!at) {
		hashmap_put(index, key.buf, key.len, (int64_t)i);
		c->v = xrealloc(c->v, (c->n + 1) * sizeof(*c->v));
		/* Owned: a later run's stacks are let go once counted. */
		c->v[c->n++] = (struct compare_func){.function = xstrdup(fn->function),
						     .module = module ? xstrdup(module) : NULL};
	}
	strbuf_release(&key);
	return i;
}

/* An edge caller -> callee between entries, seen in either run. */
struct edge {
	size_t caller, callee;
};

struct edges {
	struct edge *v;
	size_t n;
	struct hashmap seen;
};

static void edge_add(struct edges *e, size_t caller, size_t callee)
{
	size_t key[2] = { caller, callee };
	if (caller == callee || hashmap_get(&e->seen, key, sizeof(key)))
		return;
	hashmap_put(&e->seen, key, sizeof(key), 1);
	e->v = xrealloc(e->v, (e->n + 1) * sizeof(*e->v));
	e->v[e->n++] = (struct edge){ caller, callee };
}

/* Counts the samples of ss, one run of side r, into the entries: self for a
 * stack's innermost function, total once per stack for every function on it.
 * entry receives ss's function -> entry map (ss->nfuncs of them). */
static void run_count(struct compare *c, int r, const struct stack_set *ss, size_t *entry,
		      struct hashmap *index, struct edges *e)
{
	for (size_t f = 0; f < ss->nfuncs; f++)
		entry[f] = entry_of(c, index, &ss->funcs[f]);
	size_t *path = xmalloc(STACK_DEPTH_MAX * sizeof(*path));
	int64_t *last_leaf = xcalloc(c->n ? c->n : 1, sizeof(*last_leaf));
	for (size_t l = 0; l < ss->nleaves; l++) {
		const struct stack_leaf *leaf = &ss->leaves[l];
		size_t depth = stack_set_path(ss, leaf->node, path, STACK_DEPTH_MAX);
		for (size_t d = 0; d < depth; d++) {
			size_t i = entry[ss->frames[path[d]].func];
			if (d + 1 == depth)
				c->v[i].self_samples[r] += leaf->samples;
			if (d)
				edge_add(e, entry[ss->frames[path[d - 1]].func], i);
			if (last_leaf[i] == (int64_t)l + 1)
				continue; /* recursion: a stack counts once in a total */
			last_leaf[i] = (int64_t)l + 1;
			c->v[i].total_samples[r] += leaf->samples;
		}
	}
	free(last_leaf);
	free(path);
}

/* Run k of side r: loaded, counted into the entries, its per-run totals kept.
 * The first run's stacks stay (diff.svg draws B's); the others are let go. */
static int run_add(struct compare *c, int r, size_t k, sqlite3 *db, const char *name,
		   struct hashmap *index, struct edges *e, struct strbuf *err)
{
	struct compare_run *run = &c->run[r];
	struct stack_set other = STACK_SET_INIT, *ss = k ? &other : &run->ss;
	const char *source = NULL;
	struct strbuf why = STRBUF_INIT;
	if (stack_set_load_mode(db, stack_mode_of(db), ss, &source, &why)) {
		strbuf_addf(err, "%s: %s", name, why.buf);
		strbuf_release(&why);
		return -1;
	}
	strbuf_release(&why);
	if (!ss->total_samples)
		source = NULL;
	if (!k)
		run->source = source;
	run->run_period_s[k] = source ? run_period_s(db, source) : NAN;
	run->run_samples[k] = ss->total_samples;
	run->samples_all += ss->total_samples;
	size_t *entry = xcalloc(ss->nfuncs ? ss->nfuncs : 1, sizeof(*entry));
	size_t before_n = c->n;
	int64_t *before = xcalloc(before_n ? before_n : 1, sizeof(*before));
	for (size_t i = 0; i < before_n; i++)
		before[i] = c->v[i].total_samples[r];
	run_count(c, r, ss, entry, index, e);
	for (size_t i = 0; i < c->n; i++) {
		int64_t moved = c->v[i].total_samples[r] - (i < before_n ? before[i] : 0);
		if (!moved)
			continue;
		if (!c->v[i].run_totals[r])
			c->v[i].run_totals[r] = xcalloc(run->nruns, sizeof(int64_t));
		c->v[i].run_totals[r][k] = moved;
	}
	free(before);
	if (k)
		free(entry);
	else
		run->entry = entry;
	stack_set_release(&other);
	return 0;
}

double compare_share(const struct compare *c, const struct compare_func *f, int r, int self)
{
	int64_t all = c->run[r].samples_all;
	int64_t n = self ? f->self_samples[r] : f->total_samples[r];
	return all > 0 ? 100.0 * (double)n / (double)all : 0;
}

double compare_seconds(const struct compare *c, const struct compare_func *f, int r, int self)
{
	int64_t n = self ? f->self_samples[r] : f->total_samples[r];
	return (double)n * c->run[r].period_s / (double)(c->run[r].nruns ? c->run[r].nruns : 1);
}

double compare_total_delta(const struct compare *c, const struct compare_func *f, int *in_seconds)
{
	int secs = !isnan(c->run[0].period_s) && !isnan(c->run[1].period_s);
	if (in_seconds)
		*in_seconds = secs;
	if (secs)
		return compare_seconds(c, f, 1, 0) - compare_seconds(c, f, 0, 0);
	return compare_share(c, f, 1, 0) - compare_share(c, f, 0, 0);
}

static void mark_inherited(struct compare *c, const struct edges *e)
{
	for (size_t k = 0; k < e->n; k++) {
		struct compare_func *caller = &c->v[e->v[k].caller];
		double dc = compare_total_delta(c, caller, NULL);
		double dg = compare_total_delta(c, &c->v[e->v[k].callee], NULL);
		if (dc != 0 && dc * dg > 0 && fabs(dg) >= COMPARE_INHERITED * fabs(dc))
			caller->inherited = 1;
	}
}

static int rank_cmp(const void *pa, const void *pb, void *arg)
{
	const struct compare *c = arg;
	const struct compare_func *a = &c->v[*(const size_t *)pa], *b = &c->v[*(const size_t *)pb];
	if (a->inherited != b->inherited)
		return a->inherited - b->inherited;
	if (a->test.significant != b->test.significant)
		return b->test.significant - a->test.significant;
	double da = fabs(compare_total_delta(c, a, NULL)),
	       db = fabs(compare_total_delta(c, b, NULL));
	if (da != db)
		return da < db ? 1 : -1;
	return strcmp(a->function, b->function);
}

/* f's total time in each run of side r, into x (c->run[r].nruns values):
 * seconds when both sides have a rate, else share points of the run. */
static void run_values(const struct compare *c, const struct compare_func *f, int r, int secs,
		       double *x)
{
	const struct compare_run *run = &c->run[r];
	for (size_t k = 0; k < run->nruns; k++) {
		double n = f->run_totals[r] ? (double)f->run_totals[r][k] : 0;
		if (secs)
			x[k] = n * run->run_period_s[k];
		else
			x[k] = run->run_samples[k] ? 100.0 * n / (double)run->run_samples[k] : 0;
	}
}

static int by_p(const void *pa, const void *pb, void *arg)
{
	const struct compare *c = arg;
	double a = c->v[*(const size_t *)pa].test.p, b = c->v[*(const size_t *)pb].test.p;
	return a < b ? -1 : a > b;
}

/* Every function whose total time moved by COMPARE_TEST_MIN_PTS percent of
 * the longer side's time per run (share points without a rate) or more,
 * unless a callee explains its change (main above the loop that changed):
 * U test and bootstrap CI per function, then Holm-Bonferroni over them (the
 * k-th smallest p against alpha / (m - k), stopping at the first above). */
static void compare_test_all(struct compare *c)
{
	int secs = !isnan(c->run[0].period_s) && !isnan(c->run[1].period_s);
	double *x[2] = {xcalloc(c->run[0].nruns, sizeof(double)),
			xcalloc(c->run[1].nruns, sizeof(double))};
	size_t *tested = xmalloc((c->nranked ? c->nranked : 1) * sizeof(*tested)), m = 0;
	/* What a change is measured against: the longer side's sampled time per
	 * run (a function's share moves whenever the run's length does). */
	double longest_s = 0;
	for (int r = 0; r < 2 && secs; r++) {
		const struct compare_run *run = &c->run[r];
		double s = (double)run->samples_all * run->period_s / (double)run->nruns;
		longest_s = s > longest_s ? s : longest_s;
	}
	for (size_t k = 0; k < c->nranked; k++) {
		struct compare_func *f = &c->v[c->ranked[k]];
		double moved = secs && longest_s > 0
				   ? 100.0 * compare_total_delta(c, f, NULL) / longest_s
				   : compare_share(c, f, 1, 0) - compare_share(c, f, 0, 0);
		if (fabs(moved) < COMPARE_TEST_MIN_PTS || f->inherited)
			continue; /* too small to tell, or a callee's change (tested itself) */
		for (int r = 0; r < 2; r++)
			run_values(c, f, r, secs, x[r]);
		struct stats_mwu u;
		struct stats_ci ci;
		if (stats_mann_whitney(x[0], c->run[0].nruns, x[1], c->run[1].nruns, &u))
			continue;
		f->test.tested = 1;
		f->test.p = u.p;
		f->test.has_ratio =
		    !stats_bootstrap_ratio(x[1], c->run[1].nruns, x[0], c->run[0].nruns,
					   COMPARE_RESAMPLES, 0.95, COMPARE_SEED + m, &ci);
		if (f->test.has_ratio) {
			f->test.ratio = ci.point;
			f->test.lo = ci.lo;
			f->test.hi = ci.hi;
		}
		tested[m++] = c->ranked[k];
	}
	qsort_r(tested, m, sizeof(*tested), by_p, c);
	for (size_t k = 0; k < m; k++) {
		struct compare_func *f = &c->v[tested[k]];
		struct stats_mwu u = {.p = f->test.p};
		struct stats_ci ci = {f->test.ratio, f->test.lo, f->test.hi};
		if (f->test.p >= STATS_ALPHA / (double)(m - k))
			break; /* Holm: every larger p fails too */
		f->test.significant =
		    stats_differ(&u, f->test.has_ratio ? &ci : NULL, STATS_ALPHA / (double)(m - k));
	}
	free(tested);
	free(x[0]);
	free(x[1]);
}

int compare_build(sqlite3 *a, sqlite3 *b, const char *const names[2], struct compare *c,
		  struct strbuf *err)
{
	sqlite3 *const one[2][1] = {{a}, {b}};
	sqlite3 *const *const dbs[2] = {one[0], one[1]};
	const size_t n[2] = {1, 1};
	return compare_build_runs(dbs, n, names, c, err);
}

/* The entry of out with id, or NULL. */
static json_t *warning_find(json_t *out, const char *id)
{
	json_t *e;
	size_t j;
	json_array_foreach(out, j, e)
	{
		if (!strcmp(id, json_string_value(json_object_get(e, "id"))))
			return e;
	}
	return NULL;
}

/* The machine warnings of a side's n runs, one entry per id (compare.h). */
static json_t *side_warnings(sqlite3 *const *dbs, size_t n)
{
	json_t *out = json_array();
	for (size_t k = 0; k < n; k++) {
		json_t *h = hygiene_of_recording(dbs[k]), *w;
		size_t i;
		json_array_foreach(json_object_get(h, "warnings"), i, w)
		{
			const char *id = json_string_value(json_object_get(w, "id"));
			if (!id)
				continue;
			json_t *seen = warning_find(out, id);
			if (!seen) {
				seen = json_pack("{s:s, s:O, s:[]}", "id", id, "text",
						 json_object_get(w, "text"), "runs");
				json_array_append_new(out, seen);
			}
			json_array_append_new(json_object_get(seen, "runs"),
					      json_integer((json_int_t)k + 1));
		}
		json_decref(h);
	}
	return out;
}

int compare_build_runs(sqlite3 *const *const dbs[2], const size_t n[2], const char *const names[2],
		       struct compare *c, struct strbuf *err)
{
	struct compare tmp = COMPARE_INIT;
	struct hashmap index = HASHMAP_INIT;
	struct edges e = {NULL, 0, HASHMAP_INIT};
	int ret = -1;
	for (int r = 0; r < 2; r++) {
		struct compare_run *run = &tmp.run[r];
		run->nruns = n[r];
		run->run_samples = xcalloc(n[r] ? n[r] : 1, sizeof(*run->run_samples));
		run->run_period_s = xcalloc(n[r] ? n[r] : 1, sizeof(*run->run_period_s));
		for (size_t k = 0; k < n[r]; k++)
			if (run_add(&tmp, r, k, dbs[r][k], names[r], &index, &e, err))
				goto out;
		run->period_s = run->source ? run->run_period_s[0] : NAN;
	}
	mark_inherited(&tmp, &e);
	tmp.ranked = xmalloc((tmp.n ? tmp.n : 1) * sizeof(*tmp.ranked));
	for (size_t i = 0; i < tmp.n; i++) /* functions of stacks without samples: none */
		if (tmp.v[i].total_samples[0] || tmp.v[i].total_samples[1])
			tmp.ranked[tmp.nranked++] = i;
	tmp.tested = n[0] >= 2 && n[1] >= 2;
	if (tmp.tested)
		compare_test_all(&tmp);
	qsort_r(tmp.ranked, tmp.nranked, sizeof(*tmp.ranked), rank_cmp, &tmp);
	for (int r = 0; r < 2; r++)
		tmp.warnings[r] = side_warnings(dbs[r], n[r]);
	compare_gpu_build(dbs, n, &tmp.gpu);
	*c = tmp;
	tmp = (struct compare)COMPARE_INIT;
	ret = 0;
out:
	compare_release(&tmp);
	hashmap_release(&index);
	hashmap_release(&e.seen);
	free(e.v);
	return ret;
}

void compare_release(struct compare *c)
{
	for (int r = 0; r < 2; r++) {
		stack_set_release(&c->run[r].ss);
		free(c->run[r].entry);
		free(c->run[r].run_samples);
		free(c->run[r].run_period_s);
	}
	for (size_t i = 0; i < c->n; i++) {
		free((char *)c->v[i].function);
		free((char *)c->v[i].module);
		free(c->v[i].run_totals[0]);
		free(c->v[i].run_totals[1]);
	}
	free(c->v);
	free(c->ranked);
	json_decref(c->warnings[0]);
	json_decref(c->warnings[1]);
	compare_gpu_release(&c->gpu);
	*c = (struct compare)COMPARE_INIT;
}

json_t *compare_phases(json_t *report_a, json_t *report_b)
{
	json_t *out = json_array(), *pa = json_object_get(report_a, "phases"),
	       *pb = json_object_get(report_b, "phases");
	size_t nb = json_array_size(pb);
	char *used = xcalloc(nb ? nb : 1, 1);
	size_t i;
	json_t *p;
	json_array_foreach(pa, i, p)
	{
		const char *name = json_string_value(json_object_get(p, "name"));
		json_t *match = json_null();
		for (size_t k = 0; name && k < nb; k++) {
			const char *nk =
			    json_string_value(json_object_get(json_array_get(pb, k), "name"));
			if (!used[k] && nk && !strcmp(nk, name)) {
				used[k] = 1;
				match = json_incref(json_array_get(pb, k));
				break;
			}
		}
		if (name)
			json_array_append_new(
			    out, json_pack("{s:s, s:O, s:o}", "name", name, "a", p, "b", match));
		else
			json_decref(match);
	}
	json_array_foreach(pb, i, p)
	{
		const char *name = json_string_value(json_object_get(p, "name"));
		if (!used[i] && name)
			json_array_append_new(
			    out, json_pack("{s:s, s:n, s:O}", "name", name, "a", "b", p));
	}
	free(used);
	return out;
}

char *compare_program(json_t *report)
{
	const char *cmd =
	    json_string_value(json_object_get(json_object_get(report, "target"), "command"));
	if (!cmd)
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	for (int word = 0; word < 2 && *cmd; word++) {
		size_t n = strcspn(cmd, " ");
		const char *w = cmd, *slash = memrchr(cmd, '/', n);
		if (slash)
			n -= (size_t)(slash + 1 - w), w = slash + 1;
		if (word)
			strbuf_addch(&sb, ' ');
		strbuf_add(&sb, w, n);
		if (strncmp(w, "python", 6))
			break;
		cmd += strcspn(cmd, " ");
		cmd += strspn(cmd, " ");
	}
	return strbuf_detach(&sb);
}
