/* hardware counters in the report: cpu.counters from the counters table,
 * scaled when multiplexed, the memory-bound finding, and the reason given when
 * the machine has none; per-thread counts (cpu.thread_counters); per-function
 * IPC and misses from the counts read with the cpu samples (sample_counters)
 * and the memory-bound hot function finding. */
#include "analysis/analysis.h"
#include "check.h"
#include "stacks_fixture.h"

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

/* A finding's own estimate of the seconds at stake, before findings that
 * overlap in time were shared out (impact.unscaled_seconds). */
static double stake_s(json_t *f)
{
	json_t *imp = json_object_get(f, "impact");
	json_t *raw = json_object_get(imp, "unscaled_seconds");
	return json_number_value(raw ? raw : json_object_get(imp, "seconds"));
}

static json_t *find_title(json_t *r, const char *part)
{
	size_t i;
	json_t *f;
	json_array_foreach (json_object_get(r, "findings"), i, f)
		if (strstr(json_string_value(json_object_get(f, "title")), part))
			return f;
	return NULL;
}

TEST(multiplexed_counts_are_scaled,
     "multiplexed counts are scaled by time enabled over time running")
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

TEST(low_ipc_and_misses_is_memory_bound,
     "IPC under 0.7 with a high cache miss rate gives a memory-bound finding")
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
	/* 0.9 s of CPU at IPC 0.3: 0.63 s at stake by its own estimate (shared out
	 * with the hotspot finding's, which claims the same CPU time). */
	CHECK(f && fabs(stake_s(f) - 0.63) < 1e-6);
	json_decref(r);
	fixture_close(&fx);
}

TEST(no_counters_gives_a_reason,
     "without hardware counters cpu.counters is null and not_measured says why")
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

static void add_thread(struct fixture *fx, int pid, int tid, const char *event, long long value,
		       long long enabled, long long running)
{
	recorder_schema(fx->rec, "CREATE TABLE IF NOT EXISTS counters(pid INTEGER, tid INTEGER,"
				 " event TEXT, value INTEGER, time_enabled_ns INTEGER,"
				 " time_running_ns INTEGER);");
	sqlite3_stmt *st;
	sqlite3_prepare_v2(recorder_db(fx->rec), "INSERT INTO counters VALUES(?,?,?,?,?,?)", -1,
			   &st, NULL);
	sqlite3_bind_int(st, 1, pid);
	sqlite3_bind_int(st, 2, tid);
	sqlite3_bind_text(st, 3, event, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, value);
	sqlite3_bind_int64(st, 5, enabled);
	sqlite3_bind_int64(st, 6, running);
	recorder_step(fx->rec, st);
	sqlite3_finalize(st);
}

static json_t *thread_row(json_t *r, int tid)
{
	size_t i;
	json_t *t;
	json_array_foreach (json_object_get(json_object_get(r, "cpu"), "thread_counters"), i, t)
		if (json_integer_value(json_object_get(t, "tid")) == tid)
			return t;
	return NULL;
}

TEST(threads_are_reported_one_by_one,
     "per-thread rows are reported one by one, scaled, busiest first")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	record_meta_int(fx.rec, "counters_per_thread", 1);
	add_thread(&fx, 100, 100, "cycles", 1000, 10, 10);
	add_thread(&fx, 100, 100, "instructions", 2000, 10, 10);
	add_thread(&fx, 100, 101, "cycles", 4000, 30, 10); /* multiplexed: x3 */
	add_thread(&fx, 100, 101, "instructions", 2000, 10, 10);
	add_thread(&fx, 100, 101, "cache-references", 100, 10, 10);
	add_thread(&fx, 100, 101, "cache-misses", 40, 10, 10);
	json_t *r = build(&fx, 0.9);
	json_t *cpu = json_object_get(r, "cpu");
	json_t *main_t = thread_row(r, 100), *worker = thread_row(r, 101);
	CHECK(json_array_size(json_object_get(cpu, "thread_counters")) == 2);
	CHECK(json_integer_value(json_object_get(cpu, "thread_counters_total")) == 2);
	CHECK(main_t && worker);
	/* The busiest thread (most cycles, scaled) comes first. */
	CHECK(json_array_get(json_object_get(cpu, "thread_counters"), 0) == worker);
	CHECK(worker && num(json_object_get(worker, "counts"), "cycles") == 12000);
	CHECK(worker && fabs(num(worker, "ipc") - 2000.0 / 12000) < 1e-9);
	CHECK(worker && fabs(num(worker, "cache_miss_rate") - 0.4) < 1e-9);
	CHECK(worker && json_is_true(json_object_get(worker, "multiplexed")));
	CHECK(main_t && fabs(num(main_t, "ipc") - 2.0) < 1e-9);
	CHECK(main_t && json_is_null(json_object_get(main_t, "cache_miss_rate")));
	/* The whole target sums the threads. */
	json_t *c = json_object_get(cpu, "counters");
	CHECK(num(c, "cycles") == 13000 && num(c, "instructions") == 4000);
	json_decref(r);
	fixture_close(&fx);
}

