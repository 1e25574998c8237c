/* trace.json (src/render/trace.c): a recording with stack samples and GPU
 * activity becomes a timeline Perfetto can open: valid JSON, the threads'
 * stacks as nested slices, the kernels on their device and stream, an arrow
 * from each launch to its kernel, and counters. */
#include "check.h"
#include "gpu_fixture.h"
#include "render/render.h"

extern const struct renderer render_trace;

static json_t *events_named(json_t *evs, const char *ph, const char *name)
{
	json_t *out = json_array(), *e;
	size_t i;
	json_array_foreach(evs, i, e) {
		const char *p = json_string_value(json_object_get(e, "ph"));
		const char *n = json_string_value(json_object_get(e, "name"));
		if (p && !strcmp(p, ph) && (!name || (n && !strcmp(n, name))))
			json_array_append(out, e);
	}
	return out;
}

static json_t *render(struct fixture *fx, json_t *report)
{
	FILE *f = tmpfile();
	struct strbuf err = STRBUF_INIT;
	struct render_ctx ctx = { .report = report, .db = fx->db, .dir = fx->dir };
	int rc = render_trace.render(&ctx, f, &err);
	strbuf_release(&err);
	rewind(f);
	json_error_t jerr;
	json_t *doc = rc ? NULL : json_loadf(f, 0, &jerr);
	if (!doc && !rc)
		fprintf(stderr, "  trace.json is not JSON: %s (line %d)\n", jerr.text, jerr.line);
	fclose(f);
	return doc;
}

TEST(timeline,
     "samples, GPU work, launches and phases become slices, arrows and names in valid JSON")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000LL);
	/* 5 samples of main -> work (t = 0..4 ns). */
	STACK(&fx, 5, "cpu", 1, "main", "work");
	sql(&fx, "%s", gpu_tables);
	sql(&fx, "INSERT INTO gpu_kernels VALUES(100, 0, 7, 42, 2000, 5000, '_Z6addoneIfEvPT_i',"
		 " 4, 1, 1, 256, 1, 1, 16, 0, 0)");
	sql(&fx, "INSERT INTO gpu_copies VALUES(100, 0, 7, 43, 6000, 9000, 8388608, 0, -1, 0,"
		 " 'HtoD', 'pageable', 'device')");
	sql(&fx, "INSERT INTO gpu_api VALUES(100, 100, 42, 1000, 1500, 0, 'cudaLaunchKernel')");
	sql(&fx, "INSERT INTO gpu_api VALUES(100, 100, 43, 5500, 9100, 0, 'cudaMemcpyAsync')");
	json_t *report = fixture_report(&fx);
	json_t *phase = json_pack("{s:s, s:f, s:f}", "name", "load \"all\"", "start_s", 0.0,
				  "end_s", 0.5);
	json_object_set_new(report, "phases", json_pack("[o]", phase));
	json_t *doc = render(&fx, report);
	CHECK(doc != NULL);
	json_t *evs = json_object_get(doc, "traceEvents");
	CHECK(json_array_size(evs) > 0);

	json_t *work = events_named(evs, "X", "work"), *mainx = events_named(evs, "X", "main");
	CHECK(json_array_size(work) == 1 && json_array_size(mainx) == 1);
	json_t *k = events_named(evs, "X", "void addone<float>(float*, int)");
	if (!json_array_size(k)) { /* no C++ demangler here */
		json_decref(k);
		k = events_named(evs, "X", "_Z6addoneIfEvPT_i");
	}
	CHECK(json_array_size(k) == 1);
	json_t *k0 = json_array_get(k, 0);
	CHECK(json_integer_value(json_object_get(k0, "tid")) == 7);
	CHECK(fabs(json_number_value(json_object_get(k0, "ts")) - 2.0) < 1e-9);
	CHECK(fabs(json_number_value(json_object_get(k0, "dur")) - 3.0) < 1e-9);

	json_t *copy = events_named(evs, "X", "HtoD 8.0 MiB (pageable to device)");
	CHECK(json_array_size(copy) == 1);
	json_t *s = events_named(evs, "s", "launch"), *f = events_named(evs, "f", "launch");
	CHECK(json_array_size(s) == 2 && json_array_size(f) == 2);
	json_t *s0 = json_array_get(s, 0), *f0 = json_array_get(f, 0);
	CHECK(s0 && f0 && json_integer_value(json_object_get(s0, "id")) ==
			      json_integer_value(json_object_get(f0, "id")));
	CHECK(json_integer_value(json_object_get(s0, "tid")) == 100);
	json_t *ph = events_named(evs, "X", "load \"all\"");
	CHECK(json_array_size(ph) == 1);
	json_t *gpu_name = events_named(evs, "M", "process_name");
	int found = 0;
	size_t i;
	json_t *e;
	json_array_foreach(gpu_name, i, e) {
		const char *n = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
		found |= n && !strcmp(n, "GPU 0");
	}
	CHECK(found);
	CHECK(json_integer_value(json_object_get(json_object_get(doc, "otherData"),
						 "dropped_events")) == 0);
	json_decref(work);
	json_decref(mainx);
	json_decref(k);
	json_decref(copy);
	json_decref(s);
	json_decref(f);
	json_decref(ph);
	json_decref(gpu_name);
	json_decref(doc);
	json_decref(report);
	fixture_close(&fx);
}

