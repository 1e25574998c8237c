/* Unit tests for the offcpu analysis on a hand-made recording: the main wait
 * skips a thread join, is named by the program's own frame with the libc call
 * and the system call below it, and report.json's offcpu section lists it. */
#include "analysis/analysis.h"
#include "analysis/offcpu.h"
#include "check.h"
#include "probes/offcpu.h"
#include "stacks_fixture.h"

struct fr {
	const char *fn, *module, *kind;
};

static int64_t intern(struct fixture *fx, const struct fr *f, size_t n)
{
	struct stack_writer *sw = recorder_stacks(fx->rec);
	int64_t ids[16];
	for (size_t i = 0; i < n; i++) {
		struct frame_info fi = { .function = f[i].fn, .file = NULL, .line = 0,
					 .module = f[i].module, .kind = f[i].kind };
		ids[i] = stack_frame(sw, &fi);
	}
	return stack_intern(sw, ids, n);
}

/* One interval of dur_ns for tid at node, through the real tracker. */
static void wait_at(struct fixture *fx, struct offcpu_tracker *t, int64_t node, pid_t tid,
		    int64_t dur_ns, char state)
{
	struct offcpu_interval iv;
	offcpu_tracker_switch(t, 100, tid, 0, 0, 0, &iv);
	offcpu_tracker_out(t, 100, tid, 10, state, 0);
	if (offcpu_tracker_switch(t, 100, tid, 10 + dur_ns, 0, 0, &iv)) {
		struct sample_info si = { .t_ns = iv.t_ns, .pid = 100, .tid = tid, .node = node,
					  .source = "offcpu", .weight = iv.dur_ns, .on_cpu = 0,
					  .gil = -1 };
		stack_sample(recorder_stacks(fx->rec), &si);
		offcpu_tracker_account(t, &iv, node);
	}
}

TEST(main_wait, "the main wait skips a join and names the program's frame, libc call and syscall")
{
	struct fixture fx;
	fixture_open(&fx, 1200000000LL);
	const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6", *k = "[kernel.kallsyms]";
	const struct fr join[] = { { "main", "/opt/app", "native" },
				   { "__pthread_clockjoin_ex", libc, "native" },
				   { "__futex_abstimed_wait_common64", libc, "native" },
				   { "__x64_sys_futex", k, "kernel" },
				   { "schedule", k, "kernel" } };
	const struct fr nap[] = { { "start_thread", libc, "native" },
				  { "work_loop", "/opt/app", "native" },
				  { "nap", "/opt/app", "native" },
				  { "clock_nanosleep", libc, "native" },
				  { "__x64_sys_clock_nanosleep", k, "kernel" },
				  { "schedule", k, "kernel" } };
	struct offcpu_tracker *t = offcpu_tracker_new();
	wait_at(&fx, t, intern(&fx, join, 5), 100, 1000000000LL, 'S');
	wait_at(&fx, t, intern(&fx, nap, 6), 101, 500000000LL, 'S');
	offcpu_tracker_write(t, fx.rec);
	offcpu_tracker_free(t);
	fixture_reopen(&fx);

	struct offcpu_wait w;
	CHECK(!offcpu_top_wait(fx.db, &w));
	CHECK(w.function && !strcmp(w.function, "nap"));
	CHECK(w.blocking && !strcmp(w.blocking, "clock_nanosleep"));
	CHECK(w.syscall && !strcmp(w.syscall, "clock_nanosleep"));
	CHECK(w.state == 'S' && w.tid == 101 && !w.waits_for_others);
	CHECK(w.seconds > 0.49 && w.seconds < 0.51);
	CHECK(w.thread_off_s > 0.49 && w.thread_off_s < 0.51);
	offcpu_wait_release(&w);

	struct strbuf err = STRBUF_INIT;
	json_t *r = report_build(fx.db, &err);
	CHECK(r != NULL);
	json_t *waits = json_object_get(json_object_get(r, "offcpu"), "waits");
	CHECK(json_array_size(waits) == 2);
	json_t *first = json_array_get(waits, 0);
	CHECK(first && !strcmp(json_string_value(json_object_get(first, "function")), "main"));
	CHECK(json_is_true(json_object_get(first, "waits_for_others")));
	json_decref(r);
	strbuf_release(&err);
	fixture_close(&fx);
}

TEST(no_data, "a recording without offcpu data has no wait")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000LL);
	STACK(&fx, 3, "cpu", 1, "main", "spin");
	fixture_reopen(&fx);
	struct offcpu_wait w;
	CHECK(offcpu_top_wait(fx.db, &w) == -1);
	fixture_close(&fx);
}

CHECK_MAIN()
