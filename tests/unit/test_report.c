/* test_report: report_build turns a small recording into the report model. */
#include "check.h"
#include "analysis/analysis.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "record/stacks.h"
#include "util/strbuf.h"
#include "util/utf8.h"

#include <jansson.h>
#include <math.h>

#define MIB (1024LL * 1024)

/* The proc probe's table, as src/probes/proc.c creates it. */
static const char proc_schema[] =
	"CREATE TABLE IF NOT EXISTS proc_samples(t_ns INTEGER, pid INTEGER,"
	" user_ns INTEGER, sys_ns INTEGER, rss_bytes INTEGER, hwm_bytes INTEGER,"
	" threads INTEGER, minflt INTEGER, majflt INTEGER, vcsw INTEGER, ivcsw INTEGER,"
	" runq_wait_ns INTEGER, rchar INTEGER, wchar INTEGER, read_bytes INTEGER,"
	" write_bytes INTEGER, state TEXT);";

struct rec_fixture {
	char *dir;
	struct strbuf path;
	struct recorder *rec;
};

static int fixture_open(struct rec_fixture *fx)
{
	struct strbuf err = STRBUF_INIT;
	strbuf_init(&fx->path);
	fx->rec = NULL;
	fx->dir = check_tmpdir();
	if (!fx->dir)
		return -1;
	strbuf_addf(&fx->path, "%s/profile.db", fx->dir);
	int rc = recorder_open(fx->path.buf, &fx->rec, &err);
	if (rc)
		check_fail(__FILE__, __LINE__, "recorder_open: %s", err.buf);
	strbuf_release(&err);
	return rc;
}

/* Closes the recording and builds the report from it. */
static json_t *fixture_report(struct rec_fixture *fx, struct strbuf *err)
{
	sqlite3 *db = NULL;
	CHECK_INT_EQ(recorder_close(fx->rec), 0);
	fx->rec = NULL;
	if (recording_open(fx->path.buf, &db, err)) {
		check_fail(__FILE__, __LINE__, "recording_open: %s", err->buf);
		return NULL;
	}
	json_t *r = report_build(db, err);
	sqlite3_close(db);
	return r;
}

static void fixture_release(struct rec_fixture *fx)
{
	recorder_close(fx->rec);
	strbuf_release(&fx->path);
	check_rmtree(fx->dir);
}

static void leader_and_child(struct recorder *rec, const char *cmd)
{
	struct process_info leader = { .pid = 100, .ppid = 1, .start_ns = 0, .end_ns = 1900000000,
				       .command = cmd, .is_leader = 1, .exit_code = 0 };
	struct process_info child = { .pid = 101, .ppid = 100, .start_ns = 100000000,
				      .end_ns = 1800000000, .command = "worker", .exit_code = 0 };
	record_process(rec, &leader);
	record_process(rec, &child);
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

TEST(full_report, "a recording with /proc samples gives target, cpu and memory sections and ranks an off-CPU finding")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	struct recorder *rec = fx.rec;
	leader_and_child(rec, "/bin/app --fast");
	record_meta_int(rec, "wall_ns", 2000000000);
	record_meta_int(rec, "exit_code", 0);
	record_meta_int(rec, "cpus_online", 2);
	REQUIRE(recorder_schema(rec, proc_schema) == 0);
	/* both processes alive together at 1 s: 100 MiB + 50 MiB */
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "INSERT INTO proc_samples(t_ns, pid, user_ns, sys_ns, rss_bytes, hwm_bytes, threads)"
		 " VALUES (500000000, 100, 100000000, 20000000, %lld, %lld, 1),"
		 " (1000000000, 100, 150000000, 30000000, %lld, %lld, 2),"
		 " (1000000000, 101, 50000000, 10000000, %lld, %lld, 1),"
		 " (1500000000, 100, 200000000, 40000000, %lld, %lld, 2)",
		 60 * MIB, 60 * MIB, 100 * MIB, 110 * MIB, 50 * MIB, 50 * MIB, 20 * MIB, 110 * MIB);
	REQUIRE(recorder_schema(rec, sql) == 0);
	struct rusage_info total = { .pid = 0, .user_s = 0.25, .sys_s = 0.05, .maxrss_bytes = 110 * MIB,
				     .nvcsw = 40 };
	record_rusage(rec, &total);
	record_probe(rec, "proc", "on", NULL);

	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	CHECK_INT_EQ(err.len, 0);

	json_t *t = json_object_get(r, "target");
	REQUIRE(json_is_object(t));
	CHECK_STR_EQ(json_string_value(json_object_get(t, "command")), "/bin/app --fast");
	CHECK(json_integer_value(json_object_get(t, "exit_code")) == 0 &&
	      json_is_integer(json_object_get(t, "exit_code")));
	CHECK(fabs(num(t, "wall_s") - 2.0) < 1e-9);
	CHECK_INT_EQ(json_array_size(json_object_get(t, "pids")), 2);
	CHECK(json_object_get(t, "complete") == NULL || json_is_true(json_object_get(t, "complete")));

	json_t *cpu = json_object_get(r, "cpu");
	REQUIRE(json_is_object(cpu));
	CHECK(fabs(num(cpu, "user_s") - 0.25) < 1e-9);
	CHECK(fabs(num(cpu, "sys_s") - 0.05) < 1e-9);
	CHECK(fabs(num(cpu, "utilization") - 0.15) < 1e-6);
	CHECK(num(cpu, "cpus_online") == 2);

	json_t *mem = json_object_get(r, "memory");
	REQUIRE(json_is_object(mem));
	/* the peak is the sum over live processes, above any one process's high-water mark */
	CHECK_INT_EQ((long long)num(mem, "peak_rss_bytes"), 150 * MIB);
	CHECK(fabs(num(mem, "peak_rss_at_s") - 1.0) < 1e-9);
	CHECK(json_array_size(json_object_get(mem, "rss_timeline")) >= 2);

	json_t *nm = json_object_get(r, "not_measured");
	REQUIRE(json_is_object(nm));
	CHECK(json_object_get(nm, "cpu") == NULL);
	CHECK(json_object_get(nm, "memory") == NULL);
	CHECK(json_is_string(json_object_get(nm, "hotspots")));
	CHECK(json_is_string(json_object_get(nm, "gpu")));

	json_t *fs = json_object_get(r, "findings");
	REQUIRE(json_array_size(fs) >= 1);
	json_t *top = json_array_get(fs, 0);
	CHECK_STR_EQ(json_string_value(json_object_get(top, "dimension")), "cpu");
	CHECK_CONTAINS(json_string_value(json_object_get(top, "title")), "off the CPU");
	CHECK_CONTAINS(json_string_value(json_object_get(top, "location")), "/bin/app");
	json_t *imp = json_object_get(top, "impact");
	CHECK(fabs(num(imp, "share_pct") - 85.0) < 1.0);
	CHECK(json_array_size(fs) <= FINDINGS_SHOWN_MAX);
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

