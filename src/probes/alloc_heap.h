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
 *   before its thread made any other allocation. */
#ifndef SONDE_ALLOC_HEAP_H
#define SONDE_ALLOC_HEAP_H

#include "../util/hashmap.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HEAP_TEMP_NS_DEFAULT 1000000LL /* 1 ms */
#define HEAP_BUCKET_NS 100000000LL     /* timeline resolution: 100 ms */

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
	int64_t t_ns;
	uint64_t tseq; /* the thread's allocation count when this was made */
	double bytes, count;
	double var_bytes, var_count; /* its share of the estimates' variances */
};

struct heap_bucket {
	double allocations, allocated_bytes, live_max_bytes;
};

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

/* Events, in time order (t_ns >= 0, relative to the run's start). */
void heap_alloc(struct heap *h, int64_t t_ns, uint32_t space, uint32_t site, uint32_t tid,
		uint64_t ptr, uint64_t size);
void heap_free(struct heap *h, int64_t t_ns, uint32_t space, uint64_t ptr);
/* The image ended: exited (leaked = 1: what is live is leaked) or exec'd (0). */
void heap_space_end(struct heap *h, int64_t t_ns, uint32_t space, int leaked);
/* Ends every space still running as exited and fixes each site's peak_bytes. */
void heap_finish(struct heap *h, int64_t t_ns);

#endif
