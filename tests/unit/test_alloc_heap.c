/* Unit tests of alloc_heap, the accounting behind the alloc probe: events in,
 * per-site peak, leaks and temporaries out. No agent is loaded here. */
#include "check.h"
#include "probes/alloc_heap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MS 1000000LL

static uint32_t site(struct heap *h, uint32_t space, uint64_t a, uint64_t b)
{
	uint64_t ips[2] = { a, b };
	return heap_site_intern(h, space, ips, 2);
}

TEST(same_stack_is_one_site,
     "one stack in one process is one site, another stack or process another")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 100, 0);
	uint32_t a = site(&h, sp, 1, 2), b = site(&h, sp, 1, 2), c = site(&h, sp, 1, 3);
	CHECK_NAMED("the same stack interns to one site", a == b);
	CHECK_NAMED("another stack is another site", a != c);
	uint32_t sp2 = heap_space_new(&h, 101, 0);
	CHECK_NAMED("the same addresses in another process are another site",
		    site(&h, sp2, 1, 2) != a);
	heap_release(&h);
}

TEST(peak_belongs_to_the_holder,
     "the heap peak is charged to the sites holding memory at its moment")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 1, 0);
	uint32_t leak = site(&h, sp, 10, 1), big = site(&h, sp, 20, 1), later = site(&h, sp, 30, 1);
	heap_alloc(&h, 1 * MS, sp, leak, 7, 0x1000, 100);
	heap_alloc(&h, 2 * MS, sp, big, 7, 0x2000, 1000);
	heap_free(&h, 10 * MS, sp, 0x2000);
	/* After the peak: smaller, must not move it. */
	heap_alloc(&h, 20 * MS, sp, later, 7, 0x3000, 500);
	heap_free(&h, 30 * MS, sp, 0x3000);
	heap_finish(&h, 40 * MS);
	CHECK_NAMED("the peak is the sum live at its moment", h.peak_bytes == 1100);
	CHECK_NAMED("the peak time is when it was reached", h.peak_t_ns == 2 * MS);
	CHECK_NAMED("the big buffer holds 1000 bytes at the peak", h.sites[big].peak_bytes == 1000);
	CHECK_NAMED("the leak holds 100 bytes at the peak", h.sites[leak].peak_bytes == 100);
	CHECK_NAMED("a later allocation holds nothing at the peak", h.sites[later].peak_bytes == 0);
	CHECK_NAMED("what is live at exit is leaked", h.sites[leak].leaked_bytes == 100);
	CHECK_NAMED("full mode figures have no variance",
		    h.sites[leak].leaked_var == 0 && h.sites[big].peak_var == 0);
	CHECK_NAMED("what was freed is not leaked", h.sites[big].leaked_bytes == 0);
	heap_release(&h);
}

TEST(temporaries, "blocks freed soon or before their thread's next allocation are temporaries")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 1, 0);
	uint32_t tmp = site(&h, sp, 1, 1), keep = site(&h, sp, 2, 1), other = site(&h, sp, 3, 1);
	for (int i = 0; i < 100; i++) {
		heap_alloc(&h, i * 10 * MS, sp, tmp, 5, 0x100, 64);
		heap_free(&h, i * 10 * MS + 10, sp, 0x100);
	}
	/* Long-lived, with another allocation of its thread in between: not temporary. */
	heap_alloc(&h, 2000 * MS, sp, keep, 5, 0x200, 64);
	heap_alloc(&h, 2001 * MS, sp, other, 5, 0x300, 64);
	heap_free(&h, 3000 * MS, sp, 0x200);
	/* Long-lived but its thread allocated nothing since: temporary (full mode). */
	heap_free(&h, 4000 * MS, sp, 0x300);
	heap_finish(&h, 5000 * MS);
	CHECK_NAMED("blocks freed within 1 ms are temporary", h.sites[tmp].temp_count == 100);
	CHECK_NAMED("a block outliving its thread's next allocation is not",
		    h.sites[keep].temp_count == 0);
	CHECK_NAMED("a block freed before its thread's next allocation is",
		    h.sites[other].temp_count == 1);
	CHECK_NAMED("the total counts both kinds", h.temp_count == 101);
	heap_release(&h);
}

