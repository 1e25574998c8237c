/* stackread: the read side of the shared stack tables (stacks.h), for analyses
 * and renderers: the samples of one source summed per distinct stack, with the
 * frames and the prefix-tree nodes they need.
 *
 * Contract:
 * - stack_set_load() reads a recording that may come from anywhere (a crash, an
 *   older sonde, a hand-made file): a missing frame reads as "[unknown]", a
 *   parent that does not exist ends the stack, and a walk never goes deeper
 *   than STACK_DEPTH_MAX (so a cycle cannot loop). Names longer than
 *   STACK_NAME_MAX bytes are cut there (U+2026 marks the cut).
 * - Frames with the same function, file and module share one `func` index:
 *   that is the unit hotspots and flame graphs count (lines of one function
 *   are one function).
 * - Everything is owned by the set; stack_set_release() frees it. */
#ifndef SONDE_STACKREAD_H
#define SONDE_STACKREAD_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/hashmap.h"

struct strbuf;

#define STACK_DEPTH_MAX 1024
#define STACK_NAME_MAX 16384 /* bytes of a function, file or module name */

struct stack_frame_rec {
	char *function;		    /* never NULL: "[unknown]" when the recording has none */
	char *file, *module, *kind; /* NULL when unknown */
	int line;		    /* 0 when unknown */
	size_t func;		    /* index into funcs */
};

/* One function: the frames' (function, file, module). Points into a frame. */
struct stack_func {
	const char *function, *file, *module;
	const char *kind; /* of its first frame */
};

struct stack_node_rec {
	size_t parent; /* index + 1 into nodes; 0: the root */
	size_t frame;  /* index into frames */
};

struct stack_leaf {
	size_t node;	 /* index into nodes */
	int64_t samples; /* rows of samples */
	int64_t weight;	 /* sum of their weight (1 each, or ns, or bytes) */
};

struct stack_set {
	struct stack_frame_rec *frames; /* frames[0] is the "[unknown]" frame */
	size_t nframes;
	struct stack_func *funcs;
	size_t nfuncs;
	struct stack_node_rec *nodes;
	size_t nnodes;
	struct stack_leaf *leaves; /* one per distinct stack with samples */
	size_t nleaves;
	int64_t total_samples, total_weight;
	/* What was loaded, for stack_set_each_sample: the source (owned; NULL
	 * for an empty set) and the fixed condition on samples (NULL: none). */
	char *source;
	const char *filter;
	struct hashmap node_index; /* the recording's node id -> index in nodes */
};

#define STACK_SET_INIT { NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0, 0, NULL, NULL, HASHMAP_INIT }

/* Every load and walk below leaves out the samples of a wrapper (a shell
 * script, a pyenv shim) that started the program: the rows of the connection's
 * temp table wrapper_spans(pid, from_ns, to_ns), when analysis/program.h made
 * one.
 *
 * Loads the samples whose source is `source`. 0 on success (an empty set when
 * the recording has no such samples or no stack tables); -1 with a message in
 * err when the database cannot be read. *ss is written only on success. */
int stack_set_load(sqlite3 *db, const char *source, struct stack_set *ss, struct strbuf *err);
/* The same, for the samples that also meet filter: a fixed SQL condition on
 * the samples' columns ("on_cpu = 0"), a string that outlives ss. */
int stack_set_load_filtered(sqlite3 *db, const char *source, const char *filter,
			    struct stack_set *ss, struct strbuf *err);
/* Frame indices of the stack ending at node, outermost first, in buf (cap
 * entries). Returns the count; when the stack is deeper than cap, the
 * innermost cap frames are kept. */
size_t stack_set_path(const struct stack_set *ss, size_t node, size_t *buf, size_t cap);
void stack_set_release(struct stack_set *ss);

/* The samples ss counted, one by one in time order, restricted to
 * [from_ns, to_ns) of the run (INT64_MIN / INT64_MAX: no bound): fn gets each
 * sample's time (ns since the start), thread, node index and weight (1, or the
 * nanoseconds of an offcpu interval). 0, or -1 with a
 * message in err when the recording cannot be read. */
