/* alloc_heap: live-allocation accounting for the alloc probe (alloc_heap.h). */
#include "alloc_heap.h"
#include "alloc_symbols.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void heap_init(struct heap *h)
{
	memset(h, 0, sizeof(*h));
	h->temp_ns = HEAP_TEMP_NS_DEFAULT;
	h->tl_bucket = -1;
	h->site_map = (struct hashmap)HASHMAP_INIT;
	h->thread_map = (struct hashmap)HASHMAP_INIT;
}

void heap_release(struct heap *h)
{
	for (size_t i = 0; i < h->nsites; i++)
		free(h->sites[i].ips);
	for (size_t i = 0; i < h->nspaces; i++) {
		for (size_t k = 0; k < h->spaces[i].nmods; k++)
			free(h->spaces[i].mods[k].path);
		free(h->spaces[i].mods);
	}
	free(h->sites);
	free(h->spaces);
	free(h->live);
	free(h->buckets);
	free(h->maps);
	free(h->tl_sites);
	hashmap_release(&h->site_map);
	hashmap_release(&h->thread_map);
	heap_init(h);
}

uint32_t heap_space_new(struct heap *h, pid_t pid, int64_t interval_bytes)
{
	if (h->nspaces == h->aspaces) {
		h->aspaces = h->aspaces ? h->aspaces * 2 : 16;
		h->spaces = xrealloc(h->spaces, h->aspaces * sizeof(*h->spaces));
	}
	struct heap_space *s = &h->spaces[h->nspaces];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->interval_bytes = interval_bytes;
	return (uint32_t)h->nspaces++;
}

void heap_space_module(struct heap *h, uint32_t space, uint64_t bias, uint64_t start,
		       uint64_t end, const char *path)
{
	struct heap_space *s = &h->spaces[space];
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i].start == start && s->mods[i].end == end &&
		    !strcmp(s->mods[i].path, path))
			return;
	if (s->nmods == s->amods) {
		s->amods = s->amods ? s->amods * 2 : 16;
		s->mods = xrealloc(s->mods, s->amods * sizeof(*s->mods));
	}
	s->mods[s->nmods++] = (struct alloc_module){ bias, start, end, xstrdup(path) };
}

uint32_t heap_site_intern_py(struct heap *h, uint32_t space, const uint64_t *ips, uint32_t n,
			     int64_t py_node)
{
	uint64_t key[2 + 64];
	if (n > 64)
		n = 64;
	/* Bit 32 of the first word (a space is 32 bits) says a Python node follows. */
	size_t off = py_node ? 2 : 1;
	key[0] = py_node ? (uint64_t)space | (1ULL << 32) : space;
	key[1] = (uint64_t)py_node;
	memcpy(key + off, ips, n * sizeof(*ips));
	size_t klen = (off + (size_t)n) * sizeof(uint64_t);
	int64_t *v = hashmap_get(&h->site_map, key, klen);
	if (v)
		return (uint32_t)*v;
	if (h->nsites == h->asites) {
		h->asites = h->asites ? h->asites * 2 : 256;
		h->sites = xrealloc(h->sites, h->asites * sizeof(*h->sites));
	}
	struct heap_site *s = &h->sites[h->nsites];
	memset(s, 0, sizeof(*s));
	s->space = space;
	s->nips = n;
	s->py_node = py_node;
	s->ips = xmalloc(n ? n * sizeof(*ips) : 1);
	memcpy(s->ips, ips, n * sizeof(*ips));
	hashmap_put(&h->site_map, key, klen, (int64_t)h->nsites);
	return (uint32_t)h->nsites++;
}

uint32_t heap_site_intern(struct heap *h, uint32_t space, const uint64_t *ips, uint32_t n)
{
	return heap_site_intern_py(h, space, ips, n, 0);
}

uint32_t heap_site_with_py(struct heap *h, uint32_t site, int64_t py_node)
{
	/* The ips are owned apart from the sites array: they outlive its growth. */
	const struct heap_site *s = &h->sites[site];
	return heap_site_intern_py(h, s->space, s->ips, s->nips, py_node);
}

/* ---- live table: (space, ptr) -> heap_live, linear probing ---- */

static size_t live_slot(const struct heap *h, uint32_t space, uint64_t ptr)
{
	uint64_t k = (ptr >> 3) ^ ((uint64_t)space * 0x9E3779B97F4A7C15ULL);
	k ^= k >> 31;
	k *= 0xBF58476D1CE4E5B9ULL;
	k ^= k >> 29;
	return (size_t)k & (h->live_cap - 1);
}

