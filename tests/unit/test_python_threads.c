/* python_threads: per-thread on-CPU, GIL and idle shares, the GIL contention
 * estimate from sampled moments, the idle-thread finding, and --mode choosing
 * which python samples the stack views count; on hand-made recordings. */
#include "analysis/analysis.h"
#include "check.h"
#include "stacks_fixture.h"

#include <math.h>

#define MS 1000000LL

/* One python sample of pid/tid at t_ns; frames outermost first, each
 * "function" or "function|file" (file defaults to w.py). */
static void py_sample(struct fixture *fx, int pid, int tid, int64_t t_ns, int on_cpu, int gil,
		      const char *const *names, size_t n)
{
	struct stack_writer *sw = recorder_stacks(fx->rec);
	int64_t ids[16];
	for (size_t i = 0; i < n && i < 16; i++) {
		char fn[128];
		snprintf(fn, sizeof(fn), "%s", names[i]);
		char *bar = strchr(fn, '|');
		if (bar)
			*bar = '\0';
		struct frame_info fi = { .function = fn, .file = bar ? bar + 1 : "w.py", .line = 7,
					 .module = bar ? bar + 1 : "w.py", .kind = "python" };
		ids[i] = stack_frame(sw, &fi);
	}
	struct sample_info si = { .t_ns = t_ns, .pid = pid, .tid = tid,
				  .node = stack_intern(sw, ids, n < 16 ? n : 16),
				  .source = "python", .weight = 1, .on_cpu = on_cpu, .gil = gil };
	stack_sample(sw, &si);
}

#define PY(fx, pid, tid, t, on_cpu, gil, ...)                                              \
	do {                                                                               \
		const char *const names_[] = { __VA_ARGS__ };                              \
		py_sample(fx, pid, tid, t, on_cpu, gil, names_,                            \
			  sizeof(names_) / sizeof(names_[0]));                             \
	} while (0)

