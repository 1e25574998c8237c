/* Unit tests of the allocation agent's cached DWARF unwinder (cfi.c): it must
 * give what libgcc's _Unwind_Backtrace gives, from the cache the second time,
 * and -1 rather than a wrong stack or a crash. */
#include "agents/alloc/cfi.h"
#include "check.h"

#include <alloca.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unwind.h>

#define FRAMES_MAX 64

#if defined(__clang__)
#define NO_FP __attribute__((noinline))
#else
#define NO_FP __attribute__((noinline, optimize("omit-frame-pointer")))
#endif

/* What one capture saw, by both unwinders, from the same function. */
struct walks {
	uint64_t ips[FRAMES_MAX], cfas[FRAMES_MAX];
	int n;
	uint64_t ref_ips[FRAMES_MAX], ref_cfas[FRAMES_MAX];
	int ref_n;
	struct cfi_limits lim;
	int cfi_only; /* skip the reference walk */
};

static int limits_init(struct cfi_limits *lim)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a))
		return -1;
	int rc = pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	if (rc)
		return -1;
	*lim = (struct cfi_limits){ .stack_lo = (uintptr_t)addr,
				    .stack_hi = (uintptr_t)addr + size };
	return 0;
}

struct ref_state {
	struct walks *w;
};

static _Unwind_Reason_Code ref_step(struct _Unwind_Context *ctx, void *arg)
{
	struct walks *w = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);
	if (!ip)
		return _URC_END_OF_STACK;
	w->ref_cfas[w->ref_n] = _Unwind_GetCFA(ctx);
	w->ref_ips[w->ref_n++] = ip;
	return w->ref_n < FRAMES_MAX ? _URC_NO_REASON : _URC_END_OF_STACK;
}

/* Index 0 is this function's own IP, at two different call sites: compare
 * from 1 on. */
__attribute__((noinline)) static void capture(struct walks *w)
{
	w->n = cfi_backtrace(w->ips, w->cfas, FRAMES_MAX, &w->lim);
	if (!w->cfi_only)
		_Unwind_Backtrace(ref_step, w);
	__asm__ volatile("" ::: "memory");
}

/* Three kinds of frames without frame pointers, in turn: a plain one, one
 * with alloca (the CFA then moves with rsp or goes to rbp) and one with big
 * locals. */
static NO_FP int frame_plain(struct walks *w, int depth);

static NO_FP int frame_alloca(struct walks *w, int depth)
{
	volatile char *p = alloca(64 + (size_t)depth * 16);
	p[0] = (char)depth;
	int r = frame_plain(w, depth - 1);
	return r + p[0];
}

static NO_FP int frame_big(struct walks *w, int depth)
{
	volatile char big[5000];
	big[depth] = (char)depth;
	int r = frame_alloca(w, depth - 1);
	return r + big[depth];
}

static NO_FP int frame_plain(struct walks *w, int depth)
{
	if (depth <= 0) {
		capture(w);
		return 1;
	}
	volatile int keep = depth;
	int r = frame_big(w, depth - 1);
	return r + keep;
}

static void walk_deep(struct walks *w)
{
	frame_plain(w, 20);
}

static int same_as_reference(const struct walks *w)
{
	if (w->n != w->ref_n || w->n < 2)
		return 0;
	for (int k = 1; k < w->n; k++)
		if (w->ips[k] != w->ref_ips[k] || w->cfas[k] != w->ref_cfas[k])
			return 0;
	return 1;
}

TEST(same_as_libgcc, "cfi_backtrace gives the same return addresses as _Unwind_Backtrace "
		     "through 20 frames built without frame pointers")
{
	struct walks w = { 0 };
	REQUIRE(!limits_init(&w.lim));
	walk_deep(&w);
	CHECK(w.n > 22);
	CHECK_INT_EQ(w.n, w.ref_n);
	for (int k = 1; k < w.n && k < w.ref_n; k++) {
		CHECK_INT_EQ(w.ips[k], w.ref_ips[k]);
		CHECK_INT_EQ(w.cfas[k], w.ref_cfas[k]);
	}
}

/* Walks are compared only from the same call site: a loop that the
 * compiler cannot unroll. */
TEST(cache_serves_second_walk, "a second walk of the same stack is served from the cache")
{
	struct walks w = { .cfi_only = 1 };
	struct cfi_stats before = { 0 }, after;
	REQUIRE(!limits_init(&w.lim));
	cfi_cache_flush();
	for (volatile int i = 0; i < 2; i++) {
		walk_deep(&w);
		if (i == 0)
			cfi_stats_get(&before);
	}
	cfi_stats_get(&after);
	REQUIRE(w.n > 22);
	/* But for the frames whose IP shares its slot with another of the
	 * walk's (they evict each other, run after run). */
	uint64_t shared = 0;
	for (int k = 0; k < w.n; k++)
		for (int j = 0; j < w.n; j++)
			if (w.ips[j] != w.ips[k] &&
			    cfi_cache_slot((uintptr_t)w.ips[j]) == cfi_cache_slot((uintptr_t)w.ips[k])) {
				shared++;
				break;
			}
	CHECK(after.misses - before.misses <= shared);
	CHECK(after.hits - before.hits + shared >= (uint64_t)w.n - 1);
}

