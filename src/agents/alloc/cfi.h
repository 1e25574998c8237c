/* cfi: the calling thread's native stack, unwound in-process from the
 * modules' DWARF call-frame information (.eh_frame_hdr / .eh_frame), with
 * each return address's rule cached so that a repeated stack costs a few
 * lookups per frame instead of libgcc's FDE search and CFA program.
 *
 * Contract: never allocates, never takes a lock (glibc's _dl_find_object on
 * a cache miss does neither), reads stack memory only inside the given
 * bounds. x86_64 only; elsewhere cfi_backtrace always returns -1. */
#ifndef SONDE_ALLOC_CFI_H
#define SONDE_ALLOC_CFI_H

#include <stddef.h>
#include <stdint.h>

struct cfi_limits {
	uintptr_t stack_lo, stack_hi;	/* the thread's stack, [lo, hi): every read stays inside */
	uintptr_t skip_start, skip_end; /* frames whose IP is in here are not reported */
	uintptr_t stop_start, stop_end; /* the walk ends after the first frame reported in here */
};

/* Fills ips with the return addresses of the caller's frames, innermost
 * first (the caller itself is the first, unless skipped), as libgcc's
 * _Unwind_Backtrace with _Unwind_GetIP would give them, and cfas[k] with
 * the CFA of the frame that returns to ips[k] (its return address sits at
 * cfas[k] - 8), as _Unwind_GetCFA gives it at that step. Returns the count
 * (at most max), or -1 when some frame cannot be unwound reliably: no FDE
 * for its IP, a signal frame, a rule this unwinder does not follow (DWARF
 * expressions, a CFA not based on rsp or rbp) or a read outside the stack.
 * On -1 the arrays hold garbage; use another unwinder. */
int cfi_backtrace(uint64_t *ips, uint64_t *cfas, int max, const struct cfi_limits *lim);

/* The calling thread's cache use since it started, for tests and tuning. */
struct cfi_stats {
	uint64_t hits, misses;
};
void cfi_stats_get(struct cfi_stats *out);
/* The cache slot an IP's rule goes to. The cache is direct-mapped: two IPs
 * of one slot evict each other (with the addresses the loader chose, a
 * walk of 25 frames has such a pair in about one run of 25). */
size_t cfi_cache_slot(uintptr_t ip);

/* Forgets every cached rule: for when code was unloaded (dlclose) and other
 * code may now sit at the same addresses. */
void cfi_cache_flush(void);

#endif