TEST(absent_not_zero, "with no /proc samples and no rusage, cpu and memory are in not_measured, not reported as zero")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	leader_and_child(fx.rec, "/bin/app");
	record_meta_int(fx.rec, "wall_ns", 1000000000);
	record_probe(fx.rec, "proc", "off", "not requested");
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	json_t *nm = json_object_get(r, "not_measured");
	REQUIRE(json_is_object(nm));
	CHECK(json_is_string(json_object_get(nm, "cpu")));
	CHECK(json_is_string(json_object_get(nm, "memory")));
	json_t *cpu = json_object_get(r, "cpu"), *mem = json_object_get(r, "memory");
	CHECK(cpu == NULL || json_is_null(cpu));
	CHECK(mem == NULL || json_is_null(mem));
	/* no per-process figure reads as a measured zero either */
	json_t *p = json_array_get(json_object_get(r, "processes"), 0);
	REQUIRE(json_is_object(p));
	CHECK(json_is_null(json_object_get(p, "user_s")));
	CHECK(json_is_null(json_object_get(p, "peak_rss_bytes")));
	CHECK_INT_EQ(json_array_size(json_object_get(r, "findings")), 0);
	CHECK(json_is_array(json_object_get(r, "findings")));
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

TEST(incomplete_run, "a recording without wall time is marked incomplete and its wall time is null, not zero")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	leader_and_child(fx.rec, "/bin/app");
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	json_t *t = json_object_get(r, "target");
	CHECK(json_is_false(json_object_get(t, "complete")));
	CHECK(json_is_null(json_object_get(t, "wall_s")));
	CHECK(json_is_null(json_object_get(t, "exit_code")));
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

TEST(outside_text_valid, "a command line with invalid UTF-8 is reported as valid UTF-8 with the bad bytes replaced")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	leader_and_child(fx.rec, "/bin/caf\xe9 --in=\xff");
	record_meta_int(fx.rec, "wall_ns", 1000000000);
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	const char *cmd = json_string_value(json_object_get(json_object_get(r, "target"), "command"));
	REQUIRE(cmd);
	CHECK(utf8_valid(cmd, strlen(cmd)));
	CHECK_CONTAINS(cmd, "/bin/caf\xef\xbf\xbd --in=\xef\xbf\xbd");
	char *dump = json_dumps(r, 0);
	CHECK(dump != NULL);
	free(dump);
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

