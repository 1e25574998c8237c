/* alloc_heap: the accounting behind the alloc probe, fed with allocation
 * events in time order: live allocations, per call site totals, the heap peak
 * and who held it, leaks and temporaries. Knows nothing of files or SQLite, so
 * unit tests drive it directly.
 *
 * Definitions (docs/memory.md):
 * - a space is one process image (a pid until it execs); its heap is its own;
 * - weights: in full mode an allocation counts 1 and its size; in sampled mode
 *   (interval_bytes > 0) it was drawn with probability p = 1 - exp(-size /
 *   interval), so it counts 1/p allocations and size/p bytes: totals per call
 *   site are unbiased estimates;
 * - peak: the largest sum of live bytes over every space; a site's peak_bytes
 *   is what it held at that moment;
 * - leaked: live when its space exited (exit handlers ran, or the process
 *   died); an exec releases the old image's heap without leaking it;
 * - temporary: freed less than temp_ns after it was allocated, or (full mode)
 *   before its thread made any other allocation;
 * - a mapping (heap_map) is a block like the others, but it is released by
 *   range (heap_unmap): a partial unmap shrinks it or splits it in two, each
 *   piece keeping its site and its share of the estimate. */
#ifndef SONDE_ALLOC_HEAP_H
#define SONDE_ALLOC_HEAP_H

#include "../util/hashmap.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HEAP_TEMP_NS_DEFAULT 1000000LL /* 1 ms */
#define HEAP_BUCKET_NS 100000000LL     /* timeline resolution: 100 ms */
#define HEAP_SITE_BUCKET_TOP 16	       /* per-site timeline: sites kept per bucket and measure */

struct alloc_module;

struct heap_site {
	uint32_t space;
	uint32_t nips;
	uint64_t *ips; /* innermost first, owned */
	int64_t py_node; /* the thread's Python stack (stack_nodes id) at the time; 0: none */
	double allocations, allocated_bytes;
	double live_bytes, live_count;
	double peak_bytes; /* valid after heap_finish */
	double leaked_bytes, leaked_count;
	double temp_count, temp_bytes;
	/* Sampled mode: variances of the estimates (Horvitz-Thompson: a block of
	 * n bytes kept with probability p adds n^2 (1-p)/p^2); 0 in full mode. */
	double live_var, peak_var, leaked_var, temp_count_var;
	uint64_t stamp; /* lazy snapshot at the peak */
	double mmap_bytes; /* of allocated_bytes, what came from anonymous mappings */
	/* The current per-site timeline bucket (heap.site_bucket_ns). */
	double tl_allocations, tl_allocated_bytes, tl_freed_bytes;
	int tl_listed;
};

struct heap_space {
	pid_t pid;
	int64_t interval_bytes;
	int ended;
	double live_bytes;
	size_t live_entries; /* its blocks in the live table */
	struct alloc_module *mods; /* for the symbolizer; owned */
	size_t nmods, amods;
};

struct heap_live {
	uint64_t ptr; /* 0: empty slot */
	uint32_t space, site;
	uint32_t tid;
	uint32_t mapped; /* a mapping (heap_map): its index in heap.maps + 1; 0: not one */
	int64_t t_ns;
	uint64_t tseq; /* the thread's allocation count when this was made */
	double bytes, count;
	double var_bytes, var_count; /* its share of the estimates' variances */
};

struct heap_bucket {
	double allocations, allocated_bytes, live_max_bytes;
};

/* A live mapping's range, for heap_unmap. */
struct heap_mapping {
	uint64_t start, len;
	uint32_t space;
};

/* One site's activity in one bucket of the per-site timeline: what it
 * allocated and what of its blocks was freed then (whenever allocated). */
struct heap_site_delta {
	uint32_t site;
	double allocations, allocated_bytes, freed_bytes;
};

