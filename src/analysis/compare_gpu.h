/* compare_gpu: the GPU side of `sonde compare`: each side's kernel and copy
 * time and every kernel's time, matched by demangled name.
 *
 * Contract:
 * - A side has GPU data when any of its runs recorded a kernel (gpu_kernels
 *   with a row); present[r] says so, and the kernels are compared only when
 *   both sides have it.
 * - Times and counts are the mean per run of a side (a family's runs each
 *   count, a run with no kernel as zero), like compare.h's seconds.
 * - v holds every kernel either side ran, the largest |Δ total_s| first,
 *   then by name; each name is a malloc'd demangled string.
 * - Everything is owned by the struct; compare_gpu_release() frees it. */
#ifndef SONDE_COMPARE_GPU_H
#define SONDE_COMPARE_GPU_H

#include <sqlite3.h>
#include <stddef.h>

struct compare_kernel {
	char *name;
	double count[2], total_s[2]; /* [0]: A, [1]: B; mean per run */
};

struct compare_gpu {
	int present[2];
	double kernel_s[2], copy_s[2]; /* all kernels' and copies' time, mean per run */
	double kernels[2], copies[2];  /* how many, mean per run */
	struct compare_kernel *v;
	size_t n;
};

#define COMPARE_GPU_INIT                                                                           \
	{                                                                                          \
		{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, NULL, 0                                    \
	}

/* Reads the kernels and copies of dbs[0] (n[0] runs of A) and dbs[1] (n[1]
 * runs of B) into *g. A recording without the tables counts as no GPU work. */
void compare_gpu_build(sqlite3 *const *const dbs[2], const size_t n[2], struct compare_gpu *g);
void compare_gpu_release(struct compare_gpu *g);

/* Whether both sides ran GPU work: the kernel table is then worth writing. */
static inline int compare_gpu_both(const struct compare_gpu *g)
{
	return g->present[0] && g->present[1];
}

#endif