TEST(empty_recording, "a recording with no process at all still builds a report")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	CHECK(json_is_null(json_object_get(json_object_get(r, "target"), "command")));
	CHECK(json_is_object(json_object_get(r, "not_measured")));
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

/* The alloc probe's tables, as src/probes/alloc.c creates them. */
static const char alloc_schema[] =
	"CREATE TABLE alloc_sites(node INTEGER PRIMARY KEY, pid INTEGER,"
	" allocations REAL, allocated_bytes REAL, peak_bytes REAL, leaked_bytes REAL,"
	" leaked_allocations REAL, temporary_allocations REAL, temporary_bytes REAL,"
	" peak_bytes_sd REAL, leaked_bytes_sd REAL, temporary_allocations_sd REAL,"
	" mmap_bytes REAL);"
	"CREATE TABLE alloc_timeline(t_ns INTEGER, allocations REAL, allocated_bytes REAL,"
	" live_bytes REAL);"
	"CREATE TABLE alloc_site_timeline(t_ns INTEGER, node INTEGER, allocations REAL,"
	" allocated_bytes REAL, freed_bytes REAL);";

/* main -> fn, in app.c at line; returns its node. */
static int64_t app_stack(struct recorder *rec, const char *fn, int line)
{
	struct stack_writer *sw = recorder_stacks(rec);
	struct frame_info outer = { "main", "app.c", 5, "/opt/app", "native" };
	struct frame_info inner = { fn, "app.c", line, "/opt/app", "native" };
	int64_t ids[2] = { stack_frame(sw, &outer), stack_frame(sw, &inner) };
	return stack_intern(sw, ids, 2);
}

/* The launched process 100 with RSS readings every 100 ms from 0.1 s, in MiB,
 * in a 2 s run. */
static int rss_readings(struct recorder *rec, const long long *mib, size_t n)
{
	leader_and_child(rec, "/opt/app");
	record_meta_int(rec, "wall_ns", 2000000000);
	if (recorder_schema(rec, proc_schema))
		return -1;
	struct strbuf sql = STRBUF_INIT;
	strbuf_addstr(&sql, "INSERT INTO proc_samples(t_ns, pid, rss_bytes) VALUES ");
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&sql, "%s(%lld, 100, %lld)", i ? ", " : "", (long long)(i + 1) * 100000000,
			    mib[i] * MIB);
	int rc = recorder_schema(rec, sql.buf);
	strbuf_release(&sql);
	return rc;
}

/* n cpu samples of thread tid at node, step_ns apart from t_ns. */
static void cpu_samples(struct recorder *rec, int64_t node, int64_t t_ns, int64_t step_ns, int n,
			pid_t tid)
{
	for (int k = 0; k < n; k++) {
		struct sample_info si = { .t_ns = t_ns + k * step_ns, .pid = 100, .tid = tid,
					  .node = node, .source = "cpu", .weight = 1, .on_cpu = 1,
					  .gil = -1 };
		stack_sample(recorder_stacks(rec), &si);
	}
}

