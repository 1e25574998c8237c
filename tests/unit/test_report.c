/* test_report: report_build turns a small recording into the report model. */
#include "check.h"
#include "analysis/analysis.h"
#include "record/reader.h"
#include "record/recorder.h"
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

CHECK_MAIN()
