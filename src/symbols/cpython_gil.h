/* cpython_gil: which threads of an interpreter may have run Python code
 * between two reads of its GIL. A thread's Python stack changes only while it
 * holds the GIL, and the GIL counts every hand-over to another thread than
 * its last holder (switch_number), so two reads that saw no hand-over, or
 * one, name every thread whose stack may differ between them. */
#ifndef SONDE_CPYTHON_GIL_H
#define SONDE_CPYTHON_GIL_H

#include <stdint.h>

/* One read of a struct _gil_runtime_state. */
struct cpython_gil_seen {
	uint64_t gil;	   /* its address; 0: not read (unknown) */
	uint64_t holder;   /* last_holder: a PyThreadState address, 0 none yet */
	uint64_t switches; /* switch_number */
};

/* The threads (PyThreadState addresses) that may have held the GIL between
 * the read before and the read now: their number (1 or 2) with them in
 * ran[], or -1 when any thread may have (a read unknown, another GIL, or more
 * than one hand-over, which hides who held it in between). The GIL's writer
 * stores last_holder before it counts the switch, so a read may see the new
 * holder with the old count: such a holder is named too (it had not run
 * yet), and a count that moved by one without a new holder is taken as a
 * hand-over not seen, so -1. */
int cpython_gil_ran(const struct cpython_gil_seen *before, const struct cpython_gil_seen *now,
		    uint64_t ran[2]);

#endif