TEST(rss_jump_allocating, "an RSS jump names the site whose heap grew in its window, not the one that ran, nor one that allocated and freed again")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	struct recorder *rec = fx.rec;
	/* 10 MiB until 0.2 s, 210 MiB from 0.4 s: a 200 MiB jump between 0.2 and 0.4 s. */
	static const long long rss[] = { 10, 10, 100, 210, 210, 10 };
	REQUIRE(rss_readings(rec, rss, 6) == 0);
	char sql[1024];
	REQUIRE(recorder_schema(rec, alloc_schema) == 0);
	int64_t load = app_stack(rec, "load_table", 30), spin = app_stack(rec, "spin", 22),
		scratch = app_stack(rec, "scratch", 40), early = app_stack(rec, "early", 50);
	cpu_samples(rec, spin, 200000000, 10000000, 20, 101);
	record_meta_int(rec, "alloc_processes", 1);
	record_meta_int(rec, "alloc_site_bucket_ns", 20000000);
	record_meta_int(rec, "alloc_peak_bytes", 500 * MIB);
	record_meta(rec, "alloc_mode", "full");
	/* load_table: 200 MiB at 0.22 s, kept; scratch: 300 MiB at 0.24 s, freed at
	 * 0.30 s; early: 500 MiB at 0.02 s, before the window. */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO alloc_site_timeline VALUES (220000000, %lld, 1, %lld, 0),"
		 " (240000000, %lld, 1, %lld, 0), (300000000, %lld, 0, 0, %lld),"
		 " (20000000, %lld, 1, %lld, 0);"
		 "INSERT INTO alloc_sites(node, pid, allocations, allocated_bytes, peak_bytes,"
		 " leaked_bytes, mmap_bytes) VALUES (%lld, 100, 1, %lld, 0, 0, 0),"
		 " (%lld, 100, 1, %lld, 0, 0, 0), (%lld, 100, 1, %lld, %lld, 0, 0)",
		 (long long)load, 200 * MIB, (long long)scratch, 300 * MIB, (long long)scratch,
		 300 * MIB, (long long)early, 500 * MIB, (long long)load, 200 * MIB,
		 (long long)scratch, 300 * MIB, (long long)early, 500 * MIB, 500 * MIB);
	REQUIRE(recorder_schema(rec, sql) == 0);

	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	json_t *jumps = json_object_get(json_object_get(r, "memory"), "rss_jumps");
	REQUIRE(json_array_size(jumps) == 1);
	json_t *j = json_array_get(jumps, 0);
	json_t *alloc = json_object_get(j, "allocating");
	REQUIRE(json_array_size(alloc) == 1);
	json_t *top = json_array_get(alloc, 0);
	CHECK_STR_EQ(json_string_value(json_object_get(top, "function")), "load_table");
	CHECK_INT_EQ((long long)num(top, "bytes"), 200 * MIB);
	CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(j, "during"), "function")),
		     "spin");
	int named = 0;
	json_t *fs = json_object_get(r, "findings");
	for (size_t i = 0; i < json_array_size(fs); i++) {
		json_t *f = json_array_get(fs, i);
		const char *title = json_string_value(json_object_get(f, "title"));
		if (strncmp(title, "Resident memory jumps", 21))
			continue;
		named = 1;
		CHECK_CONTAINS(title, "while load_table allocates");
		CHECK_CONTAINS(json_string_value(json_object_get(f, "location")), "app.c:load_table:30");
		CHECK_CONTAINS(json_string_value(json_object_get(f, "evidence")), "running then");
	}
	CHECK(named);
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

/* One site's 200 MiB allocated at 0.02 s, long before RSS rises from resident
 * MiB by 200 MiB between 0.4 and 0.6 s; the finding or not. */
static json_t *touched_later_report(struct rec_fixture *fx, long long resident)
{
	if (fixture_open(fx))
		return NULL;
	struct recorder *rec = fx->rec;
	const long long rss[] = { resident, resident, resident, resident,
				  resident + 100, resident + 200, resident + 200 };
	if (rss_readings(rec, rss, 7) || recorder_schema(rec, alloc_schema))
		return NULL;
	int64_t load = app_stack(rec, "load_table", 30), spin = app_stack(rec, "spin", 22);
	cpu_samples(rec, spin, 400000000, 10000000, 20, 101);
	record_meta_int(rec, "alloc_processes", 1);
	record_meta_int(rec, "alloc_site_bucket_ns", 20000000);
	record_meta(rec, "alloc_mode", "sampled");
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "INSERT INTO alloc_site_timeline VALUES (20000000, %lld, 1, %lld, 0);"
		 "INSERT INTO alloc_sites(node, pid, allocations, allocated_bytes, peak_bytes,"
		 " leaked_bytes, mmap_bytes) VALUES (%lld, 100, 1, %lld, %lld, 0, 0)",
		 (long long)load, 200 * MIB, (long long)load, 200 * MIB, 200 * MIB);
	if (recorder_schema(rec, sql))
		return NULL;
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(fx, &err);
	strbuf_release(&err);
	return r;
}

static json_t *jump_finding_of(json_t *r)
{
	json_t *fs = json_object_get(r, "findings");
	for (size_t i = 0; i < json_array_size(fs); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(fs, i), "id")),
			    "memory.rss_jump"))
			return json_array_get(fs, i);
	return NULL;
}

TEST(rss_jump_touched_later, "an RSS jump long after a block's malloc (its touching thread descheduled on a busy machine) names the block's site, held but not yet resident, not what ran")
{
	struct rec_fixture fx;
	json_t *r = touched_later_report(&fx, 10);
	REQUIRE(r);
	json_t *j = json_array_get(json_object_get(json_object_get(r, "memory"), "rss_jumps"), 0);
	REQUIRE(j);
	CHECK_INT_EQ((long long)json_array_size(json_object_get(j, "allocating")), 0);
	json_t *held = json_object_get(j, "touched");
	CHECK_STR_EQ(json_string_value(json_object_get(held, "function")), "load_table");
	json_t *f = jump_finding_of(r);
	REQUIRE(f);
	CHECK_CONTAINS(json_string_value(json_object_get(f, "title")), "load_table");
	CHECK_CONTAINS(json_string_value(json_object_get(f, "location")), "app.c:load_table:30");
	CHECK_CONTAINS(json_string_value(json_object_get(f, "evidence")),
		       "allocated before it and touched then");
	json_decref(r);
	fixture_release(&fx);
	/* The same block when everything it holds was resident before: not it. */
	r = touched_later_report(&fx, 300);
	REQUIRE(r);
	j = json_array_get(json_object_get(json_object_get(r, "memory"), "rss_jumps"), 0);
	REQUIRE(j);
	CHECK(json_object_get(j, "touched") == NULL);
	f = jump_finding_of(r);
	REQUIRE(f);
	CHECK(!strstr(json_string_value(json_object_get(f, "title")), "load_table"));
	json_decref(r);
	fixture_release(&fx);
}

