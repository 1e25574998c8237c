/* hooks: the allocator entry points. The malloc family is interposed (the
 * real functions found with dlsym(RTLD_NEXT), a static bump buffer serving
 * the calls made until then) and CPython's object allocators are wrapped;
 * both decide here, on an inline fast path, whether an allocation is sampled
 * (by bytes) and whether a free is of a sampled pointer, and hand what is
 * recorded to stacks.c (an allocation) or buffers.c (a free). */
#include "agent.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the real allocator, and the bootstrap buffer ---- */

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

/* dlsym itself may call calloc: those calls, and any before resolution ends,
 * get memory from here; it is never given back. */
static _Alignas(64) unsigned char boot_buf[64 * 1024];
static size_t boot_used;
static int resolving;

static int is_boot(const void *p)
{
	return (const unsigned char *)p >= boot_buf && (const unsigned char *)p < boot_buf + sizeof(boot_buf);
}

static void *boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	/* A 16-byte header before the block keeps its size for realloc. */
	size_t start = (boot_used + 16 + align - 1) & ~(align - 1);
	if (start + size > sizeof(boot_buf) || start + size < start)
		return NULL;
	((size_t *)(boot_buf + start))[-1] = size;
	boot_used = start + size;
	return boot_buf + start; /* static storage: already zero */
}

void agent_resolve(void)
{
	if (real_malloc || resolving)
		return;
	resolving = 1;
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	real_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
	void *m = dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
	real_malloc = (void *(*)(size_t))m; /* last: it tells the others are ready */
}

/* ---- sampling ---- */

/* The set of live sampled pointers, so a free is only sent for those.
 * Open addressing over atomics; 1 marks a deleted slot. The table (512 KiB)
 * is too big for the cache, so every free first asks a counting filter of
 * 16 KiB, which stays in L1: zero means no sampled pointer hashes there (the
 * common case; a table probe on every free doubled the cost of free). A
 * counter that reaches 255 sticks there. */
#define SAMPLED_SLOTS (1u << 16)
#define SAMPLED_PROBES 64
#define FILTER_SLOTS (1u << 14)
static _Atomic uintptr_t sampled[SAMPLED_SLOTS];
static _Atomic unsigned char sampled_filter[FILTER_SLOTS];
static atomic_long sampled_live; /* sampled pointers in the table (0: skip it all) */
static atomic_int all_frees; /* the sampled-pointer set overflowed */
/* The thread's bytes to its next sample point, and its generator's state. */
static AGENT_TLS int64_t until_sample;
static AGENT_TLS uint64_t rng_state;

static size_t slot_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ULL >> 48) & (SAMPLED_SLOTS - 1);
}

static size_t filter_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0xC2B2AE3D27D4EB4FULL >> 50) & (FILTER_SLOTS - 1);
}

static void filter_add(uintptr_t p, int delta)
{
	_Atomic unsigned char *c = &sampled_filter[filter_of(p)];
	unsigned char cur = atomic_load_explicit(c, memory_order_relaxed);
	while (cur != 255 && !(delta < 0 && cur == 0) &&
	       !atomic_compare_exchange_weak(c, &cur, (unsigned char)(cur + delta)))
		;
}

static void sampled_add(uintptr_t p)
{
	atomic_fetch_add_explicit(&sampled_live, 1, memory_order_relaxed);
	filter_add(p, 1); /* before the table: a free never misses it */
	size_t i = slot_of(p);
	for (int k = 0; k < SAMPLED_PROBES; k++, i = (i + 1) & (SAMPLED_SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&sampled[i], memory_order_relaxed);
		if ((cur == 0 || cur == 1) &&
		    atomic_compare_exchange_strong(&sampled[i], &cur, p))
			return;
	}
	atomic_store(&all_frees, 1);
}

static int sampled_take(uintptr_t p)
{
	if (!atomic_load_explicit(&sampled_filter[filter_of(p)], memory_order_relaxed))
		return 0;
	size_t i = slot_of(p);
	for (int k = 0; k < SAMPLED_PROBES; k++, i = (i + 1) & (SAMPLED_SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&sampled[i], memory_order_relaxed);
		if (cur == 0)
			return 0;
		if (cur == p && atomic_compare_exchange_strong(&sampled[i], &cur, 1)) {
			filter_add(p, -1);
			atomic_fetch_sub_explicit(&sampled_live, 1, memory_order_relaxed);
			return 1;
		}
	}
	return 0;
}

