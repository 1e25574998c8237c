/* py_patterns: named patterns in the C code a Python function's line runs
 * through, from the stacks findings charge to that function (frames.h's
 * frame_own_index): a whole-sequence scan in a loop (`x in a_list`), and
 * writes to a file without a buffer (each one a write(2) system call).
 *
 * Each walk reads every stack of the set once; a function of another kind
 * (or one charged nothing) gets a pattern of 0 samples. */
#ifndef SONDE_PY_PATTERNS_H
#define SONDE_PY_PATTERNS_H

#include <stddef.h>
#include <stdint.h>

struct stack_set;

/* Samples (charged to the function) that ran through the pattern's C code,
 * the Python code that reaches it ("`x in a_list`") and the C function seen
 * most ("list_contains"); both static strings. */
struct py_pattern {
	int64_t samples;
	const char *python, *c_function;
};

/* One of CPython's whole-sequence scans anywhere under the function's line
 * (3.8 reaches list_contains through cmp_outcome and PySequence_Contains). */
struct py_pattern py_pattern_linear_search(const struct stack_set *ss, size_t func);

/* A raw file's write (FileIO.write) under the function's line, with no
 * buffered writer's write between them: a stream opened unbuffered (python
 * -u, PYTHONUNBUFFERED, open(..., buffering=0)) or flushed after each write
 * (print(..., flush=True): the unwound stacks often lack the flush's frames),
 * so every write is a system call. A buffered stream's writes that fill its
 * buffer reach FileIO.write through _io__Buffered_write, and are left out. */
struct py_pattern py_pattern_unbuffered_write(const struct stack_set *ss, size_t func);

#endif
