/* alloc_python: Python call sites for the allocation tracker, by time.
 *
 * The agent records native stacks; in a Python process those end in the
 * interpreter's C functions. The python probe samples each thread's Python
 * stack about every 10 ms into the recording (samples, source "python").
 * alloc_pyticks reads those samples as they are written and gives, for an
 * allocation of thread tid at time t, the Python stack of the same thread's
 * sample nearest in time within max_gap_ns (time-correlated attribution: the
 * thread was probably still in that Python line; docs/memory.md). A thread
 * with no Python frames has no samples, so its allocations stay native.
 *
 * Why a probe reads the python samples live instead of a derive pass joining
 * them after the run (derive.h): the heap accounting keys an allocation's site
 * by its Python stack when it applies the allocation, and keeps only per-site
 * figures and the live blocks; a later join would need every allocation event
 * kept to the end (millions in --memory=full). The samples are read from the
 * recording, ALLOC_REORDER_NS behind the events (alloc.c), so the join needs
 * neither the python probe's functions nor its place in probe_table. */
#ifndef SONDE_ALLOC_PYTHON_H
#define SONDE_ALLOC_PYTHON_H

#include "../util/hashmap.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct alloc_pyticks_thread {
	int64_t *t_ns, *node; /* sorted by t_ns */
	size_t n, alloc;
};

struct alloc_pyticks {
	int64_t max_gap_ns;
	int64_t last_rowid; /* samples rows read so far */
	struct hashmap by_tid; /* tid -> index in threads */
	struct hashmap merged;	/* (near, far) nodes -> their common Python stack */
	struct hashmap frame_fn; /* frame id -> hash of (function, file) */
	struct alloc_pyticks_thread *threads;
	size_t nthreads, athreads;
	uint64_t matched, unmatched; /* lookups with and without a sample in reach */
};

void alloc_pyticks_init(struct alloc_pyticks *pt, int64_t max_gap_ns);
void alloc_pyticks_release(struct alloc_pyticks *pt);
/* Adds one Python sample (the unit tests feed them directly). */
void alloc_pyticks_add(struct alloc_pyticks *pt, uint32_t tid, int64_t t_ns, int64_t node);
/* Reads the python samples written since the last call. */
void alloc_pyticks_load(struct alloc_pyticks *pt, sqlite3 *db);
/* The stack_nodes id of tid's Python sample nearest to t_ns within max_gap_ns,
 * else 0. */
int64_t alloc_pyticks_nearest(struct alloc_pyticks *pt, uint32_t tid, int64_t t_ns);

struct stack_writer;

/* The Python stack to charge an allocation of tid at t_ns with: the samples of
 * tid just before and just after t_ns that are within max_gap_ns; when both
 * exist and differ, the thread went from one to the other meanwhile, so the
 * frames they share (same function and file, from the outermost in) are kept,
 * with the nearer sample's lines; 0 when there is no such sample or nothing
 * is shared. New stacks are interned with sw. */
int64_t alloc_pyticks_attribute(struct alloc_pyticks *pt, sqlite3 *db, struct stack_writer *sw,
				uint32_t tid, int64_t t_ns);

/* The frame ids of stack node py_node, outermost first, into out (at most cap);
 * returns the count (0 when it cannot be read). */
size_t alloc_python_path(sqlite3 *db, int64_t py_node, int64_t *out, size_t cap);

#endif
