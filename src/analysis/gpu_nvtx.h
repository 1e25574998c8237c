/* gpu_nvtx: the GPU time of the work launched inside each NVTX range
 * (docs/gpu.md: gpu.nvtx_ranges, gpu.nvtx_launches; phases of origin nvtx).
 *
 * A launch is one CUDA call (gpu_api) with the kernels and copies that carry
 * its correlation id (pid, corr). It is inside a range when the call, on its
 * host clock, lies within the range and was made on the thread that opened
 * it. A launch that no range of its own thread holds, made while ranges of
 * exactly one other thread of its process hold it, is that thread's
 * (`other_thread`: PyTorch runs a CUDA backward pass on autograd's own
 * thread while the caller waits inside its "backward" range); with ranges of
 * several other threads open, or none, it is `outside`. Nested ranges: the
 * innermost range holding a launch gets it as `self`, every range holding it
 * as `total`; a name gets a launch once however many of its ranges hold it,
 * so a name's share never passes 100%. Kernels and copies whose call was not
 * recorded (the agent records the runtime API only: a driver-API launch has
 * no call) are `unattributed`. Memsets are not counted. */
#ifndef SONDE_GPU_NVTX_H
#define SONDE_GPU_NVTX_H

#include "phase_table.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct gpu_work {
	int64_t kernel_ns, copy_ns; /* summed durations */
	int64_t kernels, copies;
};

struct gpu_launch {
	int64_t pid, tid;	  /* tid -1: the call was not recorded */
	int64_t start_ns, end_ns; /* the call, since the run's start */
	int64_t held_tid;	  /* the thread whose ranges hold it (gpu_nvtx.c) */
	int inferred;		  /* the call was not recorded: thread and time from the
				   * launches around it on its stream (gpu_nvtx.c) */
	struct gpu_work work;
};

struct gpu_launches {
	struct gpu_launch *v; /* sorted by pid, tid, start_ns; owned */
	size_t n;
	struct gpu_work all; /* every kernel and copy, launched or not */
};

#define GPU_LAUNCHES_INIT { NULL, 0, { 0, 0, 0, 0 } }

/* Reads the launches of the recording into *l. 0, or -1 when it has no
 * gpu_kernels, gpu_copies or gpu_api table (l empty). */
int gpu_launches_load(sqlite3 *db, struct gpu_launches *l);
void gpu_launches_release(struct gpu_launches *l);

/* Adds to gpu.nvtx_ranges' rows (objects with `name` and `domain`, as the gpu
 * analysis makes them) their GPU keys, and sets gpu.nvtx_launches in gpu:
 * what ran inside any range (of which from other threads), outside them and
 * unattributed. Nothing without the launches or the nvtx_ranges table. */
void gpu_nvtx_ranges_add(sqlite3 *db, json_t *ranges, json_t *gpu);

/* Adds the GPU keys to the phases made of NVTX ranges (json objects arr[i]
 * for v[i], i < n): the launches within the phase held by its thread's
 * ranges (phase.tid; 0: a start/end range, any thread, as its samples), or
 * made on it outside any range. Nothing without the launches. */
void gpu_nvtx_phases_add(sqlite3 *db, const struct phase *v, size_t n, json_t *arr);

#endif