static json_t *first_finding(json_t *r, const char *id)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(r, "findings"), i, f) {
		const char *fid = json_string_value(json_object_get(f, "id"));
		if (fid && !strcmp(fid, id))
			return f;
	}
	return NULL;
}

/* Cases of rss_growth_not_jump. */
enum rise { RISE_STEP, RISE_RAMP_BUSY, RISE_RAMP_IDLE };

TEST(rss_growth_not_jump, "RSS rising over 12 readings while the target computes is memory the running function keeps (grows, advice about what it holds); a rise between two readings, or a slow one while it hardly ran (a block touched on a busy machine), is a jump")
{
	for (int rise = RISE_STEP; rise <= RISE_RAMP_IDLE; rise++) {
		struct rec_fixture fx;
		if (fixture_open(&fx)) {
			fixture_release(&fx);
			REQUIRE(0);
		}
		struct recorder *rec = fx.rec;
		long long rss[16] = { 10, 10 };
		for (int i = 2; i < 16; i++)
			rss[i] = rise != RISE_STEP && i < 14 ? 10 + 20 * (i - 1) : 250;
		REQUIRE(rss_readings(rec, rss, 16) == 0);
		/* CPU time as the readings go: all of it, or a tenth. */
		REQUIRE(recorder_schema(rec, rise == RISE_RAMP_IDLE
						 ? "UPDATE proc_samples SET user_ns = t_ns / 10, sys_ns = 0"
						 : "UPDATE proc_samples SET user_ns = t_ns, sys_ns = 0") == 0);
		int64_t node = app_stack(rec, "build_index", 40);
		cpu_samples(rec, node, 200000000, 10000000, rise == RISE_RAMP_BUSY ? 120 : 10, 100);
		struct strbuf err = STRBUF_INIT;
		json_t *r = fixture_report(&fx, &err);
		REQUIRE(r);
		json_t *f = first_finding(r, "memory.rss_jump");
		REQUIRE(f);
		const char *title = json_string_value(json_object_get(f, "title"));
		const char *next = json_string_value(json_object_get(f, "next_step"));
		const char *diag = json_string_value(json_object_get(f, "diagnosis"));
		if (rise == RISE_RAMP_BUSY) {
			CHECK(title && strstr(title, "Resident memory grows by 240 MiB over 1.2 s") &&
			      strstr(title, "while build_index runs"));
			CHECK(diag && strstr(diag, "RSS growth"));
			CHECK(next && strstr(next, "Check what build_index keeps") &&
			      strstr(next, "as it arrives"));
		} else {
			CHECK(title && strstr(title, "Resident memory jumps by 240 MiB"));
			CHECK(diag && strstr(diag, "RSS step"));
		}
		json_decref(r);
		strbuf_release(&err);
		fixture_release(&fx);
	}
}

/* main -> fn (app.c:line) -> the kernel's page-fault handler: a stack that
 * faulted pages in. */
static int64_t faulting_stack(struct recorder *rec, const char *fn, int line)
{
	struct stack_writer *sw = recorder_stacks(rec);
	struct frame_info fr[] = { { "main", "app.c", 5, "/opt/app", "native" },
				   { fn, "app.c", line, "/opt/app", "native" },
				   { "asm_exc_page_fault", NULL, 0, "[kernel.kallsyms]", "kernel" },
				   { "exc_page_fault", NULL, 0, "[kernel.kallsyms]", "kernel" } };
	int64_t ids[4];
	for (int i = 0; i < 4; i++)
		ids[i] = stack_frame(sw, &fr[i]);
	return stack_intern(sw, ids, 4);
}

