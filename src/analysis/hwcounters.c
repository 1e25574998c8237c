/* hwcounters: hardware counter totals, per-thread counts, rates and the
 * memory-bound finding. */
#include "hwcounters.h"
#include "analysis.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const event_keys[][2] = {
	{ "cycles", "cycles" },
	{ "instructions", "instructions" },
	{ "cache-references", "cache_references" },
	{ "cache-misses", "cache_misses" },
	{ "branches", "branches" },
	{ "branch-misses", "branch_misses" },
};
#define NKEYS (sizeof(event_keys) / sizeof(event_keys[0]))

static void why_not(sqlite3 *db, struct strbuf *why)
{
	sqlite3_stmt *st;
	if (recording_has_table(db, "probes") &&
	    sqlite3_prepare_v2(db, "SELECT status, reason FROM probes WHERE name = 'counters'", -1,
			       &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			const char *status = (const char *)sqlite3_column_text(st, 0);
			const char *reason = (const char *)sqlite3_column_text(st, 1);
			if (status && !strcmp(status, "unavailable"))
				strbuf_addf(why, "hardware counters unavailable: %s",
					    reason ? reason : "no reason recorded");
			else if (status && !strcmp(status, "off"))
				strbuf_addf(why, "the counters probe was off (%s)",
					    reason ? reason : "not requested");
		}
		sqlite3_finalize(st);
	}
	char *events = recording_meta_text(db, "counters_events");
	if (!why->len && events && !strcmp(events, "software"))
		strbuf_addstr(why, "software events stood in for hardware counters "
				   "(SONDE_COUNTERS_EVENTS=software); see cpu.thread_counters");
	free(events);
	if (!why->len)
		strbuf_addstr(why, "no hardware counter was recorded in this run");
}

static json_t *rate(double part, double whole)
{
	return whole > 0 && part >= 0 ? json_real(part / whole) : json_null();
}

json_t *hwcounters_json(sqlite3 *db, struct strbuf *why)
{
	double v[NKEYS];
	int have[NKEYS] = { 0 }, multiplexed = 0, any = 0;
	sqlite3_stmt *st;
	if (!recording_has_table(db, "counters") ||
	    sqlite3_prepare_v2(
		db, "SELECT event, value, time_enabled_ns, time_running_ns FROM counters", -1, &st,
		NULL) != SQLITE_OK) {
		why_not(db, why);
		return NULL;
	}
	for (size_t k = 0; k < NKEYS; k++)
		v[k] = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *event = (const char *)sqlite3_column_text(st, 0);
		double value = sqlite3_column_double(st, 1);
		double enabled = sqlite3_column_double(st, 2),
		       running = sqlite3_column_double(st, 3);
		if (!event || value < 0 || running <= 0)
			continue; /* never scheduled on the PMU: nothing to scale */
		if (running < enabled) {
			value *= enabled / running;
			multiplexed = 1;
		}
		for (size_t k = 0; k < NKEYS; k++)
			if (!strcmp(event, event_keys[k][0])) {
				v[k] += value;
				have[k] = any = 1;
			}
	}
	sqlite3_finalize(st);
	if (!any) {
		why_not(db, why);
		return NULL;
	}
	json_t *c = json_object();
	for (size_t k = 0; k < NKEYS; k++)
		json_object_set_new(c, event_keys[k][1],
				    have[k] ? json_integer((json_int_t)llround(v[k]))
					    : json_null());
	json_object_set_new(c, "ipc", have[0] && have[1] ? rate(v[1], v[0]) : json_null());
	json_object_set_new(c, "cache_miss_rate",
			    have[2] && have[3] ? rate(v[3], v[2]) : json_null());
	json_object_set_new(c, "branch_miss_rate",
			    have[4] && have[5] ? rate(v[5], v[4]) : json_null());
	json_object_set_new(c, "multiplexed", json_boolean(multiplexed));
	return c;
}