static json_t *build(struct fixture *fx)
{
	struct strbuf err = STRBUF_INIT;
	fixture_reopen(fx);
	json_t *r = report_build(fx->db, &err);
	strbuf_release(&err);
	return r;
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *finding(json_t *r, const char *word)
{
	size_t i;
	json_t *f;
	json_array_foreach (json_object_get(r, "findings"), i, f)
		if (strstr(json_string_value(json_object_get(f, "title")), word))
			return f;
	return NULL;
}

static json_t *thread(json_t *r, int tid)
{
	size_t i;
	json_t *t;
	json_array_foreach (json_object_get(json_object_get(r, "python"), "threads"), i, t)
		if (num(t, "tid") == tid)
			return t;
	return NULL;
}

/* 100 ticks at 100 Hz: 101 and 102 take turns holding the GIL on the CPU;
 * the other one is on the CPU without it in the first `wanting` ticks (the
 * samples of a tick a few microseconds apart, as a real tick reads threads
 * one after the other); 100 (main) waits in join. */
static void gil_run(struct fixture *fx, int wanting)
{
	fixture_open(fx, 1000 * MS);
	record_meta_int(fx->rec, "python_rate_hz", 100);
	for (int k = 0; k < 100; k++) {
		int64_t t = k * 10 * MS;
		int a = k % 2 == 0;
		PY(fx, 100, 100, t, 0, 0, "<module>", "Thread.join|/usr/lib/threading.py");
		PY(fx, 100, 101, t + 3000, a || k < wanting, a, "Thread.run", "crunch");
		PY(fx, 100, 102, t + 6000, !a || k < wanting, !a, "Thread.run", "crunch");
	}
}

TEST(contention_counts_ticks_where_another_thread_wants_the_gil,
     "GIL contention counts the ticks where a thread on the CPU without the GIL waits while "
     "another holds it")
{
	struct fixture fx;
	gil_run(&fx, 60);
	json_t *r = build(&fx);
	json_t *gil = json_object_get(json_object_get(r, "python"), "gil");
	CHECK(fabs(num(gil, "contention_pct") - 60) < 1e-9);
	CHECK(fabs(num(gil, "held_pct") - 100) < 1e-9);
	CHECK(num(gil, "ticks") == 100);
	CHECK(fabs(num(thread(r, 102), "on_cpu_pct") - 80) < 1e-9);
	CHECK(fabs(num(thread(r, 102), "idle_pct") - 20) < 1e-9);
	CHECK(fabs(num(thread(r, 101), "gil_pct") - 50) < 1e-9);
	json_t *f = finding(r, "GIL contention");
	CHECK(f != NULL);
	const char *ev = json_string_value(json_object_get(f, "evidence"));
	CHECK(ev && strstr(ev, "60.0%") && strstr(ev, "tid 101") && strstr(ev, "tid 102"));
	/* Its own estimate; the hotspot finding claims the same time, so both are
	 * shared out within the run's wall time. */
	json_t *imp = json_object_get(f, "impact");
	double raw = num(imp, "unscaled_seconds");
	CHECK(fabs((isnan(raw) ? num(imp, "seconds") : raw) - 0.6) < 1e-9);
	json_decref(r);
	fixture_close(&fx);
}

TEST(no_contention_when_the_other_thread_rarely_waits,
     "no contention finding when the other thread rarely waits, and the main thread waiting in "
     "join is not idle")
{
	struct fixture fx;
	gil_run(&fx, 5);
	json_t *r = build(&fx);
	json_t *gil = json_object_get(json_object_get(r, "python"), "gil");
	CHECK(fabs(num(gil, "contention_pct") - 5) < 1e-9);
	CHECK(finding(r, "GIL contention") == NULL); /* 5% is under the threshold */
	/* The main thread waits in Thread.join (and its workers are busy): not idle. */
	CHECK(finding(r, "idle") == NULL);
	CHECK(fabs(num(thread(r, 100), "idle_pct") - 100) < 1e-9);
	json_decref(r);
	fixture_close(&fx);
}

TEST(a_thread_running_without_the_gil_is_not_waiting_for_it,
     "a thread on the CPU that never holds the GIL (C code that released it) is not GIL contention")
{
	struct fixture fx;
	fixture_open(&fx, 1000 * MS);
	record_meta_int(fx.rec, "python_rate_hz", 100);
	for (int k = 0; k < 100; k++) {
		int64_t t = k * 10 * MS;
		PY(&fx, 100, 101, t, 1, 1, "Thread.run", "crunch");
		/* hashing in C with the GIL released: on the CPU, never holding it */
		PY(&fx, 100, 102, t + 1000, 1, 0, "Thread.run", "digest");
	}
	json_t *r = build(&fx);
	json_t *gil = json_object_get(json_object_get(r, "python"), "gil");
	CHECK(num(gil, "contention_pct") == 0);
	CHECK(finding(r, "GIL contention") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

/* Thread 101 busy, thread 103 off the CPU in 95% of its samples, in nap. */
static void idle_recording(struct fixture *fx)
{
	fixture_open(fx, 1000 * MS);
	record_meta_int(fx->rec, "python_rate_hz", 100);
	for (int k = 0; k < 100; k++) {
		int64_t t = k * 10 * MS;
		PY(fx, 100, 101, t, 1, 1, "Thread.run", "crunch");
		PY(fx, 100, 103, t + 1000, k % 20 == 0, 0, "Thread.run", "nap");
	}
}

TEST(an_idle_thread_is_named_with_its_wait_stack,
     "a thread off the CPU in 95% of its samples is an idle-thread finding naming its wait stack")
{
	struct fixture fx;
	idle_recording(&fx);
	json_t *r = build(&fx);
	CHECK(fabs(num(thread(r, 103), "idle_pct") - 95) < 1e-9);
	json_t *f = finding(r, "idle");
	CHECK(f != NULL);
	const char *ev = json_string_value(json_object_get(f, "evidence"));
	const char *loc = json_string_value(json_object_get(f, "location"));
	CHECK(ev && strstr(ev, "thread 103") && strstr(ev, "nap (w.py:7) < Thread.run"));
	CHECK(loc && !strcmp(loc, "w.py:nap:7"));
	CHECK(!strstr(ev, "thread 101"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(a_pool_worker_waiting_in_its_task_is_not_idle,
     "a ThreadPoolExecutor worker off the CPU in 95% of its samples inside a task (its request's "
     "wait) is not an idle thread: it waits on its task, not for work")
{
	struct fixture fx;
	fixture_open(&fx, 1000 * MS);
	record_meta_int(fx.rec, "python_rate_hz", 100);
	for (int k = 0; k < 100; k++) {
		int64_t t = k * 10 * MS;
		PY(&fx, 100, 101, t, 1, 1, "Thread.run", "crunch");
		PY(&fx, 100, 103, t + 1000, k % 20 == 0, 0,
		   "Thread.run|/usr/lib/python3.12/threading.py",
		   "_worker|/usr/lib/python3.12/concurrent/futures/thread.py",
		   "_WorkItem.run|/usr/lib/python3.12/concurrent/futures/thread.py", "get_price");
	}
	json_t *r = build(&fx);
	CHECK(fabs(num(thread(r, 103), "idle_pct") - 95) < 1e-9);
	CHECK(finding(r, "idle") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

TEST(a_thread_queued_for_a_cpu_is_not_idle,
     "a computing thread queued for a CPU in 90% of its samples (on_cpu 2) is neither on the CPU "
     "nor idle there, and no idle-thread finding")
{
	struct fixture fx;
	fixture_open(&fx, 1000 * MS);
	record_meta_int(fx.rec, "python_rate_hz", 100);
	for (int k = 0; k < 100; k++) {
		int64_t t = k * 10 * MS;
		PY(&fx, 100, 101, t, 1, 1, "Thread.run", "crunch");
		PY(&fx, 100, 103, t + 1000, k % 10 == 0 ? 1 : 2, 1, "Thread.run", "crunch");
	}
	json_t *r = build(&fx);
	CHECK(fabs(num(thread(r, 103), "on_cpu_pct") - 10) < 1e-9);
	CHECK(fabs(num(thread(r, 103), "runq_pct") - 90) < 1e-9);
	CHECK(fabs(num(thread(r, 103), "idle_pct")) < 1e-9);
	CHECK(finding(r, "idle") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

/* The idle recording, its off-CPU samples pointing at a
 * stack node the recording does not have (a damaged or hand-edited file). */
TEST(an_idle_thread_whose_stack_is_missing_is_reported_without_it,
     "an idle thread whose samples point to a stack node the recording lacks is reported without "
     "its stack (no crash)")
{
	struct fixture fx;
	idle_recording(&fx);
	fixture_reopen(&fx);
	CHECK(sqlite3_exec(fx.db, "UPDATE samples SET node = 999999 WHERE tid = 103", NULL, NULL,
			   NULL) == SQLITE_OK);
	struct strbuf err = STRBUF_INIT;
	json_t *r = report_build(fx.db, &err);
	strbuf_release(&err);
	CHECK(r != NULL);
	json_t *f = finding(r, "idle");
	CHECK(f != NULL);
	const char *ev = json_string_value(json_object_get(f, "evidence"));
	CHECK(ev && strstr(ev, "thread 103") && strstr(ev, "not recorded"));
	json_decref(r);
	fixture_close(&fx);
}

/* Python samples: 6 on-CPU holding the GIL in hot, 4 off-CPU in wait. */
static json_t *mode_run(const char *mode)
{
	struct fixture fx;
	fixture_open(&fx, 1000 * MS);
	if (mode)
		record_meta(fx.rec, "python_mode", mode);
	for (int k = 0; k < 10; k++)
		PY(&fx, 100, 100, k * 10 * MS, k < 6, k < 3, "main", k < 6 ? "hot" : "wait");
	json_t *r = build(&fx);
	fixture_close(&fx);
	return r;
}

TEST(mode_chooses_which_python_samples_hotspots_count,
     "--mode chooses which python samples the hotspots count (cpu by default)")
{
	json_t *r = mode_run(NULL), *src = json_object_get(r, "hotspots_source");
	CHECK(num(src, "samples") == 6); /* default cpu: on-CPU samples */
	CHECK(!strcmp(json_string_value(json_object_get(src, "mode")), "cpu"));
	json_decref(r);
	r = mode_run("wall");
	src = json_object_get(r, "hotspots_source");
	CHECK(num(src, "samples") == 10);
	CHECK(!strcmp(json_string_value(json_object_get(src, "mode")), "wall"));
	CHECK(!strcmp(json_string_value(json_object_get(src, "source")), "python"));
	json_decref(r);
	r = mode_run("gil");
	CHECK(num(json_object_get(r, "hotspots_source"), "samples") == 3);
	json_decref(r);
}

/* A thread read at 100 Hz for 1 s with a 300 ms stall (sonde late): its
 * coverage says which share of its ticks a read stood for. */
TEST(a_thread_s_coverage_counts_the_ticks_no_read_stood_for,
     "a thread's coverage counts the ticks of its sampled span no read stood for")
{
	struct fixture fx;
	fixture_open(&fx, 1000 * MS);
	record_meta_int(fx.rec, "python_rate_hz", 100);
	for (int k = 0; k <= 100; k++)
		if (k < 40 || k >= 70)
			PY(&fx, 100, 100, k * 10 * MS + (k % 3) * MS / 2, 1, 1, "<module>", "work");
	json_t *r = build(&fx);
	json_t *t = thread(r, 100);
	CHECK(num(t, "samples") == 71);
	CHECK(num(t, "ticks_missed") == 30);
	CHECK(fabs(num(t, "coverage_pct") - 100.0 * 71 / 101) < 1e-9);
	json_decref(r);
	fixture_close(&fx);
}

TEST(wall_mode_of_a_native_recording_shows_cpu_samples,
     "wall mode on a recording without python samples shows the cpu samples")
{
	struct fixture fx;
	fixture_open(&fx, 1000 * MS);
	record_meta(fx.rec, "python_mode", "wall");
	STACK(&fx, 12, "cpu", 1, "main", "work");
	json_t *r = build(&fx);
	json_t *src = json_object_get(r, "hotspots_source");
	CHECK(!strcmp(json_string_value(json_object_get(src, "source")), "cpu"));
	CHECK(num(src, "samples") == 12);
	CHECK(json_object_get(r, "python") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

CHECK_MAIN()
