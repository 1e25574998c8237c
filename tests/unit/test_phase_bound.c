/* Unit tests for phase_bound on a hand-made recording: a Python job whose
 * fetch phase reads an upstream child's rows from a pipe. On a busy machine
 * the reader, waking for a moment after each row, got no sample on the CPU
 * or queued in the whole phase; the child did, at its start. The phase is
 * still I/O-bound at the reader's line, not at the child's sleep. */
#include "analysis/analysis.h"
#include "check.h"
#include "stacks_fixture.h"

#define MS 1000000LL

static const char proc_schema[] =
	"CREATE TABLE IF NOT EXISTS proc_samples(t_ns INTEGER, pid INTEGER,"
	" user_ns INTEGER, sys_ns INTEGER, rss_bytes INTEGER, hwm_bytes INTEGER,"
	" threads INTEGER, minflt INTEGER, majflt INTEGER, vcsw INTEGER, ivcsw INTEGER,"
	" runq_wait_ns INTEGER, rchar INTEGER, wchar INTEGER, read_bytes INTEGER,"
	" write_bytes INTEGER, state TEXT, syscr INTEGER, syscw INTEGER);";

struct pyframe {
	const char *function, *file;
	int line;
};

static int64_t py_stack(struct fixture *fx, const struct pyframe *f, size_t n)
{
	struct stack_writer *sw = recorder_stacks(fx->rec);
	int64_t ids[8];
	for (size_t i = 0; i < n; i++) {
		struct frame_info fi = { .function = f[i].function, .file = f[i].file,
					 .line = f[i].line, .module = f[i].file, .kind = "python" };
		ids[i] = stack_frame(sw, &fi);
	}
	return stack_intern(sw, ids, n);
}

static void py_sample(struct fixture *fx, pid_t pid, int64_t t_ns, int64_t node, int on_cpu)
{
	struct sample_info si = { .t_ns = t_ns, .pid = pid, .tid = pid, .node = node,
				  .source = "python", .weight = 1, .on_cpu = on_cpu, .gil = 1 };
	stack_sample(recorder_stacks(fx->rec), &si);
}

static void line(struct fixture *fx, int64_t t_ns, const char *text)
{
	record_output_line(fx->rec, t_ns, 100, 1, text, strlen(text), 0);
}

/* The job (pid 100) and its upstream (pid 200), sampled at 100 Hz; the
 * reader's samples all blocked when reader_ran is 0. Beside them an idle
 * service of the job's (pid 300, its /proc figures still) sleeps all along,
 * sampled more than the reader: never what the phase waited in. */
static json_t *feed_job(struct fixture *fx, int reader_ran)
{
	fixture_open(fx, 2400 * MS);
	record_meta_int(fx->rec, "python_rate_hz", 100);
	CHECK(!recorder_schema(fx->rec, proc_schema));
	const char *job = "/home/u/py_feed_reader.py";
	const struct pyframe read[] = { { "<module>", job, 50 },
					{ "main", job, 41 },
					{ "fetch_rows", job, 24 } };
	const struct pyframe child_start[] = { { "<module>", "<string>", 2 } };
	const struct pyframe child_sleep[] = { { "<module>", "<string>", 5 } };
	const struct pyframe idle[] = { { "serve", "/home/u/py_status_page.py", 12 } };
	int64_t n_read = py_stack(fx, read, 3), n_start = py_stack(fx, child_start, 1),
		n_sleep = py_stack(fx, child_sleep, 1), n_idle = py_stack(fx, idle, 1);
	int64_t samples = 0;
	line(fx, 100 * MS, "Starting fetch");
	for (int64_t t = 100 * MS; t < 2100 * MS; t += 10 * MS, samples++)
		py_sample(fx, 100, t, n_read, reader_ran && t == 100 * MS);
	for (int64_t t = 150 * MS, k = 0; t < 2100 * MS; t += 10 * MS, k++, samples++)
		py_sample(fx, 200, t, k < 4 ? n_start : n_sleep, k < 4);
	for (int64_t t = 0; t < 2300 * MS; t += 10 * MS, samples++)
		py_sample(fx, 300, t, n_idle, 0);
	line(fx, 2100 * MS, "fetch done in 2.00s");
	line(fx, 2100 * MS, "Starting summarise");
	line(fx, 2300 * MS, "summarise done in 0.20s");
	record_meta_int(fx->rec, "python_samples", samples);
	/* /proc every 100 ms: the reader wakes for each row (its CPU and its
	 * voluntary switches move a little), the child starts then sleeps. */
	struct strbuf sql = STRBUF_INIT;
	for (int64_t t = 0; t <= 2300 * MS; t += 100 * MS) {
		int64_t k = t / (100 * MS);
		int64_t child_cpu = t < 150 * MS ? 0 : 40 * MS + (t - 150 * MS) / 1000;
		strbuf_reset(&sql);
		strbuf_addf(&sql,
			    "INSERT INTO proc_samples(t_ns, pid, user_ns, sys_ns, rss_bytes,"
			    " hwm_bytes, threads, vcsw, runq_wait_ns) VALUES"
			    " (%lld, 100, %lld, 0, 10000000, 10000000, 1, %lld, 0),"
			    " (%lld, 200, %lld, 0, 8000000, 8000000, 1, %lld, 0),"
			    " (%lld, 300, 20000000, 0, 9000000, 9000000, 1, 7, 0)",
			    (long long)t, (long long)(30 * MS + k * MS / 5), (long long)(k * 3),
			    (long long)t, (long long)child_cpu, (long long)(k * 2), (long long)t);
		CHECK(!recorder_schema(fx->rec, sql.buf));
	}
	strbuf_release(&sql);
	return fixture_report(fx);
}

static const char *fetch_location(json_t *r)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(r, "findings"), i, f) {
		const char *id = json_string_value(json_object_get(f, "id"));
		const char *title = json_string_value(json_object_get(f, "title"));
		if (id && !strcmp(id, "phase.io_bound") && title && strstr(title, "fetch"))
			return json_string_value(json_object_get(f, "location"));
	}
	return NULL;
}

TEST(reader_seen, "a fetch phase waiting on a pipe is I/O-bound at the reader's line")
{
	struct fixture fx;
	json_t *r = feed_job(&fx, 1);
	REQUIRE(r != NULL);
	const char *loc = fetch_location(r);
	CHECK(loc && strstr(loc, "py_feed_reader.py:fetch_rows:24"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(reader_never_sampled_running,
     "a reader that got no sample on the CPU in its phase is still where the phase waited, not "
     "its upstream child's sleep")
{
	struct fixture fx;
	json_t *r = feed_job(&fx, 0);
	REQUIRE(r != NULL);
	const char *loc = fetch_location(r);
	CHECK(loc && strstr(loc, "py_feed_reader.py:fetch_rows:24"));
	if (loc && !strstr(loc, "fetch_rows"))
		fprintf(stderr, "  located at %s\n", loc);
	json_decref(r);
	fixture_close(&fx);
}

CHECK_MAIN()