int stack_set_each_sample(sqlite3 *db, const struct stack_set *ss, int64_t from_ns, int64_t to_ns,
			  void (*fn)(void *arg, int64_t t_ns, int64_t tid, size_t node,
				     int64_t weight),
			  void *arg, struct strbuf *err);

/* One sample as stack_set_each_sample_of() hands it over. */
struct stack_sample {
	int64_t t_ns, pid, tid; /* pid: the sample's own (a tid may be seen in two
				 * processes: a forked child's first reading) */
	size_t node;		/* index into nodes */
	int64_t weight;
};

/* Every sample ss counted, in time order, with its process. 0, or -1 with
 * a message in err. */
int stack_set_each_sample_of(sqlite3 *db, const struct stack_set *ss,
			     void (*fn)(void *arg, const struct stack_sample *s), void *arg,
			     struct strbuf *err);

/* The on-CPU samples, in order of preference: "mixed" (Python stacks with the
 * native frames below them, see src/derive/pystitch.c), else "cpu", else the
 * "python" samples with on_cpu = 1. *source (when not NULL) says which. 0 (ss
 * may be empty) or -1 with a message in err. */
int stack_set_load_on_cpu(sqlite3 *db, struct stack_set *ss, const char **source,
			  struct strbuf *err);

/* What the report's stack views (hotspots, call tree, hot lines, flame graph,
 * folded stacks) count, from `--mode` (meta python_mode). All three are
 * recorded; this is the one place that filters them. */
enum stack_mode {
	STACK_MODE_CPU,	 /* CPU time: stack_set_load_on_cpu() ("mixed" first) */
	STACK_MODE_WALL, /* wall time: every "python" sample, on or off the CPU */
	STACK_MODE_GIL,	 /* the "python" samples whose thread held the GIL */
};

const char *stack_mode_name(enum stack_mode mode); /* "cpu", "wall", "gil" */
/* 0 and *out set, or -1 when s is not a mode name. */
int stack_mode_parse(const char *s, enum stack_mode *out);
/* The recording's meta python_mode; STACK_MODE_CPU when absent or unknown. */
enum stack_mode stack_mode_of(sqlite3 *db);
/* The samples of mode. wall and gil read "python" samples; a recording with
 * none (a native target) gets the on-CPU samples instead, so *source (when
 * not NULL) says which source was read. 0 (ss may be empty) or -1 with a
 * message in err. */
int stack_set_load_mode(sqlite3 *db, enum stack_mode mode, struct stack_set *ss,
			const char **source, struct strbuf *err);

/* A context-sensitive call tree: the stacks merged by function from the
 * outermost frame in, so two call paths into one function stay two nodes. */
struct stack_tree_node {
	size_t func;	     /* index into funcs; unused for the root */
	size_t parent;	     /* index of the parent; the root's is 0 */
	size_t first_child;  /* index + 1, 0 when none */
	size_t next_sibling; /* index + 1, 0 when none */
	int64_t total, self; /* samples (or weight) through and ending here */
	int depth;	     /* 0: the root; 1: the outermost frames */
	int line;	     /* the line with most of its total; 0 when unknown */
};

struct stack_tree {
	struct stack_tree_node *v; /* v[0] is the root, which holds every sample */
	size_t n, alloc;
};

#define STACK_TREE_INIT { NULL, 0, 0 }

/* Builds the tree of ss, counting weight (by_weight) or samples. */
void stack_tree_build(const struct stack_set *ss, int by_weight, struct stack_tree *t);
/* The children of node i, largest total first (ties: function name), in a
 * malloc'd array (free it); *n gets their count. NULL when there are none. */
size_t *stack_tree_children(const struct stack_tree *t, const struct stack_set *ss, size_t i,
			    size_t *n);
void stack_tree_release(struct stack_tree *t);

#endif
