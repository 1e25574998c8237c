/* hwcounters: hardware counter totals, per-thread counts, rates and the
 * memory-bound finding. */
#include "hwcounters.h"
#include "analysis.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdio.h>
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
	size_t i;
	json_t *h;
	json_array_foreach (json_object_get(ctx->report, "hotspots"), i, h)
		if (json_is_true(json_object_get(h, "memory_bound")))
			return; /* the function's own finding says it more precisely */
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
		.id = "cpu.memory_bound",
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
	};
	findings_add_time(ctx->findings, &f, at_stake, wall_s);
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
	/* A recording without the stack tables has no threads table: no names. */
	const char *sql = recording_has_table(db, "threads")
				  ? "SELECT c.pid, c.tid, c.event, c.value, c.time_enabled_ns,"
				    " c.time_running_ns, (SELECT name FROM threads t WHERE"
				    " t.pid = c.pid AND t.tid = c.tid) FROM counters c"
				    " ORDER BY c.pid, c.tid, c.rowid"
				  : "SELECT pid, tid, event, value, time_enabled_ns, time_running_ns,"
				    " NULL FROM counters ORDER BY pid, tid, rowid";
	if (recording_meta_int(db, "counters_per_thread", &per_thread) || !per_thread ||
	    !recording_has_table(db, "counters") ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
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

/* ---- per function: the counts read with each cpu sample ---- */

/* Sums by event of the counts charged to some stacks. */
struct func_counts {
	double v[HWCOUNTERS_MAX_EVENTS];
	int64_t samples;
};

struct sample_counters {
	const char *events[HWCOUNTERS_MAX_EVENTS]; /* owned */
	size_t nevents;
	struct hashmap index; /* key string -> index in v */
	struct func_counts *v;
	size_t n, alloc;
	struct func_counts all;
};

static int sc_event(struct sample_counters *sc, const char *event)
{
	for (size_t i = 0; i < sc->nevents; i++)
		if (!strcmp(sc->events[i], event))
			return (int)i;
	if (sc->nevents == HWCOUNTERS_MAX_EVENTS)
		return -1;
	sc->events[sc->nevents] = strdup(event);
	return (int)sc->nevents++;
}

static void sc_add(struct sample_counters *sc, const struct strbuf *key, int k, double value,
		   int64_t samples)
{
	int64_t *at = hashmap_get(&sc->index, key->buf, key->len);
	if (!at) {
		if (sc->n == sc->alloc) {
			sc->alloc = sc->alloc ? 2 * sc->alloc : 64;
			sc->v = xrealloc(sc->v, sc->alloc * sizeof(*sc->v));
		}
		memset(&sc->v[sc->n], 0, sizeof(sc->v[0]));
		at = hashmap_put(&sc->index, key->buf, key->len, (int64_t)sc->n++);
	}
	sc->v[*at].v[k] += value;
	if (k == 0)
		sc->v[*at].samples += samples;
}

static void sc_release(struct sample_counters *sc)
{
	for (size_t i = 0; i < sc->nevents; i++)
		free((char *)sc->events[i]);
	hashmap_release(&sc->index);
	free(sc->v);
}

/* Keys: "F\x1f" + function, file, module of the leaf (self); "P\x1f" + the
 * function names from the outermost frame in, for each prefix of the stack. */
static void key_func(struct strbuf *key, const char *fn, const char *file, const char *module)
{
	strbuf_reset(key);
	strbuf_addf(key, "F\x1f%s\x1f%s\x1f%s", fn ? fn : "", file ? file : "",
		    module ? module : "");
}

/* Loads table sample_counters by leaf function and by call path. -1 when
 * the recording has none. */
static int sc_load(sqlite3 *db, struct sample_counters *sc)
{
	sqlite3_stmt *rows = NULL, *up = NULL;
	int rc = -1;
	memset(sc, 0, sizeof(*sc));
	if (!recording_has_table(db, "sample_counters") ||
	    sqlite3_prepare_v2(db,
			       "SELECT node, event, SUM(value), SUM(samples) FROM sample_counters"
			       " GROUP BY node, event ORDER BY node, event",
			       -1, &rows, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "SELECT n.parent, f.function, f.file, f.module FROM stack_nodes n"
			       " LEFT JOIN frames f ON f.id = n.frame WHERE n.id = ?",
			       -1, &up, NULL) != SQLITE_OK)
		goto out;
	struct strbuf key = STRBUF_INIT, leaf = STRBUF_INIT;
	char **names = xmalloc(STACK_PATH_MAX * sizeof(*names));
	size_t depth = 0;
	int64_t cur_node = -1;
	while (sqlite3_step(rows) == SQLITE_ROW) {
		const char *event = (const char *)sqlite3_column_text(rows, 1);
		int k = event ? sc_event(sc, event) : -1;
		int64_t node = sqlite3_column_int64(rows, 0), samples = sqlite3_column_int64(rows, 3);
		double value = sqlite3_column_double(rows, 2);
		if (k < 0 || value < 0)
			continue;
		sc->all.v[k] += value;
		if (k == 0)
			sc->all.samples += samples;
		/* The stack, innermost first (read once per node: rows come by node). */
		if (node != cur_node) {
			for (size_t i = 0; i < depth; i++)
				free(names[i]);
			depth = 0;
			strbuf_reset(&leaf);
			cur_node = node;
			for (int64_t id = node; id > 0 && depth < STACK_PATH_MAX; depth++) {
				sqlite3_reset(up);
				sqlite3_bind_int64(up, 1, id);
				if (sqlite3_step(up) != SQLITE_ROW)
					break;
				const char *fn = (const char *)sqlite3_column_text(up, 1);
				names[depth] = strdup(fn ? fn : "[unknown]");
				if (depth == 0)
					key_func(&leaf, names[0],
						 (const char *)sqlite3_column_text(up, 2),
						 (const char *)sqlite3_column_text(up, 3));
				id = sqlite3_column_int64(up, 0);
			}
		}
		if (leaf.len)
			sc_add(sc, &leaf, k, value, samples);
		/* Every prefix of the path, from the outermost frame in. */
		strbuf_reset(&key);
		strbuf_addstr(&key, "P");
		for (size_t i = depth; i-- > 0;) {
			strbuf_addf(&key, "\x1f%s", names[i]);
			sc_add(sc, &key, k, value, samples);
		}
	}
	for (size_t i = 0; i < depth; i++)
		free(names[i]);
	strbuf_release(&leaf);
	free(names);
	strbuf_release(&key);
	rc = sc->nevents ? 0 : -1;
out:
	sqlite3_finalize(rows);
	sqlite3_finalize(up);
	if (rc)
		sc_release(sc);
	return rc;
}

static double sc_get(const struct sample_counters *sc, const struct func_counts *c,
		     const char *event)
{
	for (size_t i = 0; i < sc->nevents; i++)
		if (!strcmp(sc->events[i], event))
			return c->v[i];
	return NAN;
}

static double fc_ipc(const struct sample_counters *sc, const struct func_counts *c)
{
	double cyc = sc_get(sc, c, "cycles"), ins = sc_get(sc, c, "instructions");
	return cyc > 0 && ins >= 0 ? ins / cyc : NAN;
}

static double fc_mpki(const struct sample_counters *sc, const struct func_counts *c)
{
	double miss = sc_get(sc, c, "cache-misses"), ins = sc_get(sc, c, "instructions");
	return ins > 0 && miss >= 0 ? 1000.0 * miss / ins : NAN;
}

/* ipc, cache_misses_per_kinstr and counters {event: count} on o. */
static void annotate(json_t *o, const struct sample_counters *sc, const struct func_counts *c)
{
	json_t *counts = json_object();
	for (size_t i = 0; i < sc->nevents; i++)
		json_object_set_new(counts, sc->events[i], json_integer((json_int_t)llround(c->v[i])));
	json_object_set_new(o, "counters", counts);
	double ipc = fc_ipc(sc, c), mpki = fc_mpki(sc, c);
	json_object_set_new(o, "ipc", isnan(ipc) ? json_null() : json_real(ipc));
	json_object_set_new(o, "cache_misses_per_kinstr",
			    isnan(mpki) ? json_null() : json_real(mpki));
}

static const struct func_counts *sc_find(const struct sample_counters *sc, const struct strbuf *key)
{
	int64_t *at = hashmap_get(&sc->index, key->buf, key->len);
	return at ? &sc->v[*at] : NULL;
}

static void memory_bound_function(struct analysis_ctx *ctx, json_t *h,
				  const struct sample_counters *sc, const struct func_counts *c)
{
	double self_pct = json_number_value(json_object_get(h, "self_pct"));
	double ipc = fc_ipc(sc, c), mpki = fc_mpki(sc, c), all_ipc = fc_ipc(sc, &sc->all);
	double wall_s = report_wall_s(ctx->db);
	if (isnan(ipc) || isnan(mpki) || isnan(all_ipc) || wall_s <= 0 ||
	    self_pct < HWCOUNTERS_FUNC_SELF_PCT || c->samples < HWCOUNTERS_FUNC_MIN_SAMPLES ||
	    ipc > HWCOUNTERS_FUNC_IPC_RATIO * all_ipc || mpki < HWCOUNTERS_FUNC_MPKI_HIGH)
		return;
	const char *fn = json_string_value(json_object_get(h, "function"));
	const char *file = json_string_value(json_object_get(h, "file"));
	const char *module = json_string_value(json_object_get(h, "module"));
	json_t *line = json_object_get(h, "line");
	/* Time the function would save at the program's IPC: its sampled CPU time. */
	double self_s = report_sampled_s(ctx->db, "cpu_rate_hz",
					 json_number_value(json_object_get(h, "samples")), self_pct);
	double at_stake = self_s * (1.0 - ipc / all_ipc);
	struct strbuf title = STRBUF_INIT, loc = STRBUF_INIT, ev = STRBUF_INIT;
	strbuf_addf(&title, "%s waits for memory: IPC %.2f against %.2f for the program", fn, ipc,
		    all_ipc);
	strbuf_addf(&loc, "%s%s%s", file ? file : module ? module : "", file || module ? ":" : "",
		    fn);
	if (json_is_integer(line))
		strbuf_addf(&loc, ":%lld", (long long)json_integer_value(line));
	strbuf_addf(&ev,
		    "%s: self %.1f%% of the samples; in its samples IPC %.2f (%.3g instructions "
		    "over %.3g cycles) against %.2f for all samples; %.1f cache misses per 1000 "
		    "instructions (%.3g misses) against %.1f for all samples",
		    fn, self_pct, ipc, sc_get(sc, c, "instructions"), sc_get(sc, c, "cycles"),
		    all_ipc, mpki, sc_get(sc, c, "cache-misses"), fc_mpki(sc, &sc->all));
	struct finding f = {
		.title = title.buf,
		.id = "cpu.memory_bound_function",
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "Memory-bound hot function: its loads miss the caches, so the core "
			     "stalls and retires far fewer instructions per cycle than the rest "
			     "of the program",
		.next_step = "Make its memory access sequential and compact: visit data in the "
			     "order it is laid out (sort the indices, or lay the data out in the "
			     "order it is visited), use arrays of values instead of pointer-linked "
			     "nodes and smaller element types, and tile loops over large arrays",
		.validation = "its hotspots[].ipc rises, hotspots[].cache_misses_per_kinstr and "
			      "its self_pct fall",
		.blames_code = FINDING_BLAMES_CODE,
	};
	findings_add_time(ctx->findings, &f, at_stake, wall_s);
	json_object_set_new(h, "memory_bound", json_true());
	strbuf_release(&title);
	strbuf_release(&loc);
	strbuf_release(&ev);
}

void hwcounters_functions(struct analysis_ctx *ctx)
{
	struct sample_counters sc;
	json_t *meta = json_object_get(ctx->report, "hotspots_source");
	const char *source = json_string_value(json_object_get(meta, "source"));
	if (!source || strcmp(source, "cpu") || sc_load(ctx->db, &sc))
		return;
	json_t *events = json_array(), *o;
	for (size_t i = 0; i < sc.nevents; i++)
		json_array_append_new(events, json_string(sc.events[i]));
	json_object_set_new(meta, "counters", events);
	double ipc = fc_ipc(&sc, &sc.all), mpki = fc_mpki(&sc, &sc.all);
	json_object_set_new(meta, "ipc", isnan(ipc) ? json_null() : json_real(ipc));
	json_object_set_new(meta, "cache_misses_per_kinstr",
			    isnan(mpki) ? json_null() : json_real(mpki));
	struct strbuf key = STRBUF_INIT;
	size_t i;
	json_array_foreach (json_object_get(ctx->report, "hotspots"), i, o) {
		key_func(&key, json_string_value(json_object_get(o, "function")),
			 json_string_value(json_object_get(o, "file")),
			 json_string_value(json_object_get(o, "module")));
		const struct func_counts *c = sc_find(&sc, &key);
		if (!c)
			continue;
		annotate(o, &sc, c);
		if (i < HWCOUNTERS_FUNC_RANKS)
			memory_bound_function(ctx, o, &sc, c);
	}
	json_array_foreach (json_object_get(ctx->report, "call_tree"), i, o) {
		size_t k;
		json_t *name;
		strbuf_reset(&key);
		strbuf_addstr(&key, "P");
		json_array_foreach (json_object_get(o, "path"), k, name)
			strbuf_addf(&key, "\x1f%s", json_is_string(name) ? json_string_value(name)
									 : "[unknown]");
		const struct func_counts *c = sc_find(&sc, &key);
		if (c)
			annotate(o, &sc, c);
	}
	strbuf_release(&key);
	sc_release(&sc);
}
