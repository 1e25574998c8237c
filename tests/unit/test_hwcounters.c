/* hardware counters in the report: cpu.counters from the counters table,
 * scaled when multiplexed, the memory-bound finding, and the reason given when
 * the machine has none. */
#include "stacks_fixture.h"
#include "analysis/analysis.h"

#include <math.h>

static void add_counters(struct fixture *fx, const char *const *events, const long long *values,
			 size_t n, long long enabled, long long running)
{
	recorder_schema(fx->rec, "CREATE TABLE IF NOT EXISTS counters(pid INTEGER, tid INTEGER,"
				 " event TEXT, value INTEGER, time_enabled_ns INTEGER,"
				 " time_running_ns INTEGER);");
	sqlite3_stmt *st;
	sqlite3_prepare_v2(recorder_db(fx->rec), "INSERT INTO counters VALUES(100,100,?,?,?,?)", -1,
			   &st, NULL);
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_text(st, 1, events[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, values[i]);
		sqlite3_bind_int64(st, 3, enabled);
		sqlite3_bind_int64(st, 4, running);
		recorder_step(fx->rec, st);
	}
	sqlite3_finalize(st);
}

static json_t *build(struct fixture *fx, double user_s)
{
	struct rusage_info ru = { .pid = 0, .user_s = user_s };
	record_rusage(fx->rec, &ru);
	fixture_reopen(fx);
	struct strbuf err = STRBUF_INIT;
	json_t *r = report_build(fx->db, &err);
	strbuf_release(&err);
	return r;
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *const events[] = { "cycles",	      "instructions", "cache-references",
				      "cache-misses", "branches",     "branch-misses" };

static json_t *find_title(json_t *r, const char *part)
{
	size_t i;
	json_t *f;
	json_array_foreach (json_object_get(r, "findings"), i, f)
		if (strstr(json_string_value(json_object_get(f, "title")), part))
			return f;
	return NULL;
}

static void multiplexed_counts_are_scaled(void)
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	const long long v[] = { 1000, 2500, 400, 20, 500, 5 };
	add_counters(&fx, events, v, 6, 300, 100); /* ran a third of the time */
	json_t *r = build(&fx, 0.9);
	json_t *c = json_object_get(json_object_get(r, "cpu"), "counters");
	CHECK(json_is_object(c));
	CHECK(num(c, "cycles") == 3000 && num(c, "instructions") == 7500);
	CHECK(fabs(num(c, "ipc") - 2.5) < 1e-9);
	CHECK(fabs(num(c, "cache_miss_rate") - 0.05) < 1e-9);
	CHECK(fabs(num(c, "branch_miss_rate") - 0.01) < 1e-9);
	CHECK(json_is_true(json_object_get(c, "multiplexed")));
	CHECK(!find_title(r, "waits for memory")); /* IPC 2.5: not memory-bound */
	json_decref(r);
	fixture_close(&fx);
}

static void low_ipc_and_misses_is_memory_bound(void)
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	const long long v[] = { 1000000, 300000, 10000, 4000, 50000, 100 };
	add_counters(&fx, events, v, 6, 100, 100);
	STACK(&fx, 40, "cpu", 1, "main", "chase_pointers");
	json_t *r = build(&fx, 0.9);
	json_t *f = find_title(r, "waits for memory");
	CHECK(f && strstr(json_string_value(json_object_get(f, "location")), "chase_pointers"));
	CHECK(f != NULL);
	CHECK(f && strstr(json_string_value(json_object_get(f, "evidence")), "IPC 0.30"));
	/* 0.9 s of CPU at IPC 0.3: 0.63 s at stake. */
	CHECK(f && fabs(num(json_object_get(f, "impact"), "seconds") - 0.63) < 1e-6);
	json_decref(r);
	fixture_close(&fx);
}

static void no_counters_gives_a_reason(void)
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	record_probe(fx.rec, "counters", "unavailable",
		     "this machine exposes no hardware counters to perf_event_open");
	json_t *r = build(&fx, 0.5);
	CHECK(json_is_null(json_object_get(json_object_get(r, "cpu"), "counters")));
	const char *why =
	    json_string_value(json_object_get(json_object_get(r, "not_measured"), "counters"));
	CHECK(why && strstr(why, "no hardware counters"));
	json_decref(r);
	fixture_close(&fx);
}

int main(void)
{
	TEST("multiplexed counts are scaled by time enabled over time running",
	     multiplexed_counts_are_scaled);
	TEST("IPC under 0.7 with a high cache miss rate gives a memory-bound finding",
	     low_ipc_and_misses_is_memory_bound);
	TEST("without hardware counters cpu.counters is null and not_measured says why",
	     no_counters_gives_a_reason);
	return fixture_done();
}