TEST(per_process_rows_are_not_threads,
     "rows of an older recording (per process) are not listed as threads")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	const long long v[] = { 1000, 2500, 400, 20, 500, 5 };
	add_counters(&fx, events, v, 6, 100, 100); /* an older recording: no counters_per_thread */
	json_t *r = build(&fx, 0.9);
	json_t *cpu = json_object_get(r, "cpu");
	CHECK(json_is_object(json_object_get(cpu, "counters")));
	CHECK(!json_object_get(cpu, "thread_counters"));
	json_decref(r);
	fixture_close(&fx);
}

/* Charges counts read with samples to the stack whose leaf is `leaf`. */
static void add_sample_counts(struct fixture *fx, const char *leaf, long long cycles,
			      long long instructions, long long misses, long long samples)
{
	sqlite3 *db = recorder_db(fx->rec);
	sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS sample_counters(node INTEGER, event TEXT,"
			 " value INTEGER, samples INTEGER)",
		     NULL, NULL, NULL);
	sqlite3_stmt *q, *ins;
	sqlite3_prepare_v2(db, "SELECT n.id FROM stack_nodes n JOIN frames f ON f.id = n.frame"
			       " WHERE f.function = ?",
			   -1, &q, NULL);
	sqlite3_bind_text(q, 1, leaf, -1, SQLITE_STATIC);
	int64_t node = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
	sqlite3_finalize(q);
	sqlite3_prepare_v2(db, "INSERT INTO sample_counters VALUES(?,?,?,?)", -1, &ins, NULL);
	const char *names[] = { "cycles", "instructions", "cache-misses" };
	const long long values[] = { cycles, instructions, misses };
	for (int k = 0; k < 3; k++) {
		sqlite3_bind_int64(ins, 1, node);
		sqlite3_bind_text(ins, 2, names[k], -1, SQLITE_STATIC);
		sqlite3_bind_int64(ins, 3, values[k]);
		sqlite3_bind_int64(ins, 4, samples);
		recorder_step(fx->rec, ins);
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
}

static json_t *hotspot(json_t *r, const char *fn)
{
	size_t i;
	json_t *h;
	json_array_foreach (json_object_get(r, "hotspots"), i, h)
		if (!strcmp(json_string_value(json_object_get(h, "function")), fn))
			return h;
	return NULL;
}

static json_t *tree_path(json_t *r, const char *last, const char *before)
{
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(r, "call_tree"), i, c) {
		json_t *p = json_object_get(c, "path");
		size_t n = json_array_size(p);
		if (n >= 2 && !strcmp(json_string_value(json_array_get(p, n - 1)), last) &&
		    !strcmp(json_string_value(json_array_get(p, n - 2)), before))
			return c;
	}
	return NULL;
}