static struct heap_live *live_find(struct heap *h, uint32_t space, uint64_t ptr)
{
	if (!h->live_cap)
		return NULL;
	for (size_t i = live_slot(h, space, ptr);; i = (i + 1) & (h->live_cap - 1)) {
		struct heap_live *e = &h->live[i];
		if (!e->ptr)
			return NULL;
		if (e->ptr == ptr && e->space == space)
			return e;
	}
}

static void live_grow(struct heap *h);

static struct heap_live *live_insert(struct heap *h, uint32_t space, uint64_t ptr)
{
	if ((h->live_n + 1) * 4 > h->live_cap * 3)
		live_grow(h);
	size_t i = live_slot(h, space, ptr);
	while (h->live[i].ptr)
		i = (i + 1) & (h->live_cap - 1);
	h->live_n++;
	h->live[i].ptr = ptr;
	h->live[i].space = space;
	return &h->live[i];
}

/* Rehashes into cap slots, dropping the blocks of ended spaces. */
static void live_rebuild(struct heap *h, size_t cap)
{
	struct heap_live *old = h->live;
	size_t old_cap = h->live_cap;
	h->live_cap = cap;
	h->live = xcalloc(h->live_cap, sizeof(*h->live));
	h->live_n = 0;
	h->dead_entries = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].ptr && !h->spaces[old[i].space].ended)
			*live_insert(h, old[i].space, old[i].ptr) = old[i];
	free(old);
}

static void live_grow(struct heap *h)
{
	/* Mostly dead blocks (processes that exited): clean instead of growing. */
	if (h->live_cap && h->dead_entries * 2 > h->live_n)
		live_rebuild(h, h->live_cap);
	else
		live_rebuild(h, h->live_cap ? h->live_cap * 2 : 4096);
}

/* Backward-shift deletion keeps probe chains whole without tombstones. */
static void live_remove(struct heap *h, struct heap_live *e)
{
	size_t mask = h->live_cap - 1, i = (size_t)(e - h->live), j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!h->live[j].ptr)
			break;
		size_t home = live_slot(h, h->live[j].space, h->live[j].ptr);
		/* Move j into the hole at i unless its home lies in (i, j]. */
		int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (stays)
			continue;
		h->live[i] = h->live[j];
		i = j;
	}
	memset(&h->live[i], 0, sizeof(h->live[i]));
	h->live_n--;
}

/* ---- accounting ---- */

/* Before a site changes: if a peak happened since its last change, what it
 * held then is what it holds now. */
static void site_touch(struct heap *h, struct heap_site *s)
{
	if (s->stamp != h->stamp) {
		s->peak_bytes = s->live_bytes;
		s->peak_var = s->live_var;
		s->stamp = h->stamp;
	}
}

static struct heap_bucket *bucket_at(struct heap *h, int64_t t_ns)
{
	size_t b = t_ns > 0 ? (size_t)(t_ns / HEAP_BUCKET_NS) : 0;
	if (b >= 1000000)
		b = 999999; /* a day at 100 ms: bounded */
	if (b >= h->nbuckets) {
		size_t n = b + 1 > h->nbuckets * 2 ? b + 1 : h->nbuckets * 2;
		h->buckets = xrealloc(h->buckets, n * sizeof(*h->buckets));
		memset(h->buckets + h->nbuckets, 0, (n - h->nbuckets) * sizeof(*h->buckets));
		h->nbuckets = n;
	}
	return &h->buckets[b];
}

static uint64_t *thread_count(struct heap *h, uint32_t space, uint32_t tid)
{
	uint32_t key[2] = { space, tid };
	int64_t *v = hashmap_get(&h->thread_map, key, sizeof(key));
	if (!v)
		v = hashmap_put(&h->thread_map, key, sizeof(key), 0);
	return (uint64_t *)v;
}

/* ---- per-site timeline ---- */

void heap_site_timeline(struct heap *h, int64_t bucket_ns, heap_site_bucket_fn *fn, void *arg)
{
	h->site_bucket_ns = bucket_ns > 0 ? bucket_ns : 0;
	h->site_bucket_fn = fn;
	h->site_bucket_arg = arg;
}

static int delta_by_allocated(const void *a, const void *b)
{
	const struct heap_site_delta *x = a, *y = b;
	return x->allocated_bytes < y->allocated_bytes ? 1 : x->allocated_bytes > y->allocated_bytes ? -1 : 0;
}

