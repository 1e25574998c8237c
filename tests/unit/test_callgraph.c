/* callgraph: totals and self per function, a sample counted once on a
 * recursion, a function split by caller only when its callers use it in
 * different regimes, pruning, and DOT text that escapes names. */
#include "check.h"
#include "record/stackread.h"
#include "render/callgraph.h"
#include "stacks_fixture.h"

static const struct callgraph_node *node_of(const struct callgraph *g, const char *fn,
					    const char *caller)
{
	for (size_t i = 0; i < g->nnodes; i++) {
		const struct callgraph_node *nd = &g->nodes[i];
		if (strcmp(g->ss->funcs[nd->func].function, fn))
			continue;
		if (!caller && nd->caller < 0)
			return nd;
		if (caller && nd->caller >= 0 && !strcmp(g->ss->funcs[nd->caller].function, caller))
			return nd;
	}
	return NULL;
}

static int64_t edge_of(const struct callgraph *g, const struct callgraph_node *a,
		       const struct callgraph_node *b)
{
	for (size_t i = 0; i < g->nedges; i++)
		if (&g->nodes[g->edges[i].from] == a && &g->nodes[g->edges[i].to] == b)
			return g->edges[i].samples;
	return 0;
}

/* The graph's DOT text (free it). */
static char *dot_of(const struct callgraph *g, const char *title)
{
	char *dot = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&dot, &len);
	callgraph_dot_write(g, title, f);
	fclose(f);
	return dot;
}

static void load(struct fixture *fx, struct stack_set *ss, struct callgraph *g)
{
	struct strbuf err = STRBUF_INIT;
	fixture_reopen(fx);
	if (stack_set_load(fx->db, "cpu", ss, &err) || callgraph_build(ss, g)) {
		fprintf(stderr, "load: %s\n", err.buf);
		exit(2);
	}
	strbuf_release(&err);
}

TEST(two_regimes_are_two_nodes,
     "a function that computes under one caller and calls out under another is drawn once "
     "per caller; one used alike by its callers stays one node")
{
	struct fixture fx;
	struct stack_set ss;
	struct callgraph g;
	fixture_open(&fx, 1000000000);
	/* hash computes itself under parse, and spends its time in memcmp under lookup. */
	STACK(&fx, 40, "cpu", 1, "main", "parse", "hash");
	STACK(&fx, 30, "cpu", 1, "main", "lookup", "hash", "memcmp");
	/* log_line does the same under both. */
	STACK(&fx, 10, "cpu", 1, "main", "parse", "log_line", "write");
	STACK(&fx, 10, "cpu", 1, "main", "lookup", "log_line", "write");
	/* A recursion counts once in total. */
	STACK(&fx, 10, "cpu", 1, "main", "walk", "walk", "walk");
	load(&fx, &ss, &g);
	const struct callgraph_node *hp = node_of(&g, "hash", "parse"),
				    *hl = node_of(&g, "hash", "lookup"),
				    *one = node_of(&g, "log_line", NULL),
				    *m = node_of(&g, "main", NULL), *w = node_of(&g, "walk", NULL),
				    *p = node_of(&g, "parse", NULL);
	REQUIRE(hp && hl && one && m && w && p);
	CHECK(!node_of(&g, "hash", NULL) && !node_of(&g, "log_line", "parse"));
	CHECK(hp->total == 40 && hp->self == 40 && hl->total == 30 && hl->self == 0);
	CHECK(one->total == 20 && m->total == 100 && m->self == 0);
	CHECK(w->total == 10 && w->self == 10);
	CHECK(edge_of(&g, p, hp) == 40 && edge_of(&g, p, one) == 10 && edge_of(&g, m, w) == 10);
	char *dot = dot_of(&g, "title");
	CHECK_CONTAINS(dot, "hash\\nwork.c\\ncalled from parse\\n40.00%\\n(40.00% self)");
	CHECK_CONTAINS(dot, "hash\\nwork.c\\ncalled from lookup\\n30.00%\\n(0.00% self)");
	CHECK(!strstr(dot, "-> n") || strstr(dot, "label=\"40.00%\""));
	free(dot);
	callgraph_release(&g);
	stack_set_release(&ss);
	fixture_close(&fx);
}

TEST(small_nodes_are_left_out, "a function under half a percent of the samples is not drawn")
{
	struct fixture fx;
	struct stack_set ss;
	struct callgraph g;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 999, "cpu", 1, "main", "big");
	STACK(&fx, 1, "cpu", 1, "main", "tiny");
	load(&fx, &ss, &g);
	const struct callgraph_node *t = node_of(&g, "tiny", NULL), *b = node_of(&g, "big", NULL);
	REQUIRE(t && b);
	CHECK(!t->kept && b->kept);
	char *dot = dot_of(&g, "t");
	CHECK(!strstr(dot, "tiny") && strstr(dot, "big"));
	free(dot);
	callgraph_release(&g);
	stack_set_release(&ss);
	fixture_close(&fx);
}

TEST(dot_escapes_names, "quotes, backslashes and control characters in names stay inside "
			"their DOT string")
{
	struct fixture fx;
	struct stack_set ss;
	struct callgraph g;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 5, "cpu", 1, "main", "evil\"];\nn9 [label=\"x\\");
	load(&fx, &ss, &g);
	char *dot = dot_of(&g, "a \"title\"");
	CHECK_CONTAINS(dot, "evil\\\"];\\\\x0an9 [label=\\\"x\\\\");
	CHECK_CONTAINS(dot, "label=\"a \\\"title\\\"\"");
	/* Every line of the graph is one statement: no raw line break got in. */
	CHECK(!strstr(dot, "\nn9"));
	free(dot);
	callgraph_release(&g);
	stack_set_release(&ss);
	fixture_close(&fx);
}

CHECK_MAIN()