void hwcounters_findings(struct analysis_ctx *ctx, json_t *counters, double cpu_s, double wall_s)
{
	json_t *ipc_j = json_object_get(counters, "ipc");
	json_t *miss_j = json_object_get(counters, "cache_miss_rate");
	if (!json_is_number(ipc_j) || !json_is_number(miss_j) || wall_s <= 0 || cpu_s <= 0)
		return;
	double ipc = json_number_value(ipc_j), miss = json_number_value(miss_j);
	if (ipc >= HWCOUNTERS_IPC_LOW || miss <= HWCOUNTERS_MISS_RATE_HIGH)
		return;
	/* Rough share of CPU time spent stalled, against one instruction per cycle. */
	double at_stake = cpu_s * (1.0 - ipc);
	if (at_stake > wall_s)
		at_stake = wall_s;
	struct strbuf ev = STRBUF_INIT;
	strbuf_addf(&ev,
		    "IPC %.2f (%.3g instructions over %.3g cycles); %.1f%% of cache references "
		    "miss (%.3g of %.3g); %.3f s of CPU time",
		    ipc, json_number_value(json_object_get(counters, "instructions")),
		    json_number_value(json_object_get(counters, "cycles")), 100.0 * miss,
		    json_number_value(json_object_get(counters, "cache_misses")),
		    json_number_value(json_object_get(counters, "cache_references")), cpu_s);
	/* Counters are per process: the hottest function is where to look first. */
	struct strbuf loc = STRBUF_INIT;
	json_t *top = json_array_get(json_object_get(ctx->report, "hotspots"), 0);
	const char *fn = json_string_value(json_object_get(top, "function"));
	if (fn)
		strbuf_addf(&loc, "the whole target; its top hotspot is %s (%.0f%% self)", fn,
			    json_number_value(json_object_get(top, "self_pct")));
	else
		strbuf_addstr(&loc,
			      "the whole target (counters are per process, not per function)");
	struct finding f = {
		.title = "The CPU mostly waits for memory (low IPC, many cache misses)",
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "Memory-bound: instructions stall on cache misses, so the cores "
			     "retire well under one instruction per cycle",
		.next_step =
		    "In the top hotspots, make memory access sequential and compact: "
		    "arrays of values instead of pointer-linked nodes, smaller element types, "
		    "loop tiling; `perf record -e cache-misses` shows which function misses",
		.validation = "cpu.counters.ipc rises and cpu.counters.cache_miss_rate falls",
		.impact_s = at_stake,
		.impact_bytes = -1,
		.impact_pct = 100.0 * at_stake / wall_s,
	};
	findings_add(ctx->findings, &f);
	strbuf_release(&ev);
	strbuf_release(&loc);
}

/* ---- per thread ---- */

struct thread_row {
	int64_t pid, tid;
	char *name;
	double v[HWCOUNTERS_MAX_EVENTS]; /* scaled; NAN: not counted */
	int multiplexed;
};

static int by_first_count(const void *a, const void *b)
{
	const struct thread_row *x = a, *y = b;
	double vx = isnan(x->v[0]) ? -1 : x->v[0], vy = isnan(y->v[0]) ? -1 : y->v[0];
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static json_t *key_or_null(const double *v, const char **names, size_t n, const char *a,
			   const char *b)
{
	double x = NAN, y = NAN;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(names[i], a))
			x = v[i];
		if (!strcmp(names[i], b))
			y = v[i];
	}
	return isnan(x) || isnan(y) ? json_null() : rate(x, y);
}

