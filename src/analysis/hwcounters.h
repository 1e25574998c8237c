/* hwcounters: the whole target's hardware counters (table counters, written
 * by the counters probe) as report["cpu"]["counters"], and the finding they
 * support. Used by cpu_usage. */
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

/* The whole-program "memory-bound" finding when IPC and the cache miss rate
 * say so. cpu_s: the target's CPU time; wall_s: its wall time. */
void hwcounters_findings(struct analysis_ctx *ctx, json_t *counters, double cpu_s, double wall_s);

#endif
