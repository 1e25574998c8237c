/* pyframes: which native frames belong to the CPython interpreter, and which
 * of those are its evaluation machinery (what runs Python code) rather than C
 * code a Python line calls. Pure functions of a module path or function name,
 * shared by the Python + native stitch (derive/pystitch.c) and the allocation
 * sites' native frames (probes/alloc_write.c). */
#ifndef SONDE_PYFRAMES_H
#define SONDE_PYFRAMES_H

/* 1 when a native module path is the CPython interpreter (python3.X, libpython). */
int pyframes_is_interpreter(const char *module);
/* 1 when a function of the interpreter is its evaluation machinery (what runs
 * Python code: the eval loop, calls, frames, the entry from main), not C code
 * a Python line calls. */
int pyframes_is_machinery(const char *function);

#endif
