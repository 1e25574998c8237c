/* gpu_model: the GPU timeline of a recording, per device, as the GPU
 * analyses (gpu.c: report sections; gpu_findings.c: findings) read it from
 * the cuda probe's tables (docs/gpu.md).
 *
 * A device is busy while any kernel, copy or memset runs on it; its window
 * runs from its first activity's start to its last one's end; the idle time
 * is the window less the busy time, and the idle gaps are the stretches of it
 * (GPU_GAP_MIN_NS or longer) between two activities. A copy's time is exposed
 * while no kernel runs on its device: there it is on the critical path
 * instead of overlapping the computation.
 *
 * Device memory (gpu_memory_load): what the program allocated through CUDA
 * per device, as the allocation and free records add up over time. */
#ifndef SONDE_GPU_MODEL_H
#define SONDE_GPU_MODEL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* SQL naming the CUDA runtime's calls that block the host until the GPU is
 * done: explicit synchronisations and the synchronous copy. */
#define GPU_SYNC_CALLS                                                                     \
	"('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventSynchronize', "       \
	"'cudaMemcpy')"
#define GPU_LAUNCH_CALLS                                                                   \
	"(name LIKE 'cudaLaunch%' OR name LIKE 'cuLaunch%' OR name = 'cudaGraphLaunch')"
#define GPU_PAGEABLE_COPY                                                                  \
	"((kind = 'HtoD' AND src_kind = 'pageable') OR (kind = 'DtoH' AND dst_kind = 'pageable'))"
#define GPU_SMALL_COPY_BYTES 65536
#define GPU_LARGE_COPY_BYTES 1048576 /* large enough to show the link's speed */

#define GPU_GAP_MIN_NS 10000LL /* 10 us: shorter gaps are the hardware's own */
/* ... unless they follow a tiny kernel: a host that launches one tiny kernel
 * after another keeps the GPU waiting a few microseconds each time, below
 * GPU_GAP_MIN_NS when its launches are fast. Those short launch gaps are kept
 * apart (short_gaps), for the launch-bound finding only. */
#define GPU_SHORT_GAP_MIN_NS 3000LL
#define GPU_TINY_BUSY_NS     100000LL /* a busy stretch this short is a tiny kernel */

struct gpu_gap {
	int64_t start_ns, end_ns;
	int64_t busy_before_ns; /* the busy stretch it follows */
};

struct gpu_device_time {
	int64_t device;
	int64_t kernels, copies, memsets;
	int64_t kernel_ns, copy_ns;    /* summed durations */
	int64_t copy_busy_ns;	       /* the copies' union ... */
	int64_t copy_exposed_ns;       /* ... of it while no kernel ran */
	int64_t busy_ns;	       /* their union */
	int64_t first_ns, last_ns;     /* the window */
	struct gpu_gap *gaps;	       /* owned */
	size_t ngaps;
	int64_t gaps_ns;	       /* summed */
	struct gpu_gap *short_gaps;    /* owned: GPU_SHORT_GAP_MIN_NS to GPU_GAP_MIN_NS after */
	size_t nshort;		       /* a tiny kernel (not in gaps, nor in gaps_ns) */
};

struct gpu_model {
	struct gpu_device_time *dev; /* sorted by device */
	size_t ndev;
};

/* 0 (model may have no device: no activity recorded), or -1 when the tables
 * are missing or unreadable. */
int gpu_model_load(sqlite3 *db, struct gpu_model *m);
void gpu_model_release(struct gpu_model *m);

/* The device with the most idle time in gaps; NULL when none. */
const struct gpu_device_time *gpu_model_idlest(const struct gpu_model *m);

struct gpu_memory_use {
	int64_t device;
	int64_t allocations;
	int64_t peak_bytes, end_bytes; /* allocated less freed: at its highest, at the end */
	int64_t pids;		       /* processes that allocated on it */
	int64_t capacity_bytes;	       /* the device's memory (gpu_devices); 0 unknown */
};

/* The devices' memory as allocated through CUDA (kind 'device' in
 * gpu_memory), sorted by device, in *v (owned by the caller: free()); *n of
 * them. 0 (maybe none), or -1 without the table. */
int gpu_memory_load(sqlite3 *db, struct gpu_memory_use **v, size_t *n);

#endif
