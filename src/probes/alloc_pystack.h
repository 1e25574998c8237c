/* alloc_pystack: Python call sites for the allocation tracker, from the stacks
 * the agent read inside the target (ALLOC_REC_PYSTACK, alloc_wire.h).
 *
 * The agent sends raw (code object address, position, identity) frames, and
 * describes each code object once per thread (ALLOC_REC_PYCODE: name, file,
 * first line, line table) before the first stack that names it. This module
 * keeps those descriptions per process image and resolves a frame from its
 * code's description, so a stack resolves however long after its process
 * exited sonde reads it; before 3.11 (no co_qualname) it names a method
 * Class.method from the source, as the out-of-process reader does (through
 * the process while it lives, else at the file's absolute path). A frame of
 * a code object the agent could not describe is resolved with the
 * out-of-process CPython reader (cpython_frame_at) on the live process. It interns
 * the Python path (outermost first) in the shared stack tables. Resolved
 * frames and stacks are cached per process image. A stack that cannot be
 * resolved (no description, and the process is gone or the code freed) is
 * unresolved, and the probe falls back to time correlation (alloc_python.h). */
#ifndef SONDE_ALLOC_PYSTACK_READER_H
#define SONDE_ALLOC_PYSTACK_READER_H

#include "../util/hashmap.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct alloc_pycode_entry;
struct cpython_proc;
struct pystack_retry;
struct pystack_source;
struct stack_writer;

struct alloc_pystack_proc {
	pid_t pid;
	uint32_t space;		 /* the process image it was opened for */
	struct cpython_proc *cp; /* NULL: not open (yet) */
	int given_up;		 /* the interpreter cannot be read: stop trying */
	int64_t retry_ns;	 /* CLOCK_MONOTONIC time of the next try to open */
};

struct alloc_pystacks {
	struct alloc_pystack_proc *procs;
	size_t nprocs, aprocs;
	struct alloc_pycode_entry *codes; /* the agent's descriptions of code objects */
	size_t ncodes, acodes, code_bytes;
	struct hashmap code_index;	/* (space, code, identity) -> index in codes */
	struct pystack_source *sources; /* before 3.11, to name methods */
	size_t nsources, source_bytes;
	struct hashmap frames;	/* (space, code, position, identity) -> frames id */
	struct hashmap stacks;	/* (space, raw frames) -> stack node of the Python path */
	struct hashmap ids;	/* (space, tid, id) -> stack node, -1 unresolved, -2 - k retry k */
	struct pystack_retry *retries; /* unresolved ids to try again */
	size_t nretries, aretries;
	struct hashmap nodes;	/* stack nodes made here (1), for the site's method */
	struct hashmap active;	/* spaces with at least one resolved stack (1) */
	uint64_t resolved, unresolved; /* allocations whose Python stack did, did not resolve */
};

void alloc_pystacks_init(struct alloc_pystacks *ps);
void alloc_pystacks_release(struct alloc_pystacks *ps);

/* One ALLOC_REC_PYCODE record (len bytes, whole) of image space: kept (the
 * first one of each code object; past PYSTACK_CODES_MAX entries or bytes,
 * none). 0, or -1 when the record is malformed. */
int alloc_pystacks_code(struct alloc_pystacks *ps, uint32_t space, const unsigned char *rec,
			size_t len);

/* One ALLOC_REC_PYSTACK record (len bytes, whole) of thread tid of process
 * pid, image space: resolved now and kept under its id (the thread's events
 * name it). 0, or -1 when the record is malformed. sw interns frames and
 * stacks. */
int alloc_pystacks_record(struct alloc_pystacks *ps, struct stack_writer *sw, pid_t pid,
			  uint32_t space, uint32_t tid, const unsigned char *rec, size_t len);

/* The Python stack (stack_nodes id) that thread tid's allocation names by id:
 * > 0 resolved, -1 when it could not be resolved (a stack that did not
 * resolve when its record came is tried again, every 100 ms for 2 s) or was
 * never sent (its record was lost). Counted in resolved or unresolved. */
int64_t alloc_pystacks_take(struct alloc_pystacks *ps, struct stack_writer *sw, uint32_t space,
			    uint32_t tid, uint32_t id);

int alloc_pystacks_active(const struct alloc_pystacks *ps, uint32_t space);

/* 1 when node is a Python path made from an in-process stack. */
int alloc_pystacks_made(const struct alloc_pystacks *ps, int64_t node);

#endif
