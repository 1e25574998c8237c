/* callgraph: the call graph model and its DOT text (see callgraph.h). */
#include "callgraph.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"
#include "../util/path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CALLGRAPH_DEPTH_MAX 1024
#define CALLGRAPH_NAME_CHARS 60

/* What one caller does with a function: for the split decision. */
struct pair_stat {
	long caller; /* func index, -1: the stack's root */
	size_t func;
	int64_t total, self;
	size_t hot_callee; /* the callee it reaches most, or (size_t)-1 */
	int64_t hot_samples;
	uint64_t stamp; /* the path that last counted it */
};

struct builder {
	const struct stack_set *ss;
	struct pair_stat *pairs;
	size_t npairs;
	struct hashmap pair_index;   /* (caller, func) */
	struct hashmap callee_count; /* (caller, func, callee) -> samples */
	int64_t *func_total;
	uint64_t *func_stamp;
	int *split;
	uint64_t stamp;
	struct hashmap node_index, edge_index;
	uint64_t *node_stamp, *edge_stamp;
};

static struct pair_stat *pair_get(struct builder *b, long caller, size_t func)
{
	int64_t key[2] = {caller, (int64_t)func};
	int64_t *at = hashmap_get(&b->pair_index, key, sizeof(key));
	if (at)
		return &b->pairs[*at];
	hashmap_put(&b->pair_index, key, sizeof(key), (int64_t)b->npairs);
	b->pairs = xrealloc(b->pairs, (b->npairs + 1) * sizeof(*b->pairs));
	b->pairs[b->npairs] =
	    (struct pair_stat){.caller = caller, .func = func, .hot_callee = (size_t)-1};
	return &b->pairs[b->npairs++];
}

/* The caller that sets a frame's context: the nearest one outside f (a
 * recursion is one context). -1 at the root. */
static long context_of(const size_t *fs, size_t i)
{
	while (i > 0 && fs[i - 1] == fs[i])
		i--;
	return i > 0 ? (long)fs[i - 1] : -1;
}

/* Pass 1: per function and caller, its total, self and hottest callee. */
static void pairs_count(struct builder *b, const size_t *fs, size_t k, int64_t n)
{
	b->stamp++;
	for (size_t i = 0; i < k; i++) {
		size_t f = fs[i];
		if (b->func_stamp[f] != b->stamp) {
			b->func_stamp[f] = b->stamp;
			b->func_total[f] += n;
		}
		struct pair_stat *p = pair_get(b, context_of(fs, i), f);
		if (p->stamp == b->stamp)
			continue; /* a recursion counts once */
		p->stamp = b->stamp;
		p->total += n;
		size_t j = i;
		while (j + 1 < k && fs[j + 1] == f)
			j++;
		if (j + 1 == k) {
			p->self += n;
			continue;
		}
		int64_t key[3] = {p->caller, (int64_t)f, (int64_t)fs[j + 1]};
		int64_t *c = hashmap_get(&b->callee_count, key, sizeof(key));
		c = c ? c : hashmap_put(&b->callee_count, key, sizeof(key), 0);
		*c += n;
		if (*c > p->hot_samples) {
			p->hot_samples = *c;
			p->hot_callee = fs[j + 1];
		}
	}
}

/* Whether f's callers (those with a real share of it) use it in different
 * regimes: a different self share, or a different hottest callee. */
static void splits_decide(struct builder *b)
{
	size_t nf = b->ss->nfuncs;
	double *lo = xcalloc(nf ? nf : 1, sizeof(*lo)), *hi = xcalloc(nf ? nf : 1, sizeof(*hi));
	size_t *callee = xcalloc(nf ? nf : 1, sizeof(*callee));
	int *callers = xcalloc(nf ? nf : 1, sizeof(*callers));
	for (size_t i = 0; i < b->npairs; i++) {
		const struct pair_stat *p = &b->pairs[i];
		size_t f = p->func;
		if (!b->func_total[f] ||
		    100.0 * (double)p->total / (double)b->func_total[f] < CALLGRAPH_SPLIT_MIN_PCT)
			continue;
		double self = (double)p->self / (double)p->total;
		/* The regime's main work: its own code, or its hottest callee. */
		size_t main = p->self >= p->hot_samples ? (size_t)-1 : p->hot_callee;
		if (!callers[f]++) {
			lo[f] = hi[f] = self;
			callee[f] = main;
			continue;
		}
		lo[f] = self < lo[f] ? self : lo[f];
		hi[f] = self > hi[f] ? self : hi[f];
		if (main != callee[f] || hi[f] - lo[f] >= CALLGRAPH_SPLIT_SELF_DIFF)
			b->split[f] = 1;
	}
	free(lo);
	free(hi);
	free(callee);
	free(callers);
}

