/* asyncio_retries: retry waits (asyncio.sleep while an exception is handled),
 * per site and exception: report key `asyncio.retries`, with their delays and
 * the waves they wake in; asyncio.retry_storm when many retry at one site
 * with delays that repeat (no jitter): the retries come back in waves. Part
 * of the asyncio analysis (asyncio.c runs it; asyncio_model.h). */
#include "asyncio_model.h"
#include "analysis.h"
#include "../util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AIO_RETRY_MIN 20

/* ---- retries ---- */

struct retry {
	int64_t t_ns, delay_ns;
};

static int retry_cmp(const void *x, const void *y)
{
	const struct retry *a = x, *b = y;
	return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

int aio_i64_cmp(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

/* One site's retry waits: the JSON entry, and the finding when they storm. */
static void retry_site(struct analysis_ctx *ctx, const struct aio *a, int64_t pid, int64_t site,
		       const char *exc, struct retry *r, size_t n, json_t *arr, double wall_s)
{
	qsort(r, n, sizeof(*r), retry_cmp);
	int64_t *delays = xmalloc(n * sizeof(*delays)), *wakes = xmalloc(n * sizeof(*wakes));
	for (size_t i = 0; i < n; i++) {
		delays[i] = r[i].delay_ns / 1000000; /* ms: jitter shows in them */
		wakes[i] = r[i].t_ns + r[i].delay_ns;
	}
	qsort(delays, n, sizeof(*delays), aio_i64_cmp);
	qsort(wakes, n, sizeof(*wakes), aio_i64_cmp);
	size_t distinct = n ? 1 : 0;
	for (size_t i = 1; i < n; i++)
		distinct += delays[i] != delays[i - 1];
	/* Waves: wake-ups within 20 ms of the one before belong to one wave. */
	size_t waves = n ? 1 : 0, wave = 1, largest = n ? 1 : 0;
	for (size_t i = 1; i < n; i++) {
		if (wakes[i] - wakes[i - 1] > 20000000LL) {
			waves++;
			wave = 0;
		}
		if (++wave > largest)
			largest = wave;
	}
	/* The time with a retry wait pending (their union). */
	int64_t covered = 0, end = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		int64_t s = r[i].t_ns > end ? r[i].t_ns : end, e = r[i].t_ns + r[i].delay_ns;
		if (e > s)
			covered += e - s;
		if (e > end)
			end = e;
	}
	struct strbuf loc = STRBUF_INIT;
	aio_loc_text(a, pid, site, &loc);
	int jitter = distinct > n / 4;
	json_t *o = json_object();
	json_object_set_new(o, "location", report_string(loc.buf, loc.len));
	json_object_set_new(o, "exception", report_string(exc, strlen(exc)));
	json_object_set_new(o, "retries", json_integer((json_int_t)n));
	json_object_set_new(o, "delay_min_s", json_real((double)delays[0] / 1e3));
	json_object_set_new(o, "delay_max_s", json_real((double)delays[n - 1] / 1e3));
	json_object_set_new(o, "distinct_delays", json_integer((json_int_t)distinct));
	json_object_set_new(o, "jittered", json_boolean(jitter));
	json_object_set_new(o, "waves", json_integer((json_int_t)waves));
	json_object_set_new(o, "largest_wave", json_integer((json_int_t)largest));
	json_array_append_new(arr, o);
	if (n >= AIO_RETRY_MIN && !jitter) {
		struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
		strbuf_addf(&title, "%s retries %zu times after %s with %s (retry storm)",
			    aio_loc_function(a, pid, site), n, exc,
			    distinct == 1 ? "a fixed delay" : "delays that repeat, no jitter");
		strbuf_addf(&ev, "%zu retry waits (asyncio.sleep while handling %s) from %.3f s to "
				 "%.3f s; %zu distinct delay%s from %.3f s to %.3f s; they woke in %zu "
				 "waves of up to %zu retries at once; a retry wait was pending for "
				 "%.3f s of the run",
			    n, exc, (double)r[0].t_ns / 1e9, (double)end / 1e9, distinct,
			    distinct == 1 ? "" : "s", (double)delays[0] / 1e3,
			    (double)delays[n - 1] / 1e3, waves, largest, (double)covered / 1e9);
		strbuf_addf(&next, "In %s, back off exponentially with full jitter (`await "
				   "asyncio.sleep(random.uniform(0, min(cap, base * 2 ** attempt)))`), "
				   "cap the attempts, and bound how many callers retry at once (an "
				   "asyncio.Semaphore) so the retries stop arriving in waves",
			    aio_loc_function(a, pid, site));
		aio_finding_emit(ctx, "asyncio.retry_storm", title.buf, loc.buf, ev.buf,
				 "Retry storm: many callers retry the same failing call after the same "
				 "delay, so the retries hit the service together, wave after wave",
				 next.buf, "asyncio.retries[].jittered becomes true and largest_wave falls",
				 (double)covered / 1e9, wall_s);
		strbuf_release(&title);
		strbuf_release(&ev);
		strbuf_release(&next);
	}
	strbuf_release(&loc);
	free(delays);
	free(wakes);
}

json_t *aio_retries_analyse(struct analysis_ctx *ctx, const struct aio *a, double wall_s)
{
	json_t *arr = json_array();
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(a->db, "SELECT pid, site, exc, t_ns, delay_ns FROM aio_retries"
				      " ORDER BY pid, site, exc",
			       -1, &st, NULL) != SQLITE_OK)
		return arr;
	struct retry *r = NULL;
	size_t n = 0, alloc = 0;
	int64_t pid = -1, site = -1;
	char *exc = NULL;
	for (int more = 1; more;) {
		more = sqlite3_step(st) == SQLITE_ROW;
		const char *e = more ? (const char *)sqlite3_column_text(st, 2) : NULL;
		if (!more || sqlite3_column_int64(st, 0) != pid || sqlite3_column_int64(st, 1) != site ||
		    strcmp(e ? e : "?", exc ? exc : "")) {
			if (n)
				retry_site(ctx, a, pid, site, exc, r, n, arr, wall_s);
			n = 0;
			if (!more)
				break;
			pid = sqlite3_column_int64(st, 0);
			site = sqlite3_column_int64(st, 1);
			free(exc);
			exc = xstrdup(e ? e : "?");
		}
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			r = xrealloc(r, alloc * sizeof(*r));
		}
		r[n++] = (struct retry){ sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4) };
	}
	sqlite3_finalize(st);
	free(exc);
	free(r);
	return arr;
}