json_t *hwcounters_threads_json(sqlite3 *db, size_t max_rows, size_t *total)
{
	int64_t per_thread = 0;
	sqlite3_stmt *st;
	*total = 0;
	if (recording_meta_int(db, "counters_per_thread", &per_thread) || !per_thread ||
	    !recording_has_table(db, "counters") ||
	    sqlite3_prepare_v2(db,
			       "SELECT c.pid, c.tid, c.event, c.value, c.time_enabled_ns,"
			       " c.time_running_ns, (SELECT name FROM threads t WHERE"
			       " t.pid = c.pid AND t.tid = c.tid) FROM counters c"
			       " ORDER BY c.pid, c.tid",
			       -1, &st, NULL) != SQLITE_OK) {
		/* A recording without the stack tables has no threads table. */
		if (per_thread && recording_has_table(db, "counters") &&
		    sqlite3_prepare_v2(db,
				       "SELECT pid, tid, event, value, time_enabled_ns,"
				       " time_running_ns, NULL FROM counters ORDER BY pid, tid",
				       -1, &st, NULL) == SQLITE_OK)
			goto read;
		return NULL;
	}
read:;
	const char *names[HWCOUNTERS_MAX_EVENTS];
	char *owned[HWCOUNTERS_MAX_EVENTS];
	size_t nnames = 0, n = 0, alloc = 0;
	struct thread_row *rows = NULL;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		const char *event = (const char *)sqlite3_column_text(st, 2);
		double value = sqlite3_column_double(st, 3);
		double enabled = sqlite3_column_double(st, 4), running = sqlite3_column_double(st, 5);
		if (!event || value < 0)
			continue;
		int k = -1;
		for (size_t i = 0; i < nnames; i++)
			if (!strcmp(names[i], event))
				k = (int)i;
		if (k < 0 && nnames < HWCOUNTERS_MAX_EVENTS) {
			names[nnames] = owned[nnames] = strdup(event);
			k = (int)nnames++;
		}
		if (k < 0)
			continue;
		if (!n || rows[n - 1].pid != pid || rows[n - 1].tid != tid) {
			if (n == alloc) {
				alloc = alloc ? 2 * alloc : 64;
				rows = realloc(rows, alloc * sizeof(*rows));
			}
			struct thread_row *r = &rows[n++];
			memset(r, 0, sizeof(*r));
			r->pid = pid;
			r->tid = tid;
			const char *name = (const char *)sqlite3_column_text(st, 6);
			r->name = name ? strdup(name) : NULL;
			for (size_t i = 0; i < HWCOUNTERS_MAX_EVENTS; i++)
				r->v[i] = NAN;
		}
		struct thread_row *r = &rows[n - 1];
		if (running > 0 && running < enabled) {
			value *= enabled / running;
			r->multiplexed = 1;
		}
		r->v[k] = (isnan(r->v[k]) ? 0 : r->v[k]) + value;
	}
	sqlite3_finalize(st);
	if (!n) {
		for (size_t i = 0; i < nnames; i++)
			free(owned[i]);
		free(rows);
		return NULL;
	}
	qsort(rows, n, sizeof(*rows), by_first_count);
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		struct thread_row *r = &rows[i];
		if (i < max_rows) {
			json_t *t = json_object(), *counts = json_object();
			json_object_set_new(t, "pid", json_integer(r->pid));
			json_object_set_new(t, "tid", json_integer(r->tid));
			json_object_set_new(t, "name", r->name ? json_string(r->name) : json_null());
			for (size_t k = 0; k < nnames; k++)
				json_object_set_new(counts, names[k],
						    isnan(r->v[k]) ? json_null()
								   : json_integer((json_int_t)llround(r->v[k])));
			json_object_set_new(t, "counts", counts);
			json_object_set_new(t, "ipc",
					    key_or_null(r->v, names, nnames, "instructions", "cycles"));
			json_object_set_new(t, "cache_miss_rate",
					    key_or_null(r->v, names, nnames, "cache-misses",
							"cache-references"));
			json_object_set_new(t, "branch_miss_rate",
					    key_or_null(r->v, names, nnames, "branch-misses",
							"branches"));
			json_object_set_new(t, "multiplexed", json_boolean(r->multiplexed));
			json_array_append_new(out, t);
		}
		free(r->name);
	}
	*total = n;
	for (size_t i = 0; i < nnames; i++)
		free(owned[i]);
	free(rows);
	return out;
}