static size_t node_get(struct builder *b, struct callgraph *g, size_t func, long caller)
{
	int64_t key[2] = {(int64_t)func, caller};
	int64_t *at = hashmap_get(&b->node_index, key, sizeof(key));
	if (at)
		return (size_t)*at;
	hashmap_put(&b->node_index, key, sizeof(key), (int64_t)g->nnodes);
	g->nodes = xrealloc(g->nodes, (g->nnodes + 1) * sizeof(*g->nodes));
	b->node_stamp = xrealloc(b->node_stamp, (g->nnodes + 1) * sizeof(*b->node_stamp));
	b->node_stamp[g->nnodes] = 0;
	g->nodes[g->nnodes] = (struct callgraph_node){.func = func, .caller = caller};
	return g->nnodes++;
}

static void edge_add(struct builder *b, struct callgraph *g, size_t from, size_t to, int64_t n)
{
	int64_t key[2] = {(int64_t)from, (int64_t)to};
	int64_t *at = hashmap_get(&b->edge_index, key, sizeof(key));
	size_t i;
	if (at) {
		i = (size_t)*at;
	} else {
		hashmap_put(&b->edge_index, key, sizeof(key), (int64_t)g->nedges);
		g->edges = xrealloc(g->edges, (g->nedges + 1) * sizeof(*g->edges));
		b->edge_stamp = xrealloc(b->edge_stamp, (g->nedges + 1) * sizeof(*b->edge_stamp));
		b->edge_stamp[g->nedges] = 0;
		g->edges[g->nedges] = (struct callgraph_edge){.from = from, .to = to};
		i = g->nedges++;
	}
	if (b->edge_stamp[i] != b->stamp) {
		b->edge_stamp[i] = b->stamp;
		g->edges[i].samples += n;
	}
}

/* Pass 2: the nodes (split ones by caller) and edges of one path. */
static void path_add(struct builder *b, struct callgraph *g, const size_t *fs, size_t k, int64_t n)
{
	b->stamp++;
	size_t prev = (size_t)-1;
	for (size_t i = 0; i < k; i++) {
		size_t f = fs[i];
		size_t nd = node_get(b, g, f, b->split[f] ? context_of(fs, i) : -1);
		if (b->node_stamp[nd] != b->stamp) {
			b->node_stamp[nd] = b->stamp;
			g->nodes[nd].total += n;
		}
		if (i + 1 == k)
			g->nodes[nd].self += n;
		if (prev != (size_t)-1 && prev != nd)
			edge_add(b, g, prev, nd, n);
		prev = nd;
	}
}

static int node_by_total(const void *pa, const void *pb, void *arg)
{
	const struct callgraph_node *v = arg;
	int64_t a = v[*(const size_t *)pa].total, b = v[*(const size_t *)pb].total;
	return a > b ? -1 : a < b;
}

static void prune(struct callgraph *g)
{
	size_t *order = xmalloc((g->nnodes ? g->nnodes : 1) * sizeof(*order));
	for (size_t i = 0; i < g->nnodes; i++)
		order[i] = i;
	qsort_r(order, g->nnodes, sizeof(*order), node_by_total, g->nodes);
	for (size_t r = 0; r < g->nnodes && r < CALLGRAPH_NODES_MAX; r++) {
		struct callgraph_node *nd = &g->nodes[order[r]];
		nd->kept = 100.0 * (double)nd->total / (double)g->samples >= CALLGRAPH_NODE_MIN_PCT;
	}
	free(order);
}

int callgraph_build(const struct stack_set *ss, struct callgraph *g)
{
	*g = (struct callgraph){.ss = ss};
	if (!ss->nleaves || ss->total_samples <= 0)
		return 1;
	size_t nf = ss->nfuncs ? ss->nfuncs : 1;
	struct builder b = {.ss = ss,
			    .pair_index = HASHMAP_INIT,
			    .callee_count = HASHMAP_INIT,
			    .node_index = HASHMAP_INIT,
			    .edge_index = HASHMAP_INIT};
	b.func_total = xcalloc(nf, sizeof(*b.func_total));
	b.func_stamp = xcalloc(nf, sizeof(*b.func_stamp));
	b.split = xcalloc(nf, sizeof(*b.split));
	size_t *frames = xmalloc(CALLGRAPH_DEPTH_MAX * sizeof(*frames));
	size_t *fs = xmalloc(CALLGRAPH_DEPTH_MAX * sizeof(*fs));
	for (int pass = 0; pass < 2; pass++) {
		for (size_t l = 0; l < ss->nleaves; l++) {
			size_t k =
			    stack_set_path(ss, ss->leaves[l].node, frames, CALLGRAPH_DEPTH_MAX);
			for (size_t i = 0; i < k; i++)
				fs[i] = ss->frames[frames[i]].func;
			if (!pass)
				pairs_count(&b, fs, k, ss->leaves[l].samples);
			else
				path_add(&b, g, fs, k, ss->leaves[l].samples);
		}
		if (!pass)
			splits_decide(&b);
	}
	g->samples = ss->total_samples;
	prune(g);
	free(frames);
	free(fs);
	free(b.pairs);
	free(b.func_total);
	free(b.func_stamp);
	free(b.split);
	free(b.node_stamp);
	free(b.edge_stamp);
	hashmap_release(&b.pair_index);
	hashmap_release(&b.callee_count);
	hashmap_release(&b.node_index);
	hashmap_release(&b.edge_index);
	return 0;
}