TEST(rss_jump_faulting_function, "an RSS jump is named by the function whose samples faulted pages in, even when a computation sharing the window on a busy machine had more samples")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	struct recorder *rec = fx.rec;
	static const long long rss[] = { 10, 10, 210, 210 };
	REQUIRE(rss_readings(rec, rss, 4) == 0);
	int64_t faulting = faulting_stack(rec, "touch_pages", 28), other = app_stack(rec, "spin", 11);
	cpu_samples(rec, other, 205000000, 2000000, 40, 100);
	cpu_samples(rec, faulting, 215000000, 5000000, 3, 100);
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	json_t *jumps = json_object_get(json_object_get(r, "memory"), "rss_jumps");
	REQUIRE(json_array_size(jumps) == 1);
	json_t *during = json_object_get(json_array_get(jumps, 0), "during");
	CHECK_STR_EQ(json_string_value(json_object_get(during, "function")), "touch_pages");
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

TEST(rss_jump_running_user_frame, "without the tracker an RSS jump names the program's function that faulted the pages in, not the kernel's fault handler")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	struct recorder *rec = fx.rec;
	static const long long rss[] = { 10, 10, 210, 210 };
	REQUIRE(rss_readings(rec, rss, 4) == 0);
	int64_t faulting = faulting_stack(rec, "fill_table", 61), other = app_stack(rec, "spin", 22);
	cpu_samples(rec, faulting, 210000000, 5000000, 8, 100);
	cpu_samples(rec, other, 250000000, 5000000, 4, 100);
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	json_t *jumps = json_object_get(json_object_get(r, "memory"), "rss_jumps");
	REQUIRE(json_array_size(jumps) == 1);
	json_t *during = json_object_get(json_array_get(jumps, 0), "during");
	CHECK_STR_EQ(json_string_value(json_object_get(during, "function")), "fill_table");
	CHECK_INT_EQ((long long)num(during, "samples"), 8);
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

TEST(rss_jump_ran_last, "without the tracker, between functions with as many samples in an RSS jump, the jump names the one that ran last before the reading that saw it (the loop that touched the pages after a computation ended), whichever came first in the table")
{
	for (int order = 0; order < 2; order++) {
		struct rec_fixture fx;
		if (fixture_open(&fx)) {
			fixture_release(&fx);
			REQUIRE(0);
		}
		static const long long rss[] = { 10, 10, 210, 210 };
		REQUIRE(rss_readings(fx.rec, rss, 4) == 0);
		/* the demo's shape: spin computes, then main touches 200 MiB */
		int64_t spin = order ? 0 : app_stack(fx.rec, "spin", 12);
		int64_t touch = app_stack(fx.rec, "touch_pages", 28);
		if (order)
			spin = app_stack(fx.rec, "spin", 12);
		cpu_samples(fx.rec, spin, 205000000, 10000000, 2, 100);
		cpu_samples(fx.rec, touch, 250000000, 30000000, 2, 100);
		struct strbuf err = STRBUF_INIT;
		json_t *r = fixture_report(&fx, &err);
		REQUIRE(r);
		json_t *jumps = json_object_get(json_object_get(r, "memory"), "rss_jumps");
		REQUIRE(json_array_size(jumps) == 1);
		json_t *during = json_object_get(json_array_get(jumps, 0), "during");
		CHECK_STR_EQ(json_string_value(json_object_get(during, "function")), "touch_pages");
		json_decref(r);
		strbuf_release(&err);
		fixture_release(&fx);
	}
}

TEST(rss_jump_paused_rise, "a rise in RSS that pauses while the program waits for a CPU is one jump; a rise after more than a second of quiet is another")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	/* 10 -> 110 MiB in three steps with pauses of 0.2 s (a busy machine),
	 * 1.1 s flat, then 110 -> 210 MiB in one step. */
	static const long long rss[] = { 10,  10,  40,	40,  40,  75,  75,  110, 110, 110,
					 110, 110, 110, 110, 110, 110, 110, 110, 110, 210 };
	REQUIRE(rss_readings(fx.rec, rss, 20) == 0);
	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	json_t *jumps = json_object_get(json_object_get(r, "memory"), "rss_jumps");
	REQUIRE(json_array_size(jumps) == 2);
	CHECK_INT_EQ((long long)num(json_array_get(jumps, 0), "size_bytes"), 100 * MIB);
	CHECK(fabs(num(json_array_get(jumps, 0), "start_s") - 0.2) < 1e-9);
	CHECK(fabs(num(json_array_get(jumps, 0), "end_s") - 0.8) < 1e-9);
	CHECK_INT_EQ((long long)num(json_array_get(jumps, 1), "size_bytes"), 100 * MIB);
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

/* Start-up growth (import_all), 1.2 s flat, then the work's growth (build,
 * or import_all again when same): the jumps of rss_jump_two_causes. */
