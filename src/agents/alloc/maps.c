/* maps: the anonymous mappings, interposed (mmap, mmap64, mremap, munmap):
 * each is an allocation, sampled and unwound like a malloc, and a table of the
 * mapped ranges tells which unmaps the reader must hear of. */
#include "agent.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- anonymous mappings: mmap, mmap64, mremap, munmap ----
 *
 * An anonymous mapping (private or shared) that is not PROT_NONE (a
 * reservation is not memory yet) is an allocation of its page-rounded length,
 * recorded, sampled and unwound like a malloc, with ALLOC_SIZE_MMAP in its
 * size. File mappings are not heap. glibc's own mappings (malloc's large blocks, thread
 * stacks) and the loader's go through libc's internal __mmap, not through
 * these symbols, so they are not seen twice.
 *
 * Every such mapping (sampled or not) goes into a fixed table of ranges
 * (sorted by address, searched by bisection), so a munmap, an mremap or a
 * MAP_FIXED mapping over one of them is told to the reader (ALLOC_REC_UNMAP,
 * by range: a partial munmap shrinks or splits it) when the range touches a
 * recorded mapping; an mremap of a tracked mapping
 * is an unmap of the old range and a new mapping, like realloc. When the table
 * is full, every unmap is sent. The real calls are libc's (dlsym(RTLD_NEXT)),
 * or the system calls themselves until those are looked up. */
#define MAP_SLOTS 8192

struct map_range {
	uintptr_t start, end;
	int recorded; /* sent to the reader: its unmaps must be too */
};

static struct map_range maps[MAP_SLOTS];
static size_t nmaps;
static atomic_int maps_lock;
static atomic_int maps_overflow;
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

static void maps_acquire(void)
{
	while (atomic_exchange_explicit(&maps_lock, 1, memory_order_acquire))
		;
}

static void maps_release(void)
{
	atomic_store_explicit(&maps_lock, 0, memory_order_release);
}

static size_t page_bytes = 4096; /* the system's, once maps_init ran */

static size_t page_round(size_t len)
{
	size_t page = page_bytes;
	return len + page - 1 < len ? len : (len + page - 1) & ~(page - 1);
}

static int map_tracked_kind(int prot, int flags)
{
	return (flags & MAP_ANONYMOUS) && prot != PROT_NONE;
}

/* The index of the first range that starts below addr. The ranges are
 * disjoint and sorted by start from the highest down (the kernel places new
 * mappings below the older ones, so most land at the end). Lock held. */
static size_t maps_search(uintptr_t addr)
{
	size_t lo = 0, hi = nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (maps[mid].start >= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Takes [start, end) out of the table; *recorded |= whether a range it cut
 * was sent to the reader. Lock held. */
static int maps_cut(uintptr_t start, uintptr_t end, int *recorded)
{
	int found = 0;
	for (size_t i = maps_search(end); i < nmaps && maps[i].end > start;) {
		struct map_range *m = &maps[i];
		found = 1;
		*recorded |= m->recorded;
		if (m->start < start && m->end > end) {
			/* A hole in the middle: the part above it becomes a range of its own. */
			if (nmaps < MAP_SLOTS) {
				memmove(m + 1, m, (nmaps - i) * sizeof(*m));
				m[0] = (struct map_range){ end, m[1].end, m[1].recorded };
				m[1].end = start;
				nmaps++;
			} else {
				atomic_store(&maps_overflow, 1);
				m->end = start;
			}
			break;
		}
		if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->start = end;
			i++;
		} else {
			memmove(m, m + 1, (nmaps - i - 1) * sizeof(*m));
			nmaps--;
		}
	}
	return found;
}

/* Takes [start, end) out of the table; returns 1 when it touched a tracked
 * mapping (*recorded: one that the reader knows). */
static int maps_forget(uintptr_t start, uintptr_t end, int *recorded)
{
	*recorded = 0;
	maps_acquire();
	int found = maps_cut(start, end, recorded);
	maps_release();
	return found;
}

/* Returns 1 when the table still had a recorded range there: unmapped behind
 * the agent's back (the kernel gave the range anew), the reader must drop it. */
static int maps_add(uintptr_t start, uintptr_t end, int recorded)
{
	int stale = 0;
	maps_acquire();
	maps_cut(start, end, &stale);
	if (nmaps < MAP_SLOTS) {
		size_t i = maps_search(start);
		memmove(&maps[i + 1], &maps[i], (nmaps - i) * sizeof(maps[0]));
		maps[i] = (struct map_range){ start, end, recorded };
		nmaps++;
	} else {
		atomic_store(&maps_overflow, 1);
	}
	maps_release();
	return stale;
}

static void map_unmap_emit(uintptr_t addr, uintptr_t end, uint64_t t)
{
	struct alloc_rec_unmap r = { { ALLOC_REC_UNMAP, sizeof(r), agent_gettid_cached(), t },
				     addr, end - addr };
	agent_emit(&r);
}

/* Before (or, stamped with the time before, after) the kernel releases
 * [addr, addr + len): the reader drops what it held there. Returns what
 * maps_forget() does: whether a tracked mapping was there. */
static int map_unmap_record(uintptr_t addr, size_t len, uint64_t t)
{
	int recorded;
	uintptr_t end = addr + page_round(len);
	int found = maps_forget(addr, end, &recorded);
	if (recorded || atomic_load(&maps_overflow))
		map_unmap_emit(addr, end, t);
	return found;
}

static void map_record(void *p, size_t len)
{
	size_t bytes = page_round(len);
	int rec = agent_should_sample(bytes);
	if (maps_add((uintptr_t)p, (uintptr_t)p + bytes, rec))
		map_unmap_emit((uintptr_t)p, (uintptr_t)p + bytes, agent_stamp_before());
	if (rec)
		agent_record_alloc(p, bytes | ALLOC_SIZE_MMAP);
}

static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (real_mmap)
		return real_mmap(addr, len, prot, flags, fd, off);
	/* Integer arguments widened: a variadic int leaves the upper half undefined. */
	long r = syscall(SYS_mmap, addr, len, (long)prot, (long)flags, (long)fd, (long)off);
	return r == -1 ? MAP_FAILED : (void *)r;
}

