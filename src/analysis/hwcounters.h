/* hwcounters: hardware counters. The whole target's and each thread's (table
 * counters, written by the counters probe) as report["cpu"]["counters"] and
 * ["thread_counters"], used by cpu_usage; each hot function's and call path's
 * (table sample_counters, from the cpu probe's sample groups) in the
 * hotspots and call tree, used by hotspots; and the memory-bound findings. */
#ifndef SONDE_HWCOUNTERS_H
#define SONDE_HWCOUNTERS_H

#include <jansson.h>
#include <sqlite3.h>

struct analysis_ctx;
struct strbuf;

/* IPC below this with a cache miss rate above HWCOUNTERS_MISS_RATE_HIGH
 * reads as a memory-bound run. */
#define HWCOUNTERS_IPC_LOW 0.7
#define HWCOUNTERS_MISS_RATE_HIGH 0.10

/* {cycles, instructions, ipc, cache_references, cache_misses, cache_miss_rate,
 * branches, branch_misses, branch_miss_rate, multiplexed}: a new object, or
 * NULL with one line in why (no counters recorded, and why not). Counts are
 * scaled by time_enabled / time_running when the PMU multiplexed them. */
json_t *hwcounters_json(sqlite3 *db, struct strbuf *why);

/* Events a per-thread row may carry (the counters probe counts at most 6). */
#define HWCOUNTERS_MAX_EVENTS 8

/* [{pid, tid, name, counts {event: count}, ipc, cache_miss_rate,
 * branch_miss_rate, multiplexed}] from the per-thread rows of table counters,
 * the threads with the largest count of the first event (cycles, or
 * task-clock with the software stand-ins) first, at most max_rows; *total:
 * the threads counted. NULL when the recording has no per-thread counts (meta
 * counters_per_thread absent or 0: older recordings count per process). */
json_t *hwcounters_threads_json(sqlite3 *db, size_t max_rows, size_t *total);

/* A hot function is memory-bound when, in its own samples, IPC is at most
 * HWCOUNTERS_FUNC_IPC_RATIO of all samples' with at least
 * HWCOUNTERS_FUNC_MPKI_HIGH cache misses per 1000 instructions, and it holds
 * HWCOUNTERS_FUNC_SELF_PCT of the samples (among the first
 * HWCOUNTERS_FUNC_RANKS hotspots, over HWCOUNTERS_FUNC_MIN_SAMPLES samples). */
#define HWCOUNTERS_FUNC_IPC_RATIO 0.6
#define HWCOUNTERS_FUNC_MPKI_HIGH 5.0
#define HWCOUNTERS_FUNC_SELF_PCT 10.0
#define HWCOUNTERS_FUNC_RANKS 5
#define HWCOUNTERS_FUNC_MIN_SAMPLES 20
#define STACK_PATH_MAX 1024 /* frames walked up from a sampled node */

/* Adds to report["hotspots"] and report["call_tree"] entries (cpu samples
 * only) the counts read with their samples (table sample_counters, written
 * by the cpu probe): counters {event: count}, ipc, cache_misses_per_kinstr;
 * to report["hotspots_source"] counters (the events), ipc and
 * cache_misses_per_kinstr over all samples; and the "memory-bound hot
 * function" finding (marking its hotspot memory_bound: true). Nothing when
 * the recording has no sample_counters. Runs after the hotspots are built. */
void hwcounters_functions(struct analysis_ctx *ctx);

/* The whole-program "memory-bound" finding when IPC and the cache miss rate
 * say so. cpu_s: the target's CPU time; wall_s: its wall time. */
void hwcounters_findings(struct analysis_ctx *ctx, json_t *counters, double cpu_s, double wall_s);

#endif