static json_t *two_rises(struct rec_fixture *fx, int same, struct strbuf *err)
{
	long long rss[40];
	size_t n = 0;
	for (int k = 0; k <= 15; k++)
		rss[n++] = 10 + 5 * k; /* 0.1 .. 1.6 s: 10 -> 85 MiB */
	for (int k = 0; k < 12; k++)
		rss[n++] = 85;	/* 1.7 .. 2.8 s: flat */
	for (int k = 1; k <= 12; k++)
		rss[n++] = 85 + 15 * k; /* 2.9 .. 4.0 s: 85 -> 265 MiB */
	if (rss_readings(fx->rec, rss, n))
		return NULL;
	record_meta_int(fx->rec, "wall_ns", 4200000000LL);
	int64_t first = app_stack(fx->rec, "import_all", 3);
	int64_t second = same ? first : app_stack(fx->rec, "build", 40);
	cpu_samples(fx->rec, first, 150000000, 10000000, 140, 100);
	cpu_samples(fx->rec, second, 2850000000LL, 10000000, 110, 100);
	return fixture_report(fx, err);
}

TEST(rss_jump_two_causes, "growth at start-up and the work's growth a pause later are two jumps when different functions ran, even when a busy machine made the pause shorter than the first rise; one jump when the same function ran")
{
	for (int same = 0; same < 2; same++) {
		struct rec_fixture fx;
		if (fixture_open(&fx)) {
			fixture_release(&fx);
			REQUIRE(0);
		}
		struct strbuf err = STRBUF_INIT;
		json_t *r = two_rises(&fx, same, &err);
		REQUIRE(r);
		json_t *jumps = json_object_get(json_object_get(r, "memory"), "rss_jumps");
		CHECK_INT_EQ((long long)json_array_size(jumps), same ? 1 : 2);
		if (!same && json_array_size(jumps) == 2) {
			json_t *work = json_array_get(jumps, 1);
			CHECK(num(work, "start_s") > 2.7 && num(work, "start_s") < 2.95);
			CHECK_INT_EQ((long long)num(work, "size_bytes"), 180 * MIB);
			CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(work, "during"),
								       "function")),
				     "build");
		}
		json_decref(r);
		strbuf_release(&err);
		fixture_release(&fx);
	}
}

TEST(old_alloc_recording, "a recording made before mapping tracking has heap sites without a kind and RSS jumps with allocating null")
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	struct recorder *rec = fx.rec;
	static const long long rss[] = { 10, 10, 210 };
	REQUIRE(rss_readings(rec, rss, 3) == 0);
	char sql[1024];
	/* alloc_sites as it was: no mmap_bytes, no alloc_site_timeline. */
	REQUIRE(recorder_schema(rec, "CREATE TABLE alloc_sites(node INTEGER PRIMARY KEY, pid INTEGER,"
				     " allocations REAL, allocated_bytes REAL, peak_bytes REAL,"
				     " leaked_bytes REAL, leaked_allocations REAL,"
				     " temporary_allocations REAL, temporary_bytes REAL,"
				     " peak_bytes_sd REAL, leaked_bytes_sd REAL,"
				     " temporary_allocations_sd REAL);"
				     "CREATE TABLE alloc_timeline(t_ns INTEGER, allocations REAL,"
				     " allocated_bytes REAL, live_bytes REAL);") == 0);
	int64_t load = app_stack(rec, "load_table", 30);
	record_meta_int(rec, "alloc_processes", 1);
	record_meta_int(rec, "alloc_peak_bytes", 200 * MIB);
	record_meta(rec, "alloc_mode", "full");
	snprintf(sql, sizeof(sql),
		 "INSERT INTO alloc_sites(node, pid, allocations, allocated_bytes, peak_bytes,"
		 " leaked_bytes) VALUES (%lld, 100, 1, %lld, %lld, 0)",
		 (long long)load, 200 * MIB, 200 * MIB);
	REQUIRE(recorder_schema(rec, sql) == 0);

	struct strbuf err = STRBUF_INIT;
	json_t *r = fixture_report(&fx, &err);
	REQUIRE(r);
	json_t *mem = json_object_get(r, "memory");
	json_t *site = json_array_get(json_object_get(json_object_get(mem, "heap"), "top_sites"), 0);
	REQUIRE(site);
	CHECK_STR_EQ(json_string_value(json_object_get(site, "function")), "load_table");
	CHECK(json_object_get(site, "kind") == NULL);
	json_t *jump = json_array_get(json_object_get(mem, "rss_jumps"), 0);
	REQUIRE(jump);
	CHECK(json_is_null(json_object_get(jump, "allocating")));
	json_decref(r);
	strbuf_release(&err);
	fixture_release(&fx);
}