/* Receives each per-site bucket as it ends (t_ns: the bucket's start): the
 * HEAP_SITE_BUCKET_TOP sites that allocated most and those whose blocks were
 * freed most, at most 2 * HEAP_SITE_BUCKET_TOP rows. Events applied late can
 * make a second call for the same bucket: sum them. */
typedef void heap_site_bucket_fn(void *arg, int64_t t_ns, const struct heap_site_delta *v,
				 size_t n);

struct heap {
	int64_t temp_ns;
	struct heap_site *sites;
	size_t nsites, asites;
	struct heap_space *spaces;
	size_t nspaces, aspaces;
	struct heap_live *live; /* open addressing, power-of-two capacity */
	size_t live_cap, live_n;
	size_t dead_entries; /* blocks of ended spaces still in the table */
	struct hashmap site_map;   /* space + ips -> site index */
	struct hashmap thread_map; /* space + tid -> allocation count */
	struct heap_bucket *buckets;
	size_t nbuckets;
	double live_bytes, peak_bytes;
	int64_t peak_t_ns;
	uint64_t stamp;
	double allocations, allocated_bytes, temp_count;
	uint64_t unknown_frees, events;
	struct heap_mapping *maps; /* live mappings, unordered */
	size_t nmaps, amaps;
	/* Per-site timeline: off while site_bucket_ns is 0. */
	int64_t site_bucket_ns;
	heap_site_bucket_fn *site_bucket_fn;
	void *site_bucket_arg;
	int64_t tl_bucket;
	uint32_t *tl_sites; /* sites with activity in the current bucket */
	size_t ntl, atl;
};

void heap_init(struct heap *h);
void heap_release(struct heap *h);

uint32_t heap_space_new(struct heap *h, pid_t pid, int64_t interval_bytes);
/* Adds a module to a space (for symbolization); the path is copied. */
void heap_space_module(struct heap *h, uint32_t space, uint64_t bias, uint64_t start,
		       uint64_t end, const char *path);
uint32_t heap_site_intern(struct heap *h, uint32_t space, const uint64_t *ips, uint32_t n);
/* The same, for allocations made while the thread ran the Python stack py_node
 * (0: as heap_site_intern): the same native stack under two Python stacks is
 * two sites. */
uint32_t heap_site_intern_py(struct heap *h, uint32_t space, const uint64_t *ips, uint32_t n,
			     int64_t py_node);
/* The site of site's native stack under the Python stack py_node. */
uint32_t heap_site_with_py(struct heap *h, uint32_t site, int64_t py_node);

/* Events, in time order (t_ns >= 0, relative to the run's start). */
void heap_alloc(struct heap *h, int64_t t_ns, uint32_t space, uint32_t site, uint32_t tid,
		uint64_t ptr, uint64_t size);
void heap_free(struct heap *h, int64_t t_ns, uint32_t space, uint64_t ptr);
/* A mapping of len bytes at addr (an allocation released by range). What it
 * replaced must have been unmapped before (heap_unmap); a live block at the
 * same address is released as a lost free. */
void heap_map(struct heap *h, int64_t t_ns, uint32_t space, uint32_t site, uint32_t tid,
	      uint64_t addr, uint64_t len);
/* [addr, addr + len) is unmapped: mappings inside it are released (temporary
 * or not, as a free), those that straddle it shrink or split. */
void heap_unmap(struct heap *h, int64_t t_ns, uint32_t space, uint64_t addr, uint64_t len);
/* Turns the per-site timeline on: fn gets each bucket of bucket_ns. */
void heap_site_timeline(struct heap *h, int64_t bucket_ns, heap_site_bucket_fn *fn, void *arg);
/* The image ended: exited (leaked = 1: what is live is leaked) or exec'd (0). */
void heap_space_end(struct heap *h, int64_t t_ns, uint32_t space, int leaked);
/* Ends every space still running as exited, fixes each site's peak_bytes and
 * hands over the last per-site bucket. */
void heap_finish(struct heap *h, int64_t t_ns);

#endif