static int delta_by_freed(const void *a, const void *b)
{
	const struct heap_site_delta *x = a, *y = b;
	return x->freed_bytes < y->freed_bytes ? 1 : x->freed_bytes > y->freed_bytes ? -1 : 0;
}

static void site_timeline_flush(struct heap *h)
{
	if (!h->ntl)
		return;
	struct heap_site_delta *v = xcalloc(h->ntl, sizeof(*v));
	for (size_t i = 0; i < h->ntl; i++) {
		struct heap_site *s = &h->sites[h->tl_sites[i]];
		v[i] = (struct heap_site_delta){ h->tl_sites[i], s->tl_allocations,
						 s->tl_allocated_bytes, s->tl_freed_bytes };
		s->tl_allocations = s->tl_allocated_bytes = s->tl_freed_bytes = 0;
		s->tl_listed = 0;
	}
	size_t n = h->ntl;
	h->ntl = 0;
	if (n > 2 * HEAP_SITE_BUCKET_TOP) {
		/* The top by allocated bytes stay in front; the top by freed bytes
		 * among the rest are moved in after them. */
		qsort(v, n, sizeof(*v), delta_by_allocated);
		qsort(v + HEAP_SITE_BUCKET_TOP, n - HEAP_SITE_BUCKET_TOP, sizeof(*v), delta_by_freed);
		n = 2 * HEAP_SITE_BUCKET_TOP;
	}
	if (h->site_bucket_fn)
		h->site_bucket_fn(h->site_bucket_arg, h->tl_bucket * h->site_bucket_ns, v, n);
	free(v);
}

static void site_timeline_add(struct heap *h, uint32_t site, int64_t t_ns, double allocations,
			      double allocated_bytes, double freed_bytes)
{
	if (!h->site_bucket_ns)
		return;
	int64_t b = (t_ns > 0 ? t_ns : 0) / h->site_bucket_ns;
	if (b != h->tl_bucket) {
		site_timeline_flush(h);
		h->tl_bucket = b;
	}
	struct heap_site *s = &h->sites[site];
	if (!s->tl_listed) {
		if (h->ntl == h->atl) {
			h->atl = h->atl ? h->atl * 2 : 64;
			h->tl_sites = xrealloc(h->tl_sites, h->atl * sizeof(*h->tl_sites));
		}
		h->tl_sites[h->ntl++] = site;
		s->tl_listed = 1;
	}
	s->tl_allocations += allocations;
	s->tl_allocated_bytes += allocated_bytes;
	s->tl_freed_bytes += freed_bytes;
}

static void mapping_remove(struct heap *h, size_t i);

/* A block goes: its mapping too, when it is one (and the table still says so). */
static void release(struct heap *h, int64_t t_ns, struct heap_live *e, int count_temporary)
{
	if (e->mapped && e->mapped <= h->nmaps && h->maps[e->mapped - 1].start == e->ptr &&
	    h->maps[e->mapped - 1].space == e->space)
		mapping_remove(h, e->mapped - 1);
	struct heap_site *s = &h->sites[e->site];
	struct heap_space *sp = &h->spaces[e->space];
	site_touch(h, s);
	sp->live_entries--;
	s->live_bytes -= e->bytes;
	s->live_count -= e->count;
	s->live_var -= e->var_bytes;
	sp->live_bytes -= e->bytes;
	h->live_bytes -= e->bytes;
	site_timeline_add(h, e->site, t_ns, 0, 0, e->bytes);
	if (count_temporary) {
		int temp = t_ns - e->t_ns < h->temp_ns;
		if (!temp && !sp->interval_bytes)
			temp = *thread_count(h, e->space, e->tid) == e->tseq;
		if (temp) {
			s->temp_count += e->count;
			s->temp_count_var += e->var_count;
			s->temp_bytes += e->bytes;
			h->temp_count += e->count;
		}
	}
	live_remove(h, e);
}