/* The offcpu probe's tables, as src/probes/offcpu.c creates them. */
static const char offcpu_schema[] =
	"CREATE TABLE IF NOT EXISTS offcpu_threads(pid INTEGER, tid INTEGER, first_ns INTEGER,"
	" last_ns INTEGER, on_cpu_ns INTEGER, off_cpu_ns INTEGER, intervals INTEGER);"
	"CREATE TABLE IF NOT EXISTS offcpu_states(pid INTEGER, tid INTEGER, node INTEGER,"
	" state TEXT, intervals INTEGER, ns INTEGER);";

/* cpu_threads on a busy 2-core machine (a loaded check's run): a main
 * thread that joins, and three busy threads whose lives (from first_ms to
 * last_ms) are given; 1.08 s of CPU and 2.55 s queued in 1.616 s, a mean
 * demand of 2.24 threads. */
static json_t *busy_threads_report(const int64_t first_ms[3], const int64_t last_ms[3])
{
	struct rec_fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		return NULL;
	}
	struct recorder *rec = fx.rec;
	struct process_info leader = { .pid = 100, .ppid = 1, .start_ns = 0,
				       .end_ns = 1616000000, .command = "./cpu_threads",
				       .is_leader = 1, .exit_code = 0 };
	record_process(rec, &leader);
	record_meta_int(rec, "wall_ns", 1616000000);
	record_meta_int(rec, "exit_code", 0);
	record_meta_int(rec, "cpus_online", 2);
	record_probe(rec, "proc", "on", NULL);
	struct rusage_info total = { .pid = 0, .user_s = 1.06, .sys_s = 0.02, .nivcsw = 400 };
	record_rusage(rec, &total);
	struct strbuf sql = STRBUF_INIT;
	int ok = !recorder_schema(rec, proc_schema) && !recorder_schema(rec, offcpu_schema);
	strbuf_addstr(&sql, "INSERT INTO proc_samples(t_ns, pid, user_ns, sys_ns, threads,"
			    " runq_wait_ns) VALUES (1500000000, 100, 1000000000, 20000000, 4,"
			    " 2550000000);"
			    "INSERT INTO offcpu_threads VALUES (100, 100, 0, 1616000000, 4600000,"
			    " 1611000000, 10);"
			    "INSERT INTO offcpu_states VALUES (100, 100, 1, 'S', 5, 1594000000),"
			    " (100, 100, 1, 'R', 5, 17000000);");
	for (int i = 0; i < 3; i++) {
		int64_t life = (last_ms[i] - first_ms[i]) * 1000000, on = life / 3;
		strbuf_addf(&sql,
			    "INSERT INTO offcpu_threads VALUES (100, %d, %lld, %lld, %lld, %lld,"
			    " 100);"
			    "INSERT INTO offcpu_states VALUES (100, %d, 2, 'R', 100, %lld);",
			    101 + i, (long long)first_ms[i] * 1000000,
			    (long long)last_ms[i] * 1000000, (long long)on, (long long)(life - on),
			    101 + i, (long long)(life - on));
	}
	ok = ok && !recorder_schema(rec, sql.buf);
	strbuf_release(&sql);
	struct strbuf err = STRBUF_INIT;
	json_t *r = ok ? fixture_report(&fx, &err) : NULL;
	strbuf_release(&err);
	fixture_release(&fx);
	return r;
}

static int has_finding(json_t *r, const char *id)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(r, "findings"), i, f)
	{
		const char *fid = json_string_value(json_object_get(f, "id"));
		if (fid && !strcmp(fid, id))
			return 1;
	}
	return 0;
}

TEST(contention_part_of_run, "three busy threads on two cores for most of a run are the program's own CPU contention, although their mean demand over the whole run fits the cores")
{
	const int64_t first[3] = { 20, 600, 605 }, last[3] = { 1607, 1601, 1600 };
	json_t *r = busy_threads_report(first, last);
	REQUIRE(r);
	json_t *cpu = json_object_get(r, "cpu");
	CHECK(fabs(num(cpu, "runqueue_wait_s") - 2.55) < 1e-6);
	CHECK(has_finding(r, "concurrency.cpu_contention"));
	CHECK(json_object_get(cpu, "contention_note") == NULL);
	json_decref(r);
}

TEST(contention_one_at_a_time, "busy threads that run one after another do not make the queueing the program's own: a note about the busy machine")
{
	const int64_t first[3] = { 20, 560, 1090 }, last[3] = { 550, 1080, 1600 };
	json_t *r = busy_threads_report(first, last);
	REQUIRE(r);
	CHECK(!has_finding(r, "concurrency.cpu_contention"));
	CHECK(json_is_string(json_object_get(json_object_get(r, "cpu"), "contention_note")));
	json_decref(r);
}

CHECK_MAIN()
