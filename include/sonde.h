/* sonde.h: name regions of a C or C++ program for sonde's report, without
 * NVTX or the CUDA toolkit. Header-only; copy it next to your code.
 *
 *     #include "sonde.h"
 *     SONDE_REGION_BEGIN("load");   // or sonde_region_push("load")
 *     load();
 *     SONDE_REGION_END();           // or sonde_region_pop()
 *
 * A region is a push/pop range on the calling thread, nested like NVTX's
 * nvtxRangePushA/nvtxRangePop (and recorded exactly as they are: the two
 * mix). Under `sonde run`, a top-level region becomes a phase of the report
 * (docs/regions.md): its wall time, CPU time and the functions its thread
 * spent it in.
 *
 * How: `sonde run` points NVTX_INJECTION64_PATH at its agent for the
 * command. The first call reads that variable; when it is set, the library
 * it names is opened (it is already loaded when the program uses NVTX too)
 * and its sonde_region_push and sonde_region_pop are looked up. Without
 * sonde (the variable unset, or naming another tool's library, which has no
 * such functions) each call costs a load and a branch and does nothing.
 * Calls return the nesting level (push: the level opened; pop: the level
 * closed), or a negative number when nothing was recorded.
 *
 * Link with -ldl where glibc is older than 2.34. Define SONDE_DISABLE to
 * compile every call away. Any thread may call at any time. */
#ifndef SONDE_H
#define SONDE_H

#ifndef SONDE_DISABLE
#include <dlfcn.h>
#include <stdlib.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef SONDE_DISABLE

static inline int sonde_region_push(const char *name)
{
	(void)name;
	return -1;
}
static inline int sonde_region_pop(void)
{
	return -1;
}

#else

typedef int (*sonde_push_fn)(const char *name);
typedef int (*sonde_pop_fn)(void);

struct sonde_fns {
	int state; /* 0: not looked up yet; 1: found; -1: not under sonde */
	sonde_push_fn push;
	sonde_pop_fn pop;
};

/* The agent's functions, looked up once per translation unit. Two threads
 * that race here both look up and store the same values. */
static inline struct sonde_fns *sonde_fns_get(void)
{
	static struct sonde_fns fns;
	if (__atomic_load_n(&fns.state, __ATOMIC_ACQUIRE))
		return &fns;
	const char *path = getenv("NVTX_INJECTION64_PATH");
	void *lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	void *push = lib ? dlsym(lib, "sonde_region_push") : NULL;
	void *pop = lib ? dlsym(lib, "sonde_region_pop") : NULL;
	if (push && pop) {
		__atomic_store_n(&fns.push, (sonde_push_fn)push, __ATOMIC_RELAXED);
		__atomic_store_n(&fns.pop, (sonde_pop_fn)pop, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&fns.state, push && pop ? 1 : -1, __ATOMIC_RELEASE);
	return &fns;
}

/* Opens a region called name (copied; at most 255 bytes are kept). */
static inline int sonde_region_push(const char *name)
{
	struct sonde_fns *f = sonde_fns_get();
	return f->state > 0 ? f->push(name) : -1;
}

/* Closes the calling thread's innermost open region. */
static inline int sonde_region_pop(void)
{
	struct sonde_fns *f = sonde_fns_get();
	return f->state > 0 ? f->pop() : -1;
}

#endif

#define SONDE_REGION_BEGIN(name) ((void)sonde_region_push(name))
#define SONDE_REGION_END()	 ((void)sonde_region_pop())

#ifdef __cplusplus
}
#endif

#endif
