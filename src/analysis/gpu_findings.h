/* gpu_findings: the pieces the GPU findings share (gpu_findings.c, which
 * runs them all, and gpu_transfer.c): a finding's words built up, the host
 * spans they are located by (gpu_host.h), and the shared thresholds. */
#ifndef SONDE_GPU_FINDINGS_H
#define SONDE_GPU_FINDINGS_H

#include "analysis.h"
#include "gpu_host.h"
#include "gpu_model.h"
#include "../util/strbuf.h"

#define GPU_IDLE_MIN_S	    0.2	      /* a GPU idle (or waiting) at least this long ... */
#define GPU_IDLE_WALL_SHARE 0.05      /* ... and this share of the run */
#define GPU_COPY_MIN_CALLS  10	      /* copies: at least this many ... */
#define GPU_COPY_WALL_SHARE 0.01      /* ... taking this share of the run */
#define GPU_HOST_SLACK_NS   2000000LL /* widen API spans no sample landed in by 2 ms */

/* What a finding says, built up; every buffer owned. */
struct gpu_words {
	struct strbuf loc, where, title, ev, next;
};
#define GPU_WORDS_INIT                                                                             \
	{                                                                                          \
		STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT                    \
	}
void gpu_words_release(struct gpu_words *w);

struct gpu_spans {
	struct gpu_span *v; /* owned: free() */
	size_t n, alloc;
};
void gpu_spans_add(struct gpu_spans *s, int64_t tid, int64_t start_ns, int64_t end_ns);
/* Appends the rows (tid, start_ns, end_ns) of sql. */
void gpu_spans_query(sqlite3 *db, const char *sql, struct gpu_spans *s);

/* w->loc gets the host code in the spans and w->where "in F (n of m host
 * samples then)"; w->where "on the host" when no sample says. */
void gpu_host_at(sqlite3 *db, struct gpu_spans *s, int64_t slack_ns, struct gpu_words *w);

/* Adds the finding w says, stake_s seconds at stake of the run's wall_s. */
void gpu_finding_add(struct analysis_ctx *ctx, const char *id, const char *dimension,
		     const struct gpu_words *w, const char *diagnosis, const char *validation,
		     double stake_s, double wall_s);

/* The copies meeting cond (SQL on gpu_copies c): their count, bytes and
 * seconds, and their API calls appended to s. */
void gpu_copies_of(sqlite3 *db, const char *cond, int64_t *count, double *bytes, double *seconds,
		   struct gpu_spans *s);

/* gpu_transfer.c: interconnect.transfer_bound and interconnect.low_bandwidth
 * (over m's devices), and gpu.memory_imbalance. */
void gpu_transfer_findings(struct analysis_ctx *ctx, const struct gpu_model *m, double wall_s);
void gpu_memory_finding(struct analysis_ctx *ctx, double wall_s);

#endif
