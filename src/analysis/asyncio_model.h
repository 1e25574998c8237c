/* asyncio_model: what the parts of the asyncio analysis share: the recording
 * read into memory (struct aio: the locations, the tasks by site and creation
 * time, the sites), and the functions one part calls in another (asyncio.c
 * loads the tables, builds the sites and runs the analysis, asyncio_lag.c
 * reads the loop's lag, asyncio_retries.c the retry waits). Private: only
 * asyncio*.c include it (asyncio_pools.c does not: it reads its own tables);
 * the rest of sonde sees analysis_asyncio (analyses.c). */
#ifndef SONDE_ASYNCIO_MODEL_H
#define SONDE_ASYNCIO_MODEL_H

#include "analysis.h"
#include "../util/hashmap.h"

#include <stddef.h>
#include <stdint.h>

struct strbuf;

struct aio_loc {
	char *function, *file;
	int line;
};

struct aio_task {
	int64_t pid, id, site, coro, created_ns, done_ns;
	int failed, cancelled, done;
};

struct aio_site {
	int64_t pid, site, coro;
	size_t first, n; /* tasks[first .. first + n), by creation time */
	int64_t peak_in_flight, peak_active, active_ns; /* active_ns: above AIO_FANOUT_MIN */
	int64_t waits;					/* of its tasks on semaphores and locks */
	int64_t sem_tasks; /* its tasks that waited on a semaphore at least once */
	double median_s, p95_s, max_s;
	int64_t failed, cancelled;
};

struct aio {
	sqlite3 *db;
	int64_t wall_ns;
	struct aio_loc *locs;
	size_t nlocs;
	struct hashmap loc_index; /* (pid, id) -> index in locs */
	struct aio_task *tasks;
	size_t ntasks;
	struct hashmap task_index; /* (pid, id) -> index in tasks */
	struct aio_site *sites;
	size_t nsites;
};

/* asyncio.c: a location as "file:function:line" ("?" when unknown), its
 * function alone, and a concurrency finding of the analysis. */
void aio_loc_text(const struct aio *a, int64_t pid, int64_t id, struct strbuf *out);
const char *aio_loc_function(const struct aio *a, int64_t pid, int64_t id);
void aio_finding_emit(struct analysis_ctx *ctx, const char *id, const char *title,
		      const char *location, const char *evidence, const char *diagnosis,
		      const char *next, const char *validation, double impact_s, double wall_s);

/* asyncio_lag.c: the report's loop_lag, and the asyncio.loop_blocked findings. */
json_t *aio_lag_analyse(struct analysis_ctx *ctx, const struct aio *a, double wall_s);

/* asyncio_retries.c: the report's retries, and the asyncio.retry_storm
 * findings; and the int64_t comparison for qsort that the memory findings
 * use too. */
json_t *aio_retries_analyse(struct analysis_ctx *ctx, const struct aio *a, double wall_s);
int aio_i64_cmp(const void *x, const void *y);

#endif