TEST(exec_is_not_a_leak, "exec releases the old image's heap instead of leaking it")
{
	struct heap h;
	heap_init(&h);
	uint32_t before = heap_space_new(&h, 1, 0);
	uint32_t s1 = site(&h, before, 1, 1);
	heap_alloc(&h, 1 * MS, before, s1, 1, 0x10, 4096);
	heap_space_end(&h, 2 * MS, before, 0); /* exec */
	uint32_t after = heap_space_new(&h, 1, 0);
	uint32_t s2 = site(&h, after, 1, 1);
	heap_alloc(&h, 3 * MS, after, s2, 1, 0x10, 256);
	heap_free(&h, 4 * MS, before, 0x10); /* late record of the old image: ignored */
	heap_finish(&h, 5 * MS);
	CHECK_NAMED("the old image's heap is released by exec, not leaked",
		    h.sites[s1].leaked_bytes == 0);
	CHECK_NAMED("the new image's live block is leaked at exit",
		    h.sites[s2].leaked_bytes == 256);
	CHECK_NAMED("the live total returns to zero", h.live_bytes == 0);
	heap_release(&h);
}

TEST(unknown_free_is_ignored, "a free of an unknown pointer is counted, not applied")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 1, 0);
	heap_free(&h, 1 * MS, sp, 0xdead0);
	CHECK_NAMED("a free of an unknown pointer is counted, not applied",
		    h.unknown_frees == 1 && h.live_bytes == 0);
	heap_release(&h);
}

TEST(sampled_weights_are_unbiased, "sampled allocations weighted by their odds estimate the truth")
{
	/* Simulate the agent's Poisson sampling of 20000 allocations of 4 KiB at a
	 * 64 KiB mean, and check the weighted totals against the truth. */
	struct heap h;
	heap_init(&h);
	const double interval = 65536, size = 4096;
	uint32_t sp = heap_space_new(&h, 1, (int64_t)interval);
	uint32_t s = site(&h, sp, 1, 1);
	double p = 1 - exp(-size / interval);
	unsigned seed = 12345;
	uint64_t ptr = 0x10000;
	for (int i = 0; i < 20000; i++) {
		seed = seed * 1103515245u + 12345u;
		if ((double)(seed >> 8) / (double)(1u << 24) < p)
			heap_alloc(&h, i, sp, s, 1, ptr += 16, (uint64_t)size);
	}
	heap_finish(&h, 20000);
	double truth = 20000 * size;
	CHECK_NAMED("sampled bytes estimate within 10% of the truth",
		    fabs(h.sites[s].allocated_bytes - truth) < 0.1 * truth);
	CHECK_NAMED("sampled count estimate within 10% of the truth",
		    fabs(h.sites[s].allocations - 20000) < 0.1 * 20000);
	/* Expected standard deviation: sqrt(N s^2 (1-p)/p) = 2.8% of the total. */
	double sd = sqrt(h.sites[s].leaked_var) / truth;
	CHECK_NAMED("the estimated standard deviation of the leak is about 2.8%",
		    sd > 0.02 && sd < 0.04);
	heap_release(&h);
}

TEST(live_table_survives_growth_and_removal,
     "the live-block table finds every block again through growth and removal")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 1, 0);
	uint32_t s = site(&h, sp, 1, 1);
	for (uint64_t i = 1; i <= 50000; i++)
		heap_alloc(&h, 1, sp, s, 1, i * 16, 1);
	for (uint64_t i = 1; i <= 50000; i += 2)
		heap_free(&h, 2, sp, i * 16);
	CHECK_NAMED("half freed leaves half live", h.live_bytes == 25000 && h.live_n == 25000);
	for (uint64_t i = 2; i <= 50000; i += 2)
		heap_free(&h, 3, sp, i * 16);
	CHECK_NAMED("every block found again after deletions",
		    h.live_bytes == 0 && h.unknown_frees == 0);
	heap_release(&h);
}