void heap_alloc(struct heap *h, int64_t t_ns, uint32_t space, uint32_t site, uint32_t tid,
		uint64_t ptr, uint64_t size)
{
	struct heap_space *sp = &h->spaces[space];
	if (sp->ended || !ptr)
		return;
	h->events++;
	struct heap_live *old = live_find(h, space, ptr);
	if (old) /* its free was lost (a dropped buffer): it is gone by now */
		release(h, t_ns, old, 0);
	double bytes = (double)size, count = 1, var_bytes = 0, var_count = 0;
	if (sp->interval_bytes > 0) {
		double p = -expm1(-(double)size / (double)sp->interval_bytes);
		if (p > 0) {
			bytes = (double)size / p;
			count = 1 / p;
			var_count = (1 - p) / (p * p);
			var_bytes = (double)size * (double)size * var_count;
		}
	}
	uint64_t *tc = thread_count(h, space, tid);
	(*tc)++;
	struct heap_live *e = live_insert(h, space, ptr);
	sp->live_entries++;
	e->site = site;
	e->tid = tid;
	e->mapped = 0;
	e->t_ns = t_ns;
	e->tseq = *tc;
	e->bytes = bytes;
	e->count = count;
	e->var_bytes = var_bytes;
	e->var_count = var_count;
	struct heap_site *s = &h->sites[site];
	site_touch(h, s);
	s->live_bytes += bytes;
	s->live_count += count;
	s->live_var += var_bytes;
	s->allocations += count;
	s->allocated_bytes += bytes;
	sp->live_bytes += bytes;
	h->live_bytes += bytes;
	h->allocations += count;
	h->allocated_bytes += bytes;
	if (h->live_bytes > h->peak_bytes) {
		h->peak_bytes = h->live_bytes;
		h->peak_t_ns = t_ns;
		h->stamp++;
	}
	site_timeline_add(h, site, t_ns, count, bytes, 0);
	struct heap_bucket *b = bucket_at(h, t_ns);
	b->allocations += count;
	b->allocated_bytes += bytes;
	if (h->live_bytes > b->live_max_bytes)
		b->live_max_bytes = h->live_bytes;
}

void heap_free(struct heap *h, int64_t t_ns, uint32_t space, uint64_t ptr)
{
	if (h->spaces[space].ended)
		return;
	h->events++;
	struct heap_live *e = live_find(h, space, ptr);
	if (!e) {
		/* Allocated before the agent ran, by the parent before a fork, or not sampled. */
		h->unknown_frees++;
		return;
	}
	release(h, t_ns, e, 1);
	struct heap_bucket *b = bucket_at(h, t_ns);
	if (h->live_bytes > b->live_max_bytes)
		b->live_max_bytes = h->live_bytes;
}

/* ---- mappings ---- */

/* Returns the mapping's index + 1, what its block's `mapped` holds. */
static uint32_t mapping_add(struct heap *h, uint32_t space, uint64_t start, uint64_t len)
{
	if (h->nmaps == h->amaps) {
		h->amaps = h->amaps ? h->amaps * 2 : 64;
		h->maps = xrealloc(h->maps, h->amaps * sizeof(*h->maps));
	}
	h->maps[h->nmaps++] = (struct heap_mapping){ start, len, space };
	return (uint32_t)h->nmaps;
}

/* The last mapping moves into slot i: its block learns its new index. */
static void mapping_remove(struct heap *h, size_t i)
{
	h->maps[i] = h->maps[--h->nmaps];
	if (i == h->nmaps)
		return;
	struct heap_live *e = live_find(h, h->maps[i].space, h->maps[i].start);
	if (e && e->mapped)
		e->mapped = (uint32_t)i + 1;
}

void heap_map(struct heap *h, int64_t t_ns, uint32_t space, uint32_t site, uint32_t tid,
	      uint64_t addr, uint64_t len)
{
	if (h->spaces[space].ended || !addr || !len)
		return;
	/* What it replaced was unmapped first (the agent says so, even for
	 * MAP_FIXED): no scan here, which would cost every mapping O(mappings). */
	heap_alloc(h, t_ns, space, site, tid, addr, len);
	struct heap_live *e = live_find(h, space, addr);
	if (!e)
		return;
	h->sites[site].mmap_bytes += e->bytes;
	e->mapped = mapping_add(h, space, addr, len);
}

/* A piece of len bytes of the split mapping from (whole bytes long): a new
 * block with its site and times, its share of the estimate and count_share of
 * its allocation count. */
static void mapping_piece(struct heap *h, const struct heap_live *from, uint64_t whole,
			  uint64_t start, uint64_t len, double count_share)
{
	struct heap_live *e = live_insert(h, from->space, start);
	uint64_t key = e->ptr;
	uint32_t sp = e->space;
	double f = (double)len / (double)whole;
	*e = *from;
	e->ptr = key;
	e->space = sp;
	e->bytes = from->bytes * (double)len / (double)whole; /* exact in full mode */
	e->var_bytes = from->var_bytes * f * f;
	e->count = from->count * count_share;
	e->var_count = from->var_count * count_share;
	h->spaces[sp].live_entries++;
	e->mapped = mapping_add(h, sp, start, len);
}