/* A walk through a shuffled index (low IPC, many misses) and a hash loop. */
static json_t *walk_and_hash(struct fixture *fx, long long hash_cycles, long long hash_instr,
			     long long hash_misses)
{
	STACK(fx, 60, "cpu", 1, "main", "shuffled_walk", "walk@20");
	STACK(fx, 40, "cpu", 1, "main", "hash@30");
	add_sample_counts(fx, "walk", 6000000, 1800000, 60000, 60);
	add_sample_counts(fx, "hash", hash_cycles, hash_instr, hash_misses, 40);
	/* The whole program: IPC 0.5, 17.5% misses, memory-bound as a whole too. */
	const long long v[] = { 10000000, 5000000, 400000, 70000, 500, 5 };
	add_counters(fx, events, v, 6, 100, 100);
	return build(fx, 1.0);
}

TEST(hotspots_carry_ipc_and_misses,
     "hotspots and call paths carry IPC and misses per 1000 instructions from their samples")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	json_t *r = walk_and_hash(&fx, 4000000, 8200000, 10000);
	json_t *walk = hotspot(r, "walk"), *hash = hotspot(r, "hash");
	CHECK(walk && fabs(num(walk, "ipc") - 0.3) < 1e-9);
	CHECK(walk && fabs(num(walk, "cache_misses_per_kinstr") - 1000.0 * 60000 / 1800000) < 1e-9);
	CHECK(walk && num(json_object_get(walk, "counters"), "cycles") == 6000000);
	CHECK(hash && fabs(num(hash, "ipc") - 2.05) < 1e-9);
	json_t *src = json_object_get(r, "hotspots_source");
	CHECK(fabs(num(src, "ipc") - 10000000.0 / 10000000) < 1e-9);
	CHECK(json_array_size(json_object_get(src, "counters")) == 3);
	/* The call path main -> shuffled_walk carries the walk's counts. */
	json_t *path = tree_path(r, "shuffled_walk", "main");
	CHECK(path && fabs(num(path, "ipc") - 0.3) < 1e-9);
	json_decref(r);
	fixture_close(&fx);
}

TEST(memory_bound_hot_function_is_named,
     "a hot function with low IPC and many misses gets the memory-bound finding, by name")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	json_t *r = walk_and_hash(&fx, 4000000, 8200000, 10000);
	json_t *f = find_title(r, "walk waits for memory");
	CHECK(f != NULL);
	CHECK(f && !strcmp(json_string_value(json_object_get(f, "location")), "work.c:walk:20"));
	CHECK(f && strstr(json_string_value(json_object_get(f, "evidence")), "IPC 0.30"));
	/* 60% of 1 s at IPC 0.3 against 1.0: 0.42 s at stake. */
	CHECK(f && fabs(num(json_object_get(f, "impact"), "seconds") - 0.42) < 1e-6);
	CHECK(json_is_true(json_object_get(hotspot(r, "walk"), "memory_bound")));
	CHECK(!find_title(r, "hash waits"));
	/* The whole-program reading names no more than the function's finding. */
	CHECK(!find_title(r, "The CPU mostly waits for memory"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(time_at_stake_is_sampled_cpu_time,
     "with the sampling rate, the time at stake is the function's sampled CPU time")
{
	struct fixture fx;
	fixture_open(&fx, 4000000000);
	record_meta_int(fx.rec, "cpu_rate_hz", 100);
	json_t *r = walk_and_hash(&fx, 4000000, 8200000, 10000);
	json_t *f = find_title(r, "walk waits for memory");
	/* 60 samples at 100 Hz: 0.6 s of CPU time, 0.42 s of it lost to the stalls. */
	CHECK(f && fabs(num(json_object_get(f, "impact"), "seconds") - 0.42) < 1e-6);
	CHECK(f && fabs(num(json_object_get(f, "impact"), "share_pct") - 10.5) < 1e-6);
	json_decref(r);
	fixture_close(&fx);
}

TEST(fast_functions_are_not_memory_bound,
     "a function whose IPC is close to the program's is not memory-bound")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	/* The walk's IPC (0.3) is close to the program's when hash is as slow. */
	json_t *r = walk_and_hash(&fx, 4000000, 1000000, 100);
	CHECK(hotspot(r, "walk") && !isnan(num(hotspot(r, "walk"), "ipc")));
	CHECK(!find_title(r, "walk waits for memory"));
	json_decref(r);
	fixture_close(&fx);
}

CHECK_MAIN()