void callgraph_release(struct callgraph *g)
{
	free(g->nodes);
	free(g->edges);
	*g = (struct callgraph){0};
}

/* Outside text inside a DOT string: escaped for the terminal's rules first
 * (control characters and invalid bytes as \xNN), then for DOT's quoting. */
static void dot_text(struct strbuf *out, const char *s, size_t max_chars)
{
	struct strbuf t = STRBUF_INIT;
	utf8_escape(s, strlen(s), max_chars, &t);
	for (size_t i = 0; i < t.len; i++) {
		if (t.buf[i] == '"' || t.buf[i] == '\\')
			strbuf_addch(out, '\\');
		strbuf_addch(out, t.buf[i]);
	}
	strbuf_release(&t);
}

/* gprof2dot's heat: blue (cold) to red (hot) by the share of the samples. */
static void heat(double share, char *buf, size_t cap)
{
	double t = sqrt(share < 0 ? 0 : share > 1 ? 1 : share);
	double h = (1 - t) * (1 - t) * 240.0 / 60.0, s = 0.75, l = 0.62 - 0.12 * t;
	double c = (1 - fabs(2 * l - 1)) * s, x = c * (1 - fabs(fmod(h, 2) - 1)), m = l - c / 2;
	double r = 0, g = 0, b = 0;
	if (h < 1)
		r = c, g = x;
	else if (h < 2)
		r = x, g = c;
	else if (h < 3)
		g = c, b = x;
	else
		g = x, b = c;
	snprintf(buf, cap, "#%02x%02x%02x", (int)lround((r + m) * 255), (int)lround((g + m) * 255),
		 (int)lround((b + m) * 255));
}

void callgraph_dot_write(const struct callgraph *g, const char *title, FILE *out)
{
	struct strbuf sb = STRBUF_INIT;
	char color[16];
	strbuf_addstr(&sb, "digraph callgraph {\n  graph [fontname=\"Helvetica\", label=\"");
	dot_text(&sb, title, 200);
	strbuf_addstr(&sb, "\", labelloc=t, ranksep=0.3, nodesep=0.25];\n"
			   "  node [shape=box, style=\"filled,rounded\", fontname=\"Helvetica\","
			   " fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
	for (size_t i = 0; i < g->nnodes; i++) {
		const struct callgraph_node *nd = &g->nodes[i];
		if (!nd->kept)
			continue;
		const struct stack_func *f = &g->ss->funcs[nd->func];
		double share = (double)nd->total / (double)g->samples;
		heat(share, color, sizeof(color));
		strbuf_addf(&sb, "  n%zu [label=\"", i);
		dot_text(&sb, f->function, CALLGRAPH_NAME_CHARS);
		if (f->file && *f->file) {
			strbuf_addstr(&sb, "\\n");
			dot_text(&sb, path_base(f->file), CALLGRAPH_NAME_CHARS);
		}
		if (nd->caller >= 0) {
			strbuf_addstr(&sb, "\\ncalled from ");
			dot_text(&sb, g->ss->funcs[nd->caller].function, CALLGRAPH_NAME_CHARS);
		}
		strbuf_addf(&sb, "\\n%.2f%%\\n(%.2f%% self)\", fillcolor=\"%s\"];\n", 100 * share,
			    100.0 * (double)nd->self / (double)g->samples, color);
	}
	for (size_t i = 0; i < g->nedges; i++) {
		const struct callgraph_edge *e = &g->edges[i];
		double share = (double)e->samples / (double)g->samples;
		if (!g->nodes[e->from].kept || !g->nodes[e->to].kept ||
		    100 * share < CALLGRAPH_EDGE_MIN_PCT)
			continue;
		heat(share, color, sizeof(color));
		strbuf_addf(&sb,
			    "  n%zu -> n%zu [label=\"%.2f%%\", color=\"%s\", penwidth=%.2f,"
			    " arrowsize=%.2f];\n",
			    e->from, e->to, 100 * share, color, 1 + 5 * share, 0.5 + 0.5 * share);
	}
	strbuf_addstr(&sb, "}\n");
	fwrite(sb.buf, 1, sb.len, out);
	strbuf_release(&sb);
}
