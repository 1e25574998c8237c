/* cpython: finds a CPython 3.8-3.13 interpreter in a running process and reads
 * every thread's Python stack from outside it with process_vm_readv, never
 * pausing it.
 *
 * cpython_open() looks for python/libpython in /proc/PID/maps, locates
 * _PyRuntime (the .PyRuntime section, the _PyRuntime symbol, or, with neither,
 * a validated scan of .data/.bss), tells the version (file name, Py_Version,
 * _Py_DebugOffsets) and picks the layout: compiled-in for 3.8-3.12, the
 * target's own _Py_DebugOffsets on 3.13. cpython_sample() then walks
 * interpreters -> threads -> frames. Code objects are cached by address (and
 * re-checked on every read), so a sample costs about two small reads per frame.
 * Threads are named by threading's Thread.name (threading._active), read when
 * a thread first shows up and once a second (docs/python.md).
 * Reads race with the running target: a stack that cannot be read consistently
 * is dropped and counted, never reported half-read. */
#ifndef SONDE_CPYTHON_H
#define SONDE_CPYTHON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct strbuf;
struct cpython_proc;

enum cpython_open_result {
	CPYTHON_FOUND = 0,
	CPYTHON_NOT_PYTHON = 1, /* no interpreter mapped (yet): try again later */
	CPYTHON_UNSUPPORTED = 2, /* an interpreter, but a version or build sonde cannot read */
	CPYTHON_ERROR = 3,	 /* the process is gone */
	CPYTHON_DENIED = 4,	 /* its memory may not be read (why names the setting) */
};

/* On CPYTHON_FOUND *out owns the state (free with cpython_close); otherwise
 * *out is untouched and why holds one line naming the reason (the version
 * when it is one sonde does not know). */
enum cpython_open_result cpython_open(pid_t pid, struct cpython_proc **out, struct strbuf *why);
void cpython_close(struct cpython_proc *cp);

/* "3.11" and where the runtime was found, e.g. "/usr/bin/python3.11 (.PyRuntime section)". */
const char *cpython_version(const struct cpython_proc *cp);
const char *cpython_where(const struct cpython_proc *cp);

struct cpython_frame {
	const char *function; /* qualified (Class.method) on 3.11+; owned by cp's cache */
	const char *file;
	int line; /* 0 when unknown */
	uint32_t code_id; /* stable index of the code object in cp's cache */
};

struct cpython_thread {
	pid_t tid;	    /* 0 when unknown */
	const char *name;   /* threading's Thread.name; NULL when unknown; owned by cp */
	uint64_t tstate;    /* the PyThreadState address */
	int holds_gil;	    /* 1, 0, or -1 when unknown */
	int ok;		    /* 0: the stack could not be read consistently (frames empty) */
	int walked;	    /* 1: read now; 0: the previous sample's, kept (see cpython_sample) */
	size_t first, n;    /* frames[first .. first+n), innermost first */
};

struct cpython_sample {
	struct cpython_thread *threads;
	size_t nthreads;
	struct cpython_frame *frames;
	size_t nframes;
};

/* Reads every thread of every interpreter. The sample's arrays belong to cp
 * and stay valid until the next cpython_sample()/cpython_close().
 * 0, or -1 when the process is gone or no longer readable. An interpreter not
 * initialised yet (or finalised) gives 0 threads.
 * A thread that cannot have run Python code since the previous sample (it did
 * not hold the GIL in between: cpython_gil.h), whose thread state, OS thread
 * and innermost frame are the same and whose stack was read whole then, is
 * not walked: its frames are the previous sample's (walked 0), the same a
 * walk would give. Its tid, name and GIL flag are read now. */
int cpython_sample(struct cpython_proc *cp, struct cpython_sample *out);

/* One frame read inside the target (the allocation agent, alloc_wire.h): the
 * code object at address code, at position pos (f_lasti on 3.8-3.10, the
 * instruction pointer on 3.11+), whose CPYTHON_CODE_IDENT was ident then.
 * 0 and *out filled (its strings belong to cp's code cache, valid until the
 * next call or sample), or -1 when no such code object is there now (freed,
 * replaced, or the process is gone). */
int cpython_frame_at(struct cpython_proc *cp, uint64_t code, uint64_t pos, uint64_t ident,
		     struct cpython_frame *out);

/* Changes whenever cp's code cache is dropped (it is bounded): code_ids of
 * an older generation name other code objects. */
uint64_t cpython_code_generation(const struct cpython_proc *cp);

/* Stacks that could not be read consistently since open. */
uint64_t cpython_errors(const struct cpython_proc *cp);
/* Walks done again since open: a stack that moved or could not be read while
 * being read is walked again, up to 12 walks in one sample (the last
 * ones after short pauses). */
uint64_t cpython_rereads(const struct cpython_proc *cp);
/* Stacks kept from the previous sample instead of walked, since open. */
uint64_t cpython_kept(const struct cpython_proc *cp);

#endif
