/* Unit tests of alloc_python: an allocation gets the Python stack of its
 * thread's nearest python sample, within the gap, and heap sites split by it. */
#include "check.h"
#include "probes/alloc_heap.h"
#include "probes/alloc_python.h"

#define MS 1000000LL

TEST(nearest_same_thread, "an allocation gets its own thread's nearest sample, before or after")
{
	struct alloc_pyticks pt;
	alloc_pyticks_init(&pt, 15 * MS);
	alloc_pyticks_add(&pt, 7, 100 * MS, 11);
	alloc_pyticks_add(&pt, 7, 110 * MS, 12);
	alloc_pyticks_add(&pt, 8, 104 * MS, 21);
	CHECK(alloc_pyticks_nearest(&pt, 7, 103 * MS) == 11);
	CHECK(alloc_pyticks_nearest(&pt, 7, 106 * MS) == 12);
	CHECK(alloc_pyticks_nearest(&pt, 8, 103 * MS) == 21);
	CHECK(alloc_pyticks_nearest(&pt, 7, 90 * MS) == 11);
	alloc_pyticks_release(&pt);
}

TEST(nearest_gap, "no sample within the gap, or no sample of the thread, gives no Python stack")
{
	struct alloc_pyticks pt;
	alloc_pyticks_init(&pt, 15 * MS);
	CHECK(alloc_pyticks_nearest(&pt, 7, 100 * MS) == 0);
	alloc_pyticks_add(&pt, 7, 100 * MS, 11);
	alloc_pyticks_add(&pt, 7, 200 * MS, 12);
	CHECK(alloc_pyticks_nearest(&pt, 7, 150 * MS) == 0);
	CHECK(alloc_pyticks_nearest(&pt, 7, 116 * MS) == 0);
	CHECK(alloc_pyticks_nearest(&pt, 7, 114 * MS) == 11);
	CHECK(alloc_pyticks_nearest(&pt, 9, 100 * MS) == 0);
	CHECK(pt.matched == 1 && pt.unmatched == 2); /* threads without samples are not counted */
	alloc_pyticks_release(&pt);
}

TEST(nearest_unordered, "samples added out of order are still found")
{
	struct alloc_pyticks pt;
	alloc_pyticks_init(&pt, 15 * MS);
	for (int i = 50; i-- > 0;)
		alloc_pyticks_add(&pt, 3, i * 10 * MS, 100 + i);
	CHECK(alloc_pyticks_nearest(&pt, 3, 251 * MS) == 125);
	CHECK(alloc_pyticks_nearest(&pt, 3, 0) == 100);
	alloc_pyticks_release(&pt);
}

TEST(attribute_neighbours, "an allocation between two samples: the same stack, else the nearer one without a recording")
{
	struct alloc_pyticks pt;
	alloc_pyticks_init(&pt, 15 * MS);
	alloc_pyticks_add(&pt, 7, 100 * MS, 11);
	alloc_pyticks_add(&pt, 7, 110 * MS, 11);
	alloc_pyticks_add(&pt, 7, 120 * MS, 12);
	CHECK(alloc_pyticks_attribute(&pt, NULL, NULL, 7, 105 * MS) == 11);
	CHECK(alloc_pyticks_attribute(&pt, NULL, NULL, 7, 113 * MS) == 11);
	CHECK(alloc_pyticks_attribute(&pt, NULL, NULL, 7, 118 * MS) == 12);
	CHECK(alloc_pyticks_attribute(&pt, NULL, NULL, 7, 134 * MS) == 12);
	CHECK(alloc_pyticks_attribute(&pt, NULL, NULL, 7, 136 * MS) == 0);
	CHECK(alloc_pyticks_attribute(&pt, NULL, NULL, 8, 110 * MS) == 0);
	alloc_pyticks_release(&pt);
}

TEST(site_split, "one native stack under two Python stacks is two sites, under none one")
{
	struct heap h;
	heap_init(&h);
	uint32_t sp = heap_space_new(&h, 42, 0);
	uint64_t ips[2] = { 0x1000, 0x2000 };
	uint32_t a = heap_site_intern(&h, sp, ips, 2);
	uint32_t b = heap_site_intern_py(&h, sp, ips, 2, 5);
	uint32_t c = heap_site_intern_py(&h, sp, ips, 2, 6);
	CHECK(a != b && b != c && a != c);
	CHECK(heap_site_intern_py(&h, sp, ips, 2, 0) == a);
	CHECK(heap_site_intern_py(&h, sp, ips, 2, 5) == b);
	CHECK(h.sites[b].py_node == 5 && h.sites[a].py_node == 0);
	heap_release(&h);
}

CHECK_MAIN()