TEST(exited_processes_do_not_grow_the_table,
     "exited processes' blocks leave the table and count as leaked")
{
	struct heap h;
	heap_init(&h);
	for (int k = 0; k < 200; k++) {
		uint32_t sp = heap_space_new(&h, 1000 + k, 0);
		uint32_t s = site(&h, sp, 1, 1);
		for (uint64_t i = 1; i <= 1000; i++)
			heap_alloc(&h, k, sp, s, 1, i * 16, 8);
		heap_space_end(&h, k, sp, 1);
	}
	heap_finish(&h, 1000);
	CHECK_NAMED("200 exited processes of 1000 blocks each keep the table small",
		    h.live_cap <= 8192);
	double leaked = 0;
	for (size_t i = 0; i < h.nsites; i++)
		leaked += h.sites[i].leaked_bytes;
	CHECK_NAMED("and every one of their blocks is counted as leaked", leaked == 200 * 1000 * 8);
	heap_release(&h);
}

#define PAGE 4096ULL

TEST(partial_unmap_splits_a_mapping,
     "a partial unmap splits a mapping into pieces that stay one allocation")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 1, 0);
	uint32_t m = site(&h, sp, 40, 1), other = site(&h, sp, 41, 1);
	/* 24 pages, the middle 8 unmapped: two 8-page pieces stay, one allocation. */
	heap_map(&h, 1 * MS, sp, m, 7, 0x100000, 24 * PAGE);
	heap_unmap(&h, 2 * MS, sp, 0x100000 + 8 * PAGE, 8 * PAGE);
	CHECK_NAMED("a hole in a mapping leaves 16 pages live", h.live_bytes == 16 * PAGE);
	CHECK_NAMED("the two pieces are two mappings", h.nmaps == 2);
	CHECK_NAMED("an unmap of nothing tracked changes nothing",
		    (heap_unmap(&h, 3 * MS, sp, 0x900000, PAGE), h.live_bytes == 16 * PAGE));
	/* The tail piece's last 4 pages, then a malloc'd block: unmaps leave it alone. */
	heap_unmap(&h, 4 * MS, sp, 0x100000 + 20 * PAGE, 4 * PAGE);
	heap_alloc(&h, 5 * MS, sp, other, 7, 0x200000, 100);
	heap_unmap(&h, 6 * MS, sp, 0x200000, PAGE);
	CHECK_NAMED("a malloc'd block is not released by an unmap",
		    h.live_bytes == 12 * PAGE + 100);
	heap_finish(&h, 10 * MS);
	CHECK_NAMED("the pieces leak 12 pages", h.sites[m].leaked_bytes == 12 * PAGE);
	CHECK_NAMED("the pieces still count as one allocation",
		    fabs(h.sites[m].leaked_count - 1) < 1e-9);
	CHECK_NAMED("the peak was the whole mapping", h.sites[m].peak_bytes == 24 * PAGE);
	CHECK_NAMED("the mapping's bytes are counted as mmap", h.sites[m].mmap_bytes == 24 * PAGE);
	CHECK_NAMED("the malloc'd block's are not", h.sites[other].mmap_bytes == 0);
	heap_release(&h);
}

