/* compare: per-function deltas between two recordings, ranked (see compare.h). */
#include "compare.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

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

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path;
}

/* The entry of the function fn, added when new. index maps "function\0module"
 * to an entry's index. */
static size_t entry_of(struct compare *c, struct hashmap *index, const struct stack_func *fn)
{
	struct strbuf key = STRBUF_INIT;
	const char *module = base_name(fn->module);
	strbuf_addstr(&key, fn->function);
	strbuf_addch(&key, '\0');
	if (module)
		strbuf_addstr(&key, module);
	int64_t *at = hashmap_get(index, key.buf, key.len);
	size_t i = at ? (size_t)*at : c->n;
	if (!at) {
		hashmap_put(index, key.buf, key.len, (int64_t)i);
		c->v = xrealloc(c->v, (c->n + 1) * sizeof(*c->v));
		c->v[c->n++] = (struct compare_func){ .function = fn->function, .module = module };
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

/* Counts run r's samples into the entries: self for a stack's innermost
 * function, total once per stack for every function on it. */
static void run_count(struct compare *c, int r, struct hashmap *index, struct edges *e)
{
	struct compare_run *run = &c->run[r];
	const struct stack_set *ss = &run->ss;
	run->entry = xcalloc(ss->nfuncs ? ss->nfuncs : 1, sizeof(*run->entry));
	for (size_t f = 0; f < ss->nfuncs; f++)
		run->entry[f] = entry_of(c, index, &ss->funcs[f]);
	size_t *path = xmalloc(STACK_DEPTH_MAX * sizeof(*path));
	int64_t *last_leaf = xcalloc(c->n ? c->n : 1, sizeof(*last_leaf));
	for (size_t l = 0; l < ss->nleaves; l++) {
		const struct stack_leaf *leaf = &ss->leaves[l];
		size_t depth = stack_set_path(ss, leaf->node, path, STACK_DEPTH_MAX);
		for (size_t d = 0; d < depth; d++) {
			size_t i = run->entry[ss->frames[path[d]].func];
			if (d + 1 == depth)
				c->v[i].self_samples[r] += leaf->samples;
			if (d)
				edge_add(e, run->entry[ss->frames[path[d - 1]].func], i);
			if (last_leaf[i] == (int64_t)l + 1)
				continue; /* recursion: a stack counts once in a total */
			last_leaf[i] = (int64_t)l + 1;
			c->v[i].total_samples[r] += leaf->samples;
		}
	}
	free(last_leaf);
	free(path);
}

double compare_share(const struct compare *c, const struct compare_func *f, int r, int self)
{
	int64_t all = c->run[r].ss.total_samples;
	int64_t n = self ? f->self_samples[r] : f->total_samples[r];
	return all > 0 ? 100.0 * (double)n / (double)all : 0;
}

double compare_seconds(const struct compare *c, const struct compare_func *f, int r, int self)
{
	int64_t n = self ? f->self_samples[r] : f->total_samples[r];
	return (double)n * c->run[r].period_s;
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
	double da = fabs(compare_total_delta(c, a, NULL)),
	       db = fabs(compare_total_delta(c, b, NULL));
	if (da != db)
		return da < db ? 1 : -1;
	return strcmp(a->function, b->function);
}

int compare_build(sqlite3 *a, sqlite3 *b, const char *const names[2], struct compare *c,
		  struct strbuf *err)
{
	struct compare tmp = COMPARE_INIT;
	struct hashmap index = HASHMAP_INIT;
	struct edges e = { NULL, 0, HASHMAP_INIT };
	sqlite3 *dbs[2] = { a, b };
	int ret = -1;
	for (int r = 0; r < 2; r++) {
		struct compare_run *run = &tmp.run[r];
		struct strbuf why = STRBUF_INIT;
		if (stack_set_load_mode(dbs[r], stack_mode_of(dbs[r]), &run->ss, &run->source,
					&why)) {
			strbuf_addf(err, "%s: %s", names[r], why.buf);
			strbuf_release(&why);
			goto out;
		}
		strbuf_release(&why);
		if (!run->ss.total_samples)
			run->source = NULL;
		run->period_s = run->source ? run_period_s(dbs[r], run->source) : NAN;
		run_count(&tmp, r, &index, &e);
	}
	mark_inherited(&tmp, &e);
	tmp.ranked = xmalloc((tmp.n ? tmp.n : 1) * sizeof(*tmp.ranked));
	for (size_t i = 0; i < tmp.n; i++) /* functions of stacks without samples: none */
		if (tmp.v[i].total_samples[0] || tmp.v[i].total_samples[1])
			tmp.ranked[tmp.nranked++] = i;
	qsort_r(tmp.ranked, tmp.nranked, sizeof(*tmp.ranked), rank_cmp, &tmp);
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
	}
	free(c->v);
	free(c->ranked);
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