void heap_unmap(struct heap *h, int64_t t_ns, uint32_t space, uint64_t addr, uint64_t len)
{
	if (h->spaces[space].ended || !len)
		return;
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	h->events++;
	/* The common case, one whole mapping, without a scan: mappings do not
	 * overlap, so nothing else is in its range. */
	struct heap_live *whole = live_find(h, space, addr);
	if (whole && whole->mapped && whole->mapped <= h->nmaps &&
	    h->maps[whole->mapped - 1].start == addr && h->maps[whole->mapped - 1].len == len &&
	    h->maps[whole->mapped - 1].space == space) {
		release(h, t_ns, whole, 1);
		struct heap_bucket *b = bucket_at(h, t_ns);
		if (h->live_bytes > b->live_max_bytes)
			b->live_max_bytes = h->live_bytes;
		return;
	}
	for (size_t i = 0; i < h->nmaps;) {
		struct heap_mapping m = h->maps[i];
		if (m.space != space || m.start + m.len <= addr || m.start >= end) {
			i++;
			continue;
		}
		/* Its block, unless a lost record left the entry behind. */
		struct heap_live *e = live_find(h, space, m.start);
		if (!e || e->mapped != i + 1) {
			mapping_remove(h, i);
			continue;
		}
		uint64_t lo = addr > m.start ? addr - m.start : 0;
		uint64_t hi = m.start + m.len > end ? m.start + m.len - end : 0;
		if (!lo && !hi) {
			release(h, t_ns, e, 1); /* and its mapping */
		} else {
			mapping_remove(h, i); /* its pieces are added at the end */
			/* Bytes go with each piece's length; the allocation count is shared
			 * by the pieces (still one allocation). */
			struct heap_live old = *e;
			double f_lo = (double)lo / (double)m.len, f_hi = (double)hi / (double)m.len;
			double gone = old.bytes * (double)(m.len - lo - hi) / (double)m.len;
			struct heap_site *s = &h->sites[old.site];
			site_touch(h, s);
			s->live_bytes -= gone;
			s->live_var -= old.var_bytes * (1 - f_lo * f_lo - f_hi * f_hi);
			h->spaces[space].live_bytes -= gone;
			h->live_bytes -= gone;
			site_timeline_add(h, old.site, t_ns, 0, 0, gone);
			live_remove(h, e);
			h->spaces[space].live_entries--;
			if (lo)
				mapping_piece(h, &old, m.len, m.start, lo, (double)lo / (double)(lo + hi));
			if (hi)
				mapping_piece(h, &old, m.len, end, hi, (double)hi / (double)(lo + hi));
		}
		struct heap_bucket *b = bucket_at(h, t_ns);
		if (h->live_bytes > b->live_max_bytes)
			b->live_max_bytes = h->live_bytes;
	}
}

void heap_space_end(struct heap *h, int64_t t_ns, uint32_t space, int leaked)
{
	struct heap_space *sp = &h->spaces[space];
	if (sp->ended)
		return;
	sp->ended = 1;
	for (size_t i = 0; i < h->nmaps;) {
		if (h->maps[i].space == space)
			mapping_remove(h, i);
		else
			i++;
	}
	for (size_t i = 0; i < h->nsites; i++) {
		struct heap_site *s = &h->sites[i];
		if (s->space != space)
			continue;
		site_touch(h, s);
		if (leaked) {
			s->leaked_bytes += s->live_bytes;
			s->leaked_count += s->live_count;
			s->leaked_var += s->live_var;
		}
		s->live_bytes = 0;
		s->live_count = 0;
		s->live_var = 0;
	}
	h->live_bytes -= sp->live_bytes;
	sp->live_bytes = 0;
	/* Its blocks stay in the table until the next rebuild; frees of an ended
	 * space are ignored meanwhile. */
	h->dead_entries += sp->live_entries;
	sp->live_entries = 0;
	(void)t_ns;
}

void heap_finish(struct heap *h, int64_t t_ns)
{
	for (size_t i = 0; i < h->nspaces; i++)
		heap_space_end(h, t_ns, (uint32_t)i, 1);
	/* Sites untouched since the last peak still hold their value from then;
	 * space ends above touched every site, so each peak_bytes is now final. */
	for (size_t i = 0; i < h->nsites; i++)
		site_touch(h, &h->sites[i]);
	site_timeline_flush(h);
}
