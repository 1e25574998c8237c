/* coverage: report.json `coverage` sets the cpu samples x period against the
 * CPU time the kernel accounted per process, and notes below 80% how much was
 * missed and why. */
#include "check.h"
#include "stacks_fixture.h"

/* A process (pid 100, the fixture's samples' pid) with user_s + sys_s of CPU. */
static void add_process(struct fixture *fx, double user_s, double sys_s)
{
	struct process_info pi = { .pid = 100, .ppid = 1, .start_ns = 0, .end_ns = -1,
				   .command = "work", .is_leader = 1, .exit_code = -1 };
	record_process(fx->rec, &pi);
	recorder_schema(fx->rec, "CREATE TABLE IF NOT EXISTS proc_samples(t_ns INTEGER, pid INTEGER,"
				 " user_ns INTEGER, sys_ns INTEGER, rss_bytes INTEGER, hwm_bytes INTEGER,"
				 " threads INTEGER, minflt INTEGER, majflt INTEGER, vcsw INTEGER,"
				 " ivcsw INTEGER, runq_wait_ns INTEGER, rchar INTEGER, wchar INTEGER,"
				 " read_bytes INTEGER, write_bytes INTEGER, state TEXT);");
	sqlite3_stmt *st;
	sqlite3_prepare_v2(recorder_db(fx->rec),
			   "INSERT INTO proc_samples(t_ns, pid, user_ns, sys_ns) VALUES(?,100,?,?)",
			   -1, &st, NULL);
	sqlite3_bind_int64(st, 1, 1000000000);
	sqlite3_bind_int64(st, 2, (int64_t)(user_s * 1e9));
	sqlite3_bind_int64(st, 3, (int64_t)(sys_s * 1e9));
	recorder_step(fx->rec, st);
	sqlite3_finalize(st);
}

/* What the cpu probe records of a 100 Hz cpu-clock run with kernel frames. */
static void cpu_meta(struct fixture *fx, const char *sampling, int64_t samples)
{
	record_meta_int(fx->rec, "cpu_rate_hz", 100);
	record_meta(fx->rec, "cpu_event", "cpu-clock");
	record_meta(fx->rec, "cpu_sampling", sampling);
	record_meta_int(fx->rec, "cpu_kernel_frames", 1);
	record_meta_int(fx->rec, "cpu_samples", samples);
}

TEST(covered_run_has_no_note,
     "samples x period against the kernel's CPU time, per process; no note at 97%")
{
	struct fixture fx;
	fixture_open(&fx, 3000000000LL);
	cpu_meta(&fx, "per-cpu", 195);
	add_process(&fx, 1.5, 0.5);
	STACK(&fx, 195, "cpu", 1, "main", "work");
	json_t *r = fixture_report(&fx);
	json_t *c = json_object_get(r, "coverage");
	CHECK(c != NULL);
	CHECK(fabs(fixture_num(c, "sampled_cpu_s") - 1.95) < 1e-9);
	CHECK(fabs(fixture_num(c, "cpu_s") - 2.0) < 1e-6);
	CHECK(fabs(fixture_num(c, "coverage_pct") - 97.5) < 1e-3);
	CHECK(json_object_get(c, "note") == NULL);
	json_t *p = json_array_get(json_object_get(c, "processes"), 0);
	CHECK(p && fixture_num(p, "pid") == 100 && fixture_num(p, "samples") == 195);
	json_decref(r);
	fixture_close(&fx);
}

TEST(low_coverage_says_how_much_and_why,
     "below 80% the note says how many seconds were missed and why (lost, per task)")
{
	struct fixture fx;
	fixture_open(&fx, 3000000000LL);
	cpu_meta(&fx, "per-task", 50);
	record_meta_int(fx.rec, "cpu_lost_records", 120);
	add_process(&fx, 2.0, 0.0);
	STACK(&fx, 50, "cpu", 1, "main", "work");
	json_t *r = fixture_report(&fx);
	json_t *c = json_object_get(r, "coverage");
	const char *note = json_string_value(json_object_get(c, "note"));
	CHECK(fabs(fixture_num(c, "coverage_pct") - 25.0) < 1e-3);
	CHECK(fixture_num(c, "lost_records") == 120);
	CHECK(note && strstr(note, "1.50 s were missed"));
	CHECK(note && strstr(note, "120 records were lost"));
	CHECK(note && strstr(note, "per task"));
	CHECK(note && !strstr(note, "ends early"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(killed_recording_is_named, "a recording without the stop-time counts says it ends early")
{
	struct fixture fx;
	fixture_open(&fx, 3000000000LL);
	record_meta_int(fx.rec, "cpu_rate_hz", 100);
	record_meta(fx.rec, "cpu_sampling", "per-cpu");
	add_process(&fx, 2.0, 0.0);
	STACK(&fx, 100, "cpu", 1, "main", "work");
	json_t *r = fixture_report(&fx);
	const char *note =
		json_string_value(json_object_get(json_object_get(r, "coverage"), "note"));
	CHECK(note && strstr(note, "ends early"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(user_time_only_without_kernel_frames, "without kernel frames only user time is counted")
{
	struct fixture fx;
	fixture_open(&fx, 3000000000LL);
	record_meta_int(fx.rec, "cpu_rate_hz", 100);
	record_meta_int(fx.rec, "cpu_kernel_frames", 0);
	record_meta_int(fx.rec, "cpu_samples", 100);
	add_process(&fx, 1.0, 1.0);
	STACK(&fx, 100, "cpu", 1, "main", "work");
	json_t *r = fixture_report(&fx);
	json_t *c = json_object_get(r, "coverage");
	CHECK(fabs(fixture_num(c, "cpu_s") - 1.0) < 1e-6);
	CHECK(json_is_false(json_object_get(c, "kernel_time_sampled")));
	CHECK(json_object_get(c, "note") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

TEST(events_other_than_time_get_no_coverage, "--event counting misses gets no coverage")
{
	struct fixture fx;
	fixture_open(&fx, 3000000000LL);
	record_meta_int(fx.rec, "cpu_rate_hz", 100);
	record_meta(fx.rec, "cpu_event", "cache-misses");
	add_process(&fx, 1.0, 0.0);
	STACK(&fx, 10, "cpu", 1, "main", "work");
	json_t *r = fixture_report(&fx);
	CHECK(json_object_get(r, "coverage") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

CHECK_MAIN()