static void *map_hook(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!agent_enabled || agent_in_hook || agent_exiting)
		return sys_mmap(addr, len, prot, flags, fd, off);
	agent_in_hook++;
	uint64_t t0 = agent_stamp_before();
	void *p = sys_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED) {
		/* MAP_FIXED replaces whatever was mapped there. */
		if (flags & MAP_FIXED)
			map_unmap_record((uintptr_t)p, len, t0);
		if (map_tracked_kind(prot, flags))
			map_record(p, len);
	}
	agent_in_hook--;
	return p;
}

AGENT_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map_hook(addr, len, prot, flags, fd, off);
}

AGENT_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return map_hook(addr, len, prot, flags, fd, (off_t)off);
}

AGENT_EXPORT int munmap(void *addr, size_t len)
{
	if (agent_enabled && !agent_in_hook && !agent_exiting && len) {
		agent_in_hook++;
		/* Not the agent's own buffer, which a thread's exit unmaps. */
		if (!agent_my_buf || (uintptr_t)addr + len <= (uintptr_t)agent_my_buf ||
		    (uintptr_t)addr >= (uintptr_t)agent_my_buf + sizeof(*agent_my_buf))
			map_unmap_record((uintptr_t)addr, len, agent_stamp_before());
		agent_in_hook--;
	}
	if (real_munmap)
		return real_munmap(addr, len);
	return (int)syscall(SYS_munmap, addr, len);
}

AGENT_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	int track = agent_enabled && !agent_in_hook && !agent_exiting;
	if (track)
		agent_in_hook++;
	uint64_t t0 = track ? agent_stamp_before() : 0;
	void *p;
	if (real_mremap) {
		p = real_mremap(old, old_len, new_len, flags, want);
	} else {
		long r = syscall(SYS_mremap, old, old_len, new_len, (long)flags, want);
		p = r == -1 ? MAP_FAILED : (void *)r;
	}
	if (track) {
		if (p != MAP_FAILED && old_len) {
			/* A tracked mapping moves or resizes: unmapped, then mapped anew by
			 * this caller (as realloc); the target of MREMAP_FIXED is replaced. */
			int was = map_unmap_record((uintptr_t)old, old_len, t0);
			if (flags & MREMAP_FIXED)
				map_unmap_record((uintptr_t)p, new_len, t0);
			if (was)
				map_record(p, new_len);
		}
		agent_in_hook--;
	}
	return p;
}

static void maps_at_fork_child(void)
{
	/* The child's mappings are copies of its parent's: not its allocations. */
	nmaps = 0;
	atomic_store(&maps_lock, 0);
	atomic_store(&maps_overflow, 0);
}

/* After agent_init (agent.c), by priority. */
__attribute__((constructor(102))) static void maps_init(void)
{
	agent_in_hook++;
	long page = sysconf(_SC_PAGESIZE);
	if (page > 0 && !(page & (page - 1)))
		page_bytes = (size_t)page;
	real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	real_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
	real_mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
	pthread_atfork(NULL, NULL, maps_at_fork_child);
	agent_in_hook--;
}