TEST(process_end,
     "what a process wrote after its last reading shows at its end, from its threads' exit records")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000LL);
	sql(&fx, "CREATE TABLE proc_samples(t_ns INTEGER, pid INTEGER, user_ns INTEGER,"
		 " sys_ns INTEGER, rchar INTEGER, wchar INTEGER, syscr INTEGER, syscw INTEGER)");
	sql(&fx, "CREATE TABLE task_exits(t_ns INTEGER, pid INTEGER, tid INTEGER, user_ns INTEGER,"
		 " sys_ns INTEGER, rchar INTEGER, wchar INTEGER, syscr INTEGER, syscw INTEGER)");
	/* Read at 0 and 0.1 s with nothing written; 4 MB written by two threads
	 * before the end at 0.5 s. A thread of pid 9 that ended while pid 9 lives
	 * gives no end point. */
	sql(&fx, "INSERT INTO proc_samples VALUES(0, 7, 0, 0, 0, 0, 0, 0)");
	sql(&fx, "INSERT INTO proc_samples VALUES(100000000, 7, 10000000, 0, 0, 0, 1, 0)");
	sql(&fx, "INSERT INTO task_exits VALUES(400000000, 7, 8, 0, 0, 0, 1000000, 0, 10)");
	sql(&fx, "INSERT INTO task_exits VALUES(500000000, 7, 7, 50000000, 0, 0, 3000000, 1, 30)");
	sql(&fx, "INSERT INTO proc_samples VALUES(0, 9, 0, 0, 0, 0, 0, 0)");
	sql(&fx, "INSERT INTO task_exits VALUES(300000000, 9, 10, 0, 0, 0, 5000000, 0, 10)");
	json_t *report = fixture_report(&fx);
	json_t *doc = render(&fx, report);
	CHECK(doc != NULL);
	json_t *io = events_named(json_object_get(doc, "traceEvents"), "C", "I/O");
	CHECK(json_array_size(io) == 2);
	json_t *last = json_array_get(io, json_array_size(io) - 1);
	json_t *args = json_object_get(last, "args");
	CHECK(json_integer_value(json_object_get(last, "pid")) == 7);
	CHECK(fabs(json_number_value(json_object_get(last, "ts")) - 500000.0) < 1e-6);
	CHECK(fabs(json_number_value(json_object_get(args, "write_MB_s")) - 10.0) < 1e-9);
	CHECK(fabs(json_number_value(json_object_get(args, "calls_s")) - 100.0) < 1e-9);
	json_decref(io);
	json_decref(doc);
	json_decref(report);
	fixture_close(&fx);
}

TEST(empty, "a recording with nothing in it is still a valid, empty timeline")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000LL);
	json_t *report = fixture_report(&fx);
	json_t *doc = render(&fx, report);
	CHECK(doc != NULL && json_is_array(json_object_get(doc, "traceEvents")));
	json_decref(doc);
	json_decref(report);
	fixture_close(&fx);
}

CHECK_MAIN()