/* The index of the frame that started the recursion: the first past the
 * last one whose IP is one of the recursion's call sites (ips[1..4] hold
 * them all). */
static int outer_frame(const struct walks *w)
{
	int last = 0;
	for (int k = 1; k < w->n; k++)
		for (int j = 1; j <= 4 && j < w->n; j++)
			if (w->ips[k] == w->ips[j])
				last = k;
	return last + 1;
}

TEST(stop_range_ends_walk, "a stop range ends the walk after that frame")
{
	struct walks w = { .cfi_only = 1 };
	uint64_t want[FRAMES_MAX];
	int stop = 0;
	REQUIRE(!limits_init(&w.lim));
	for (volatile int i = 0; i < 2; i++) {
		walk_deep(&w);
		if (i == 0) {
			stop = outer_frame(&w);
			if (stop < 20 || w.n <= stop)
				break;
			memcpy(want, w.ips, sizeof(want));
			w.lim.stop_start = want[stop];
			w.lim.stop_end = want[stop] + 1;
		}
	}
	REQUIRE(stop >= 20);
	CHECK_INT_EQ(w.n, stop + 1);
	for (int k = 1; k <= stop; k++)
		CHECK_INT_EQ(w.ips[k], want[k]);
}

TEST(skip_range_leaves_frames_out, "frames inside the skip range are not reported")
{
	struct walks w = { .cfi_only = 1 };
	uint64_t skipped = 0;
	int n = 0, times = 0;
	REQUIRE(!limits_init(&w.lim));
	for (volatile int i = 0; i < 2; i++) {
		walk_deep(&w);
		if (i == 0) {
			n = w.n;
			skipped = w.ips[2]; /* frame_alloca's call, once per three frames */
			for (int k = 0; k < w.n; k++)
				times += w.ips[k] == skipped;
			w.lim.skip_start = skipped;
			w.lim.skip_end = skipped + 1;
		}
	}
	REQUIRE(n > 22);
	CHECK(times > 1);
	CHECK_INT_EQ(w.n, n - times);
	for (int k = 0; k < w.n; k++)
		CHECK(w.ips[k] != skipped);
}

/* Code without unwind information: it calls its argument, so the walk from
 * there must cross a frame no FDE describes. */
static struct walks jit_walks;

static void jit_callee(void)
{
	capture(&jit_walks);
}

TEST(no_fde_fails, "an IP with no FDE gives -1 (or ends the walk), never a crash")
{
	static const unsigned char code[] = {
		0x48, 0x83, 0xec, 0x08, /* sub $8, %rsp */
		0xff, 0xd7,		/* call *%rdi */
		0x48, 0x83, 0xc4, 0x08, /* add $8, %rsp */
		0xc3,			/* ret */
	};
#if !defined(__x86_64__)
	SKIP("the unwinder is x86_64 only");
#endif
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		SKIP("no executable anonymous memory here");
	memcpy(page, code, sizeof(code));
	jit_walks = (struct walks){ .cfi_only = 1 };
	REQUIRE(!limits_init(&jit_walks.lim));
	void (*tramp)(void (*)(void)) = (void (*)(void (*)(void)))page;
	tramp(jit_callee);
	uintptr_t lo = (uintptr_t)page, hi = lo + sizeof(code);
	CHECK(jit_walks.n == -1 ||
	      (jit_walks.n > 0 && jit_walks.ips[jit_walks.n - 1] > lo &&
	       jit_walks.ips[jit_walks.n - 1] <= hi));
	munmap(page, 4096);
}

TEST(bad_stack_bounds_fail, "a walk whose reads leave the given stack gives -1")
{
	struct walks w = { .cfi_only = 1 };
	REQUIRE(!limits_init(&w.lim));
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	w.lim.stack_hi = here; /* the outer frames lie above */
	walk_deep(&w);
	CHECK_INT_EQ(w.n, -1);
}

#define THREADS 4
#define THREAD_WALKS 300

static void *thread_walks(void *arg)
{
	int *bad = arg;
	struct walks w = { 0 };
	if (limits_init(&w.lim)) {
		*bad = 1;
		return NULL;
	}
	for (int i = 0; i < THREAD_WALKS; i++) {
		w.ref_n = 0;
		walk_deep(&w);
		if (!same_as_reference(&w))
			(*bad)++;
		if (i % 50 == 0)
			cfi_cache_flush(); /* refill while the others read */
	}
	return NULL;
}

TEST(threads_agree, "walks from several threads at once, with the cache flushed among them, "
		    "all equal libgcc's")
{
	pthread_t t[THREADS];
	int bad[THREADS] = { 0 };
	for (int i = 0; i < THREADS; i++)
		REQUIRE(!pthread_create(&t[i], NULL, thread_walks, &bad[i]));
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK_INT_EQ(bad[i], 0);
	}
}

CHECK_MAIN()