TEST(unmap_releases_whole_mappings_and_fixed_replaces,
     "an unmap releases whole mappings and a fixed mapping replaces what it covers")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 1, 0);
	uint32_t a = site(&h, sp, 50, 1), b = site(&h, sp, 51, 1);
	heap_map(&h, 1 * MS, sp, a, 7, 0x100000, 4 * PAGE);
	heap_map(&h, 1 * MS, sp, a, 7, 0x200000, 4 * PAGE);
	/* One unmap over both, and beyond them. */
	heap_unmap(&h, 50 * MS, sp, 0x100000, 0x200000);
	CHECK_NAMED("one unmap over two mappings releases both", h.live_bytes == 0 && h.nmaps == 0);
	/* MAP_FIXED over a live one: its range unmapped, then the new mapping. */
	heap_map(&h, 60 * MS, sp, a, 7, 0x300000, 8 * PAGE);
	heap_unmap(&h, 70 * MS, sp, 0x300000 + 4 * PAGE, 8 * PAGE);
	heap_map(&h, 70 * MS, sp, b, 7, 0x300000 + 4 * PAGE, 8 * PAGE);
	CHECK_NAMED("a mapping over another keeps only the part it does not cover",
		    h.live_bytes == 12 * PAGE && h.sites[a].live_bytes == 4 * PAGE);
	/* A lost unmap: a new mapping at the same address replaces the old block
	 * and its range, so a later unmap finds only the new one. */
	heap_map(&h, 80 * MS, sp, a, 7, 0x500000, 8 * PAGE);
	heap_map(&h, 81 * MS, sp, b, 7, 0x500000, 2 * PAGE);
	heap_unmap(&h, 82 * MS, sp, 0x500000, 8 * PAGE);
	CHECK_NAMED("a lost unmap leaves no stale range behind",
		    h.live_bytes == 12 * PAGE && h.nmaps == 2);
	heap_finish(&h, 100 * MS);
	heap_release(&h);
}

TEST(sampled_mapping_pieces_keep_their_weight, "the pieces of a sampled mapping keep its weight")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 1, 64 * (int64_t)PAGE);
	uint32_t m = site(&h, sp, 60, 1);
	heap_map(&h, 1 * MS, sp, m, 7, 0x100000, 16 * PAGE);
	double whole = h.live_bytes;
	heap_unmap(&h, 2 * MS, sp, 0x100000, 4 * PAGE);
	CHECK_NAMED("a sampled mapping's estimate shrinks with the pages unmapped",
		    fabs(h.live_bytes - whole * 0.75) < 1e-6 * whole);
	heap_release(&h);
}

struct tl_rows {
	int calls;
	size_t rows;
	double allocated, freed;
	int64_t last_t;
};

static void tl_collect(void *arg, int64_t t_ns, const struct heap_site_delta *v, size_t n)
{
	struct tl_rows *r = arg;
	r->calls++;
	r->rows += n;
	r->last_t = t_ns;
	for (size_t i = 0; i < n; i++) {
		r->allocated += v[i].allocated_bytes;
		r->freed += v[i].freed_bytes;
	}
}

TEST(site_timeline_buckets, "the per-site timeline hands over buckets of the busiest sites")
{
	struct heap h;
	struct tl_rows r = { 0 };
	heap_init(&h);
	heap_site_timeline(&h, 20 * MS, tl_collect, &r);
	uint32_t sp = heap_space_new(&h, 1, 0);
	uint32_t a = site(&h, sp, 70, 1);
	heap_alloc(&h, 1 * MS, sp, a, 7, 0x1000, 1000);
	heap_alloc(&h, 5 * MS, sp, a, 7, 0x2000, 500);
	heap_free(&h, 45 * MS, sp, 0x1000);
	CHECK_NAMED("a bucket is handed over when the next one starts",
		    r.calls == 1 && r.rows == 1 && r.allocated == 1500);
	/* Many sites in one bucket: only the busiest are kept. */
	for (uint32_t k = 0; k < 100; k++)
		heap_alloc(&h, 50 * MS, sp, site(&h, sp, 1000 + k, 1), 7, 0x10000 + k * 16, k + 1);
	heap_finish(&h, 100 * MS);
	CHECK_NAMED("the last bucket is handed over at the end", r.last_t == 40 * MS);
	CHECK_NAMED("the freed bytes are in the bucket of the free", r.freed == 1000);
	CHECK_NAMED("a bucket keeps at most twice HEAP_SITE_BUCKET_TOP sites",
		    r.rows == 1 + 2 * HEAP_SITE_BUCKET_TOP);
	/* The 16 largest (85..100) are among the kept: at least their bytes. */
	CHECK_NAMED("the sites that allocated most are kept",
		    r.allocated >= 1500 + 16 * (85 + 100) / 2);
	heap_release(&h);
}

CHECK_MAIN()
