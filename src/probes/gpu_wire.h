/* gpu_wire: the cuda agent's records (src/agents/cuda), one text line each,
 * fields separated by a tab, the kind first. Each CUDA process writes
 * cuda-PID.txt into the run's agent directory (agent_dir.h):
 *
 *   V version pid cupti_version                  the file's first line (0: NVTX's
 *                                                 call came before CUDA's; a second V
 *                                                 line then gives CUPTI's version)
 *   Q reason                                      CUPTI is unusable in this process
 *                                                 (taken by another profiler, no
 *                                                 driver, ...): one line a user can read
 *   D device sm_count mem_bytes cc_major cc_minor name    a device CUPTI saw
 *   K start end device stream corr gx gy gz bx by bz regs smem_static smem_dynamic name
 *                                                 a kernel (name as the binary has it,
 *                                                 mangled or not)
 *   M start end device stream corr bytes async src_device dst_device kind src_kind dst_kind
 *                                                 a copy; kind: HtoD DtoH DtoD HtoH PtoP
 *                                                 other; src/dst_kind: pageable pinned
 *                                                 device managed array unknown
 *   S start end device stream corr bytes         a memset
 *   A start end tid corr ret name                a CUDA runtime API call (tid: gettid)
 *   Y start end stream corr type                 a synchronisation; type: event
 *                                                 stream_wait_event stream context unknown
 *   G t device address bytes corr op kind        a device allocation (op alloc) or
 *                                                 free (op free); kind: device pinned
 *                                                 managed pageable unknown
 *   N start end tid depth closed type domain message
 *                                                 an NVTX range or mark of the
 *                                                 program's (tid: gettid of the thread
 *                                                 that opened it); type: push (push/pop,
 *                                                 depth: the pushes open around it, 0
 *                                                 at the top), range (start/end, may
 *                                                 end on another thread), mark (an
 *                                                 instant: start = end); closed 0: still
 *                                                 open at exit, end is the exit; domain
 *                                                 "" is NVTX's default one
 *   X name count                                  a counter of the agent's
 *                                                 (records_dropped, nvtx_too_deep, ...)
 *
 * Times are CLOCK_MONOTONIC nanoseconds (the agent gives CUPTI that clock),
 * sonde's clock. Integers are decimal, may be negative; the string fields
 * are the last ones of their line and hold no tab or newline. This module
 * only parses: one line in, one record out, pointing into the line; no
 * allocation. */
#ifndef SONDE_GPU_WIRE_H
#define SONDE_GPU_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define GPU_WIRE_VERSION 1
#define GPU_LINE_MAX 8192 /* bytes; a longer line is not a record */
#define GPU_WIRE_INTS 14
#define GPU_WIRE_STRS 3

struct gpu_record {
	char kind;		    /* one of "VQDKMSAYGNX" */
	int64_t n[GPU_WIRE_INTS];   /* the integer fields, in their order above */
	const char *s[GPU_WIRE_STRS]; /* the string fields, in their order (not terminated) */
	size_t slen[GPU_WIRE_STRS];
};

/* Parses one line (without its newline). 0, or -1 when it is not a record
 * of a known kind with exactly its fields. */
int gpu_record_parse(const char *line, size_t len, struct gpu_record *r);

#endif
