/* callgraph: the call graph of a run's on-CPU stacks, as gprof2dot draws it
 * (a node per function with its total and self share, heat colours, an edge
 * per call with its share), but context-sensitive where it matters: a
 * function whose cost differs a lot by caller is drawn once per caller, so
 * two regimes are never averaged into one node.
 *
 * Contract:
 * - Built from a stack set (stackread.h); a sample counts once in a
 *   function's total however often the function recurs on its stack, and
 *   once on an edge; self is the leaf's.
 * - A function is split by caller when two or more of its callers each
 *   reach CALLGRAPH_SPLIT_MIN_PCT of its total and their self shares of it
 *   differ by CALLGRAPH_SPLIT_SELF_DIFF or more, or their hottest callees
 *   differ (one regime computes, another calls out). The node of a split
 *   function is "f" called from "c", and the split is said in its label.
 * - Nodes under CALLGRAPH_NODE_MIN_PCT of the samples and edges under
 *   CALLGRAPH_EDGE_MIN_PCT are left out, and at most CALLGRAPH_NODES_MAX
 *   nodes are kept (the hottest), so Graphviz lays it out quickly.
 * - callgraph_dot_write() writes Graphviz's DOT language; every name from
 *   the target is escaped for a DOT string (quotes, backslashes, control
 *   characters, invalid UTF-8). */
#ifndef SONDE_CALLGRAPH_H
#define SONDE_CALLGRAPH_H

#include <stdint.h>
#include <stdio.h>

struct stack_set;

#define CALLGRAPH_NODE_MIN_PCT 0.5
#define CALLGRAPH_EDGE_MIN_PCT 0.1
#define CALLGRAPH_NODES_MAX 80
#define CALLGRAPH_SPLIT_MIN_PCT 10.0  /* of the function's total, per caller */
#define CALLGRAPH_SPLIT_SELF_DIFF 0.3 /* self / total between two callers */

struct callgraph_node {
	size_t func; /* index into the stack set's funcs */
	long caller; /* the caller's func for a split function's node; -1: not split */
	int64_t total, self;
	int kept;
};

struct callgraph_edge {
	size_t from, to; /* node indices */
	int64_t samples;
};

struct callgraph {
	const struct stack_set *ss;
	struct callgraph_node *nodes;
	size_t nnodes;
	struct callgraph_edge *edges;
	size_t nedges;
	int64_t samples; /* all of the set's */
};

/* 0, or 1 when the set has no samples (*g is empty then). */
int callgraph_build(const struct stack_set *ss, struct callgraph *g);
void callgraph_release(struct callgraph *g);
/* The graph in DOT, titled title (escaped). */
void callgraph_dot_write(const struct callgraph *g, const char *title, FILE *out);

#endif
