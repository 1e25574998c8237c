/* pystitch: one picture of a Python program, made when the run ends.
 *
 * The cpu probe samples native stacks (where Python code shows as the
 * interpreter's own functions); the python probe samples Python stacks (which
 * do not show time inside C extensions). For every cpu sample, pystitch finds
 * the python sample of the same thread nearest in time (within max_gap_ns) and
 * writes a "mixed" sample: the Python frames, then the native frames below the
 * innermost frame of the interpreter's evaluation machinery (the eval loop,
 * call dispatch, frame set-up: pystitch_is_machinery), kind "native": the C
 * code a Python line calls stays visible (the compiler and parser, json, re,
 * a C extension, a system call), the machinery that runs Python code does
 * not. A cpu
 * sample of a thread with no Python frame at that time keeps its native stack.
 * Analyses and renderers prefer "mixed" when it exists (stackread.h).
 *
 * Runs after both probes have written their samples (the python probe calls it
 * from its stop; the cpu probe comes before it in probe_table). */
#ifndef SONDE_PYSTITCH_H
#define SONDE_PYSTITCH_H

#include <stdint.h>

struct recorder;

/* Returns the number of mixed samples written (0 when there is nothing to
 * stitch: no cpu or no python samples), or -1 on a recording error. */
int64_t python_stitch(struct recorder *rec, int64_t max_gap_ns);

/* 1 when a native module path is the CPython interpreter (python3.X, libpython). */
int pystitch_is_interpreter(const char *module);
/* 1 when a function of the interpreter is its evaluation machinery (what runs
 * Python code: the eval loop, calls, frames, the entry from main), not C code
 * a Python line calls. */
int pystitch_is_machinery(const char *function);

#endif