static double rng_uniform(void)
{
	if (!rng_state)
		rng_state = agent_now_ns() ^ ((uint64_t)agent_gettid_cached() << 32) ^
			    0x2545F4914F6CDD1DULL;
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	uint64_t r = rng_state * 0x2545F4914F6CDD1DULL;
	return ((double)(r >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

static int64_t next_distance(void)
{
	return (int64_t)(-log(rng_uniform()) * (double)agent_interval_bytes) + 1;
}

/* Poisson sampling by bytes: every byte is a sample point with probability
 * 1/interval, so an allocation of n bytes is recorded with probability
 * 1 - exp(-n/interval); the reader weights it by the inverse. */
int agent_should_sample(size_t size)
{
	if (!agent_interval_bytes)
		return 1;
	if (until_sample <= 0)
		until_sample = next_distance();
	until_sample -= (int64_t)size;
	if (until_sample > 0)
		return 0;
	until_sample = next_distance();
	return 1;
}

/* The hooks' work is split: an inline fast path that most calls of sampled
 * mode leave at once, and an out-of-line rest, so the fast path saves no
 * registers (the prologue of the whole thing cost more than the checks). */
__attribute__((noinline)) static void alloc_slow(void *ptr, size_t size)
{
	if (!ptr || !agent_enabled || agent_in_hook)
		return;
	agent_in_hook++;
	if (agent_should_sample(size)) {
		if (agent_interval_bytes)
			sampled_add((uintptr_t)ptr);
		agent_record_alloc(ptr, size);
	}
	agent_in_hook--;
}

static inline void on_alloc(void *ptr, size_t size)
{
	/* Sampled mode, not this time: what agent_should_sample would do, minus the draw. */
	if (agent_interval_bytes && until_sample > 0 && (int64_t)size < until_sample) {
		until_sample -= (int64_t)size;
		return;
	}
	alloc_slow(ptr, size);
}

__attribute__((noinline)) static void free_slow(void *ptr, int filtered)
{
	if (!ptr || !agent_enabled || agent_in_hook)
		return;
	if (filtered && !sampled_take((uintptr_t)ptr))
		return;
	agent_in_hook++;
	agent_emit_event(ALLOC_EV_FREE, agent_stamp_before(), (uintptr_t)ptr, 0, NULL, 0, NULL);
	agent_in_hook--;
}

/* A free in sampled mode while the sampled set holds: sent only for a
 * sampled pointer. Most leave at the live count, then at the filter, which
 * stays in the cache: no call for most frees. */
static inline void on_free_sampled(void *ptr)
{
	if (!atomic_load_explicit(&sampled_live, memory_order_relaxed))
		return;
	if (!atomic_load_explicit(&sampled_filter[filter_of((uintptr_t)ptr)],
				  memory_order_relaxed))
		return;
	free_slow(ptr, 1);
}

/* Every free is sent: full mode, or the sampled set overflowed. */
static inline int frees_all(void)
{
	return !agent_interval_bytes || atomic_load_explicit(&all_frees, memory_order_relaxed);
}

static inline void on_free(void *ptr)
{
	if (frees_all())
		free_slow(ptr, 0);
	else
		on_free_sampled(ptr);
}

/* ---- the hooks ---- */

AGENT_EXPORT void *malloc(size_t size)
{
	if (!real_malloc) {
		agent_resolve();
		if (!real_malloc)
			return boot_alloc(size, 16);
	}
	void *p = real_malloc(size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void free(void *ptr)
{
	if (!ptr || is_boot(ptr) || !real_free)
		return;
	on_free(ptr);
	real_free(ptr);
}

AGENT_EXPORT void *calloc(size_t n, size_t size)
{
	if (!real_malloc) {
		agent_resolve();
		if (!real_malloc) {
			size_t total;
			if (__builtin_mul_overflow(n, size, &total))
				return NULL;
			return boot_alloc(total, 16);
		}
	}
	void *p = real_calloc(n, size);
	on_alloc(p, n * size);
	return p;
}

AGENT_EXPORT void *realloc(void *ptr, size_t size)
{
	if (!real_malloc)
		agent_resolve();
	if (ptr && is_boot(ptr)) {
		void *p = malloc(size);
		size_t old = ((size_t *)ptr)[-1];
		if (p)
			memcpy(p, ptr, old < size ? old : size);
		return p;
	}
	if (!real_malloc)
		return boot_alloc(size, 16);
	/* The old block may be released inside realloc: its free goes first. */
	if (ptr)
		on_free(ptr);
	void *p = real_realloc(ptr, size);
	if (p)
		on_alloc(p, size);
	else if (ptr && size)
		on_alloc(ptr, malloc_usable_size(ptr)); /* failed: the old block lives on */
	return p;
}

AGENT_EXPORT void *reallocarray(void *ptr, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, total);
}

AGENT_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (!real_malloc) {
		agent_resolve();
		if (!real_malloc) {
			void *p = boot_alloc(size, align);
			if (!p)
				return ENOMEM;
			*out = p;
			return 0;
		}
	}
	int rc = real_posix_memalign(out, align, size);
	if (!rc)
		on_alloc(*out, size);
	return rc;
}

AGENT_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (!real_malloc) {
		agent_resolve();
		if (!real_malloc)
			return boot_alloc(size, align);
	}
	void *p = real_aligned_alloc ? real_aligned_alloc(align, size) : real_memalign(align, size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void *memalign(size_t align, size_t size)
{
	if (!real_malloc) {
		agent_resolve();
		if (!real_malloc)
			return boot_alloc(size, align);
	}
	void *p = real_memalign(align, size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void *valloc(size_t size)
{
	if (!real_malloc) {
		agent_resolve();
		if (!real_malloc)
			return boot_alloc(size, 4096);
	}
	void *p = real_valloc(size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void *pvalloc(size_t size)
{
	if (!real_malloc) {
		agent_resolve();
		if (!real_malloc)
			return boot_alloc(size, 4096);
	}
	void *p = real_pvalloc(size);
	on_alloc(p, size);
	return p;
}

/* ---- CPython's object allocators ----
 *
 * CPython serves its small objects from pymalloc's arenas (256 KiB, 1 MiB
 * from 3.10), which the hooks above see only as arenas. In an image with a
 * CPython 3.8 or later (its API exported by the executable or a library it
 * was linked with), the agent wraps the allocators of the MEM and OBJ
 * domains before the interpreter starts, with PyMem_SetAllocator (the hook
 * tracemalloc uses): every small object is sampled like a malloc, and
 * pymalloc keeps serving it (PYTHONMALLOC=malloc, the other way to see
 * objects, costs the program up to a fifth of its time). Both domains are
 * called with the GIL held.
 *
 * Nothing is counted twice: pymalloc hands a request above its small-object
 * limit to malloc, so the wrappers pass those through untouched and the
 * malloc hooks record them; the arenas' own mappings are made under the
 * re-entrancy guard (the arena allocator is wrapped too), so they are not
 * allocations. A realloc may move a block between pymalloc and malloc: it
 * runs under the guard, with the sampling distance put back afterwards (a
 * byte is not drawn twice), and is recorded here. In full mode a free also
 * runs under the guard: the malloc hooks would send a large block's free a
 * second time (and in sampled mode once every free is sent).
 *
 * Only 3.8 and later are wrapped (3.6 and 3.7 reset their allocators after
 * the agent's constructor, 3.5 serves PyMem_Malloc with malloc). When
 * PYTHONMALLOC or PYTHONDEVMODE is set, or CPython was built without pymalloc
 * or free-threaded, the agent leaves the allocators alone (with
 * PYTHONMALLOC=malloc the objects are malloc'd, and seen anyway). Should
 * CPython still replace the wrappers at start (-X dev, an embedder's
 * PyPreConfig), the next arena the agent sees says so: from then on arenas
 * are not guarded (they count as mappings, as without the wrappers) and an
 * ALLOC_REC_PYMEM_LOST record tells the reader. */
struct py_allocator { /* PyMemAllocatorEx */
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t size);
	void (*free)(void *ctx, void *ptr);
};

struct py_arena_allocator { /* PyObjectArenaAllocator */
	void *ctx;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
};

enum { PY_DOMAIN_RAW = 0, PY_DOMAIN_MEM = 1, PY_DOMAIN_OBJ = 2 }; /* PyMemAllocatorDomain */

/* pymalloc's SMALL_REQUEST_THRESHOLD: larger requests (and empty ones) go to
 * PyMem_RawMalloc, so to the malloc hooks. */
#define PY_SMALL_BYTES 512

/* The wrapped allocators (each wrapper's context). */
static struct py_allocator py_wrapped[3];
static struct py_arena_allocator py_arena;
static void (*py_get_allocator)(int, struct py_allocator *);
static atomic_int py_lost; /* CPython replaced the wrappers */

/* A small object, sampled or in full mode: allocated, then recorded. */
__attribute__((noinline)) static void *py_malloc_record(const struct py_allocator *o, size_t size)
{
	void *p = o->malloc(o->ctx, size);
	alloc_slow(p, size);
	return p;
}

/* The common case is one countdown and a tail call. */
static void *py_malloc(void *ctx, size_t size)
{
	const struct py_allocator *o = ctx;
	if (size - 1 >= PY_SMALL_BYTES) /* 0 or above the limit */
		return o->malloc(o->ctx, size);
	if (agent_interval_bytes && until_sample > (int64_t)size) {
		until_sample -= (int64_t)size;
		return o->malloc(o->ctx, size);
	}
	return py_malloc_record(o, size);
}

__attribute__((noinline)) static void *py_calloc_record(const struct py_allocator *o,
							size_t nelem, size_t elsize, size_t size)
{
	void *p = o->calloc(o->ctx, nelem, elsize);
	alloc_slow(p, size);
	return p;
}

static void *py_calloc(void *ctx, size_t nelem, size_t elsize)
{
	const struct py_allocator *o = ctx;
	size_t size;
	if (__builtin_mul_overflow(nelem, elsize, &size) || size - 1 >= PY_SMALL_BYTES)
		return o->calloc(o->ctx, nelem, elsize);
	if (agent_interval_bytes && until_sample > (int64_t)size) {
		until_sample -= (int64_t)size;
		return o->calloc(o->ctx, nelem, elsize);
	}
	return py_calloc_record(o, nelem, elsize, size);
}

/* The old block's free goes first, as for realloc; if the call fails the old
 * block stays with the program but not in the books (pymalloc cannot say its
 * size): a leak this rare is not worth a wrong size. */
static void *py_realloc(void *ctx, void *ptr, size_t size)
{
	const struct py_allocator *o = ctx;
	if (ptr)
		on_free(ptr);
	int64_t distance = until_sample;
	agent_in_hook++;
	void *p = o->realloc(o->ctx, ptr, size);
	agent_in_hook--;
	until_sample = distance;
	if (p)
		on_alloc(p, size ? size : 1);
	return p;
}

/* Every free is sent (full mode, or the sampled set overflowed): the one
 * underneath is not. */
__attribute__((noinline)) static void py_free_all(const struct py_allocator *o, void *ptr)
{
	free_slow(ptr, 0);
	agent_in_hook++;
	o->free(o->ctx, ptr);
	agent_in_hook--;
}

static void py_free(void *ctx, void *ptr)
{
	const struct py_allocator *o = ctx;
	if (ptr && frees_all())
		return py_free_all(o, ptr);
	/* A large block's free meets the malloc hooks again underneath: its
	 * sampled pointer is gone from the set by then, so nothing goes twice. */
	if (ptr)
		on_free_sampled(ptr);
	o->free(o->ctx, ptr);
}

/* Whether the object allocator is still the wrapper; once not, never again
 * (checked per arena, called with the GIL held). */
static int py_wrapped_still(void)
{
	if (atomic_load_explicit(&py_lost, memory_order_relaxed))
		return 0;
	struct py_allocator cur;
	py_get_allocator(PY_DOMAIN_OBJ, &cur);
	if (cur.malloc == py_malloc)
		return 1;
	if (!atomic_exchange(&py_lost, 1) && agent_enabled) {
		struct alloc_rec_head r = { ALLOC_REC_PYMEM_LOST, sizeof(r), agent_gettid_cached(),
					    agent_stamp_before() };
		agent_in_hook++; /* the thread's first buffer is a mapping of the agent's own */
		agent_emit(&r);
		agent_in_hook--;
	}
	return 0;
}

static void *py_arena_alloc(void *ctx, size_t size)
{
	(void)ctx;
	if (!py_wrapped_still())
		return py_arena.alloc(py_arena.ctx, size);
	agent_in_hook++;
	void *p = py_arena.alloc(py_arena.ctx, size);
	agent_in_hook--;
	return p;
}

/* Once the wrappers are gone, arenas are freed in the open: the mapping
 * table knows which of them were recorded. */
static void py_arena_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	if (atomic_load_explicit(&py_lost, memory_order_relaxed)) {
		py_arena.free(py_arena.ctx, ptr, size);
		return;
	}
	agent_in_hook++;
	py_arena.free(py_arena.ctx, ptr, size);
	agent_in_hook--;
}

/* 3.x from "3.11.7 (main, ...)"; -1 when it does not read so. */
static int py_minor(const char *(*get_version)(void))
{
	const char *v = get_version();
	int minor = 0, digits = 0;
	if (!v || v[0] != '3' || v[1] != '.')
		return -1;
	for (v += 2; *v >= '0' && *v <= '9' && digits < 3; v++, digits++)
		minor = minor * 10 + (*v - '0');
	return digits ? minor : -1;
}

/* Returns 1 when the image's CPython allocators are now wrapped. */
int agent_py_hook_install(void)
{
	const char *pm = getenv("PYTHONMALLOC"), *dev = getenv("PYTHONDEVMODE");
	if ((pm && *pm) || (dev && *dev))
		return 0;
	void (*get)(int, struct py_allocator *) =
		(void (*)(int, struct py_allocator *))dlsym(RTLD_DEFAULT, "PyMem_GetAllocator");
	void (*set)(int, struct py_allocator *) =
		(void (*)(int, struct py_allocator *))dlsym(RTLD_DEFAULT, "PyMem_SetAllocator");
	void (*get_arena)(struct py_arena_allocator *) = (void (*)(struct py_arena_allocator *))
		dlsym(RTLD_DEFAULT, "PyObject_GetArenaAllocator");
	void (*set_arena)(struct py_arena_allocator *) = (void (*)(struct py_arena_allocator *))
		dlsym(RTLD_DEFAULT, "PyObject_SetArenaAllocator");
	const char *(*version)(void) =
		(const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	if (!get || !set || !get_arena || !set_arena || !version)
		return 0;
	/* A free-threaded build serves every object, large ones too, from
	 * mimalloc: not wrapped. */
	int minor = py_minor(version);
	if (minor < 8 || strstr(version(), "free-threading"))
		return 0;
	py_get_allocator = get;
	get(PY_DOMAIN_RAW, &py_wrapped[PY_DOMAIN_RAW]);
	for (int d = PY_DOMAIN_MEM; d <= PY_DOMAIN_OBJ; d++) {
		get(d, &py_wrapped[d]);
		const struct py_allocator *o = &py_wrapped[d];
		if (!o->malloc || !o->calloc || !o->realloc || !o->free)
			return 0;
		/* Built without pymalloc: the objects are malloc'd, seen already. */
		if (o->malloc == py_wrapped[PY_DOMAIN_RAW].malloc)
			return 0;
	}
	get_arena(&py_arena);
	if (!py_arena.alloc || !py_arena.free)
		return 0;
	struct py_arena_allocator aw = { NULL, py_arena_alloc, py_arena_free };
	set_arena(&aw);
	for (int d = PY_DOMAIN_MEM; d <= PY_DOMAIN_OBJ; d++) {
		struct py_allocator w = { &py_wrapped[d], py_malloc, py_calloc, py_realloc, py_free };
		set(d, &w);
	}
	return 1;
}
