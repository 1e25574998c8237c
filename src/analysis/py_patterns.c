/* py_patterns: named patterns in the C code under a Python function's line. */
#include "py_patterns.h"
#include "frames.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* CPython's C functions that scan a whole sequence, and the Python code that
 * calls them: most of a line's time in one is a search in a loop. */
static const struct {
	const char *c_function, *python;
} linear_searches[] = {
	{ "list_contains", "`x in a_list`" },
	{ "list_index_impl", "`a_list.index(x)`" },
	{ "list_index", "`a_list.index(x)`" },
	{ "list_remove", "`a_list.remove(x)`" },
	{ "list_count", "`a_list.count(x)`" },
	{ "tuplecontains", "`x in a_tuple`" },
	{ "tuple_contains", "`x in a_tuple`" },
	{ "deque_contains", "`x in a_deque`" },
	{ "deque_index_impl", "`a_deque.index(x)`" },
	{ "deque_remove", "`a_deque.remove(x)`" },
};

#define N_SEARCHES (sizeof(linear_searches) / sizeof(linear_searches[0]))

/* Calls fn for every stack charged to func: its path, the own frame's index
 * k in it, the frame count n and its samples. */
static void each_charged(const struct stack_set *ss, size_t func,
			 void (*fn)(void *arg, const struct stack_set *ss, const size_t *path,
				    size_t k, size_t n, int64_t samples),
			 void *arg)
{
	size_t *path = xmalloc(STACK_DEPTH_MAX * sizeof(*path));
	for (size_t l = 0; l < ss->nleaves; l++) {
		const struct stack_leaf *leaf = &ss->leaves[l];
		size_t n = stack_set_path(ss, leaf->node, path, STACK_DEPTH_MAX);
		size_t k = frame_own_index(ss, path, n);
		if (k < n && ss->frames[path[k]].func == func)
			fn(arg, ss, path, k, n, leaf->samples);
	}
	free(path);
}

static void count_search(void *arg, const struct stack_set *ss, const size_t *path, size_t k,
			 size_t n, int64_t samples)
{
	int64_t *by_kind = arg;
	for (size_t i = k + 1; i < n; i++) {
		const char *name = ss->frames[path[i]].function;
		for (size_t kind = 0; kind < N_SEARCHES; kind++)
			if (!strcmp(name, linear_searches[kind].c_function)) {
				by_kind[kind] += samples;
				return;
			}
	}
}

struct py_pattern py_pattern_linear_search(const struct stack_set *ss, size_t func)
{
	int64_t by_kind[N_SEARCHES] = { 0 };
	each_charged(ss, func, count_search, by_kind);
	struct py_pattern p = { 0, NULL, NULL };
	size_t best = 0;
	for (size_t kind = 0; kind < N_SEARCHES; kind++) {
		p.samples += by_kind[kind];
		if (by_kind[kind] > by_kind[best])
			best = kind;
	}
	p.python = linear_searches[best].python;
	p.c_function = linear_searches[best].c_function;
	return p;
}

/* A buffered writer's write: a FileIO.write under it is a full buffer's,
 * not one per write of the program's. */
static int is_buffered_writer(const char *name)
{
	return !strncmp(name, "_io__Buffered_write", 19);
}

static void count_unbuffered(void *arg, const struct stack_set *ss, const size_t *path, size_t k,
			     size_t n, int64_t samples)
{
	int64_t *count = arg;
	for (size_t i = k + 1; i < n; i++) {
		const char *name = ss->frames[path[i]].function;
		if (is_buffered_writer(name))
			return;
		if (!strcmp(name, "_io_FileIO_write") || !strcmp(name, "_io_FileIO_write_impl")) {
			*count += samples;
			return;
		}
	}
}

struct py_pattern py_pattern_unbuffered_write(const struct stack_set *ss, size_t func)
{
	struct py_pattern p = { 0, "a write to an unbuffered file", "_io_FileIO_write" };
	each_charged(ss, func, count_unbuffered, &p.samples);
	return p;
}
