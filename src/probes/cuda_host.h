/* cuda_host: what the cuda and nvtx probes share about the CUDA agent
 * (src/agents/cuda): whether the cuda probe can run here, the NVTX
 * injection, and the nvtx_ranges table both fill from the agent's N lines
 * (gpu_wire.h). With an NVIDIA driver the cuda probe records NVTX ranges
 * with everything else; without one (or when another CUDA tool holds
 * CUDA_INJECTION64_PATH) the nvtx probe records them alone. One of the two
 * runs, never both (cuda_host_cuda_usable decides). */
#ifndef SONDE_CUDA_HOST_H
#define SONDE_CUDA_HOST_H

#include "gpu_wire.h"
#include "probe.h"
#include "../record/recorder.h"

#include <sys/types.h>

#define CUDA_HOST_AGENT_FILE "libsonde_cuda.so"
#define CUDA_HOST_AGENT_ENV  "SONDE_CUDA_AGENT" /* names another agent file (tests) */

#define CUDA_HOST_NVTX_SCHEMA                                                                      \
	"CREATE TABLE IF NOT EXISTS nvtx_ranges(pid INTEGER, tid INTEGER, start_ns INTEGER,"       \
	" end_ns INTEGER, depth INTEGER, closed INTEGER, type TEXT, domain TEXT, name TEXT);"
#define CUDA_HOST_NVTX_INSERT "INSERT INTO nvtx_ranges VALUES(?,?,?,?,?,?,?,?,?)"

/* The value CUDA_INJECTION64_PATH has for the command when it names
 * another tool; NULL when it is unset, "none" or sonde's own agent. */
const char *cuda_host_injection_taken(const struct probe_ctx *ctx);

/* 1 when the driver's library loads here (a test may say so with
 * SONDE_CUDA_FORCE=1). */
int cuda_host_driver_present(void);

/* 1 when the cuda probe records here (a driver, CUDA_INJECTION64_PATH free):
 * then it records the NVTX ranges too and the nvtx probe stays off. */
int cuda_host_cuda_usable(const struct probe_ctx *ctx);

/* Points NVTX_INJECTION64_PATH at agent for the command, with its line in
 * Part B; when the user set that variable, leaves it and writes a note
 * (as probe) that the ranges are not recorded. */
void cuda_host_nvtx_inject(struct probe_ctx *ctx, const char *agent, const char *probe);

/* Binds an N record to CUDA_HOST_NVTX_INSERT's columns, times made relative
 * to t0_ns (the run's start); the caller steps it. */
void cuda_host_nvtx_bind(sqlite3_stmt *q, pid_t pid, const struct gpu_record *r, int64_t t0_ns);

#endif
