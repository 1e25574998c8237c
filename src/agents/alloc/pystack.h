/* pystack: the calling thread's Python stack, read inside the target by the
 * allocation agent, as raw (code object, position, identity) triples for an
 * ALLOC_REC_PYSTACK record (alloc_wire.h). The reader turns them into
 * functions, files and lines (src/probes/alloc_pystack.c).
 *
 * Contract: call it with the agent's re-entrancy guard held (the first call
 * looks symbols up with dlsym, which may allocate). It never allocates, never
 * takes a lock and reads only the calling thread's own frames, each pointer
 * checked before it is followed and the walk bounded. In a process without a
 * CPython it costs one load after the first call. */
#ifndef SONDE_ALLOC_PYSTACK_H
#define SONDE_ALLOC_PYSTACK_H

#include "alloc_wire.h"

#include <stddef.h>
#include <stdint.h>

union pystack_rec {
	struct alloc_rec_pystack p;
	unsigned char raw[sizeof(struct alloc_rec_pystack) + 24 * ALLOC_WIRE_MAX_PYFRAMES];
};

/* Fills rec (header with tid and time, in the image's clock, included) with the calling thread's
 * Python stack and returns 1; 0 when the thread runs no Python code (no
 * thread state, no frame), the process has no CPython the agent can read
 * (3.8 to 3.13), or a pointer looked wrong. */
int pystack_capture(union pystack_rec *rec, uint32_t tid, uint64_t t);

/* Writes at out (room bytes) the ALLOC_REC_PYCODE record that describes the
 * code object of frame (three words of a stack pystack_capture filled during
 * the same allocation: its code is alive, on the thread's stack) and returns
 * its length; 0 when it cannot be described (a string or table beyond the
 * bounds of alloc_wire.h, a version without the offsets) or room is short.
 * Reads the strings and the table in place; never allocates. */
size_t pystack_code_record(const uint64_t *frame, uint32_t tid, uint64_t t, unsigned char *out,
			   size_t room);

/* The code of the bytecode loop (_PyEval_EvalFrameDefault), [*start, *end):
 * 1 when known. An allocation with a Python stack needs its native frames
 * only up to the innermost such frame (the reader drops the rest), so the
 * unwinder may stop there. */
int pystack_eval_range(uintptr_t *start, uintptr_t *end);

#endif
