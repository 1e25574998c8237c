/* test_procstats: per-process figures joined from the recording. */
#include "check.h"
#include "analysis/procstats.h"
#include "analysis/proctimeline.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>

static const char proc_schema[] =
	"CREATE TABLE IF NOT EXISTS proc_samples(t_ns INTEGER, pid INTEGER,"
	" user_ns INTEGER, sys_ns INTEGER, rss_bytes INTEGER, hwm_bytes INTEGER,"
	" threads INTEGER, minflt INTEGER, majflt INTEGER, vcsw INTEGER, ivcsw INTEGER,"
	" runq_wait_ns INTEGER, rchar INTEGER, wchar INTEGER, read_bytes INTEGER,"
	" write_bytes INTEGER, state TEXT);";

/* Closes what rec wrote to path and opens it for reading; NULL on failure. */
static sqlite3 *recording_finish(struct recorder *rec, const char *path)
{
	struct strbuf err = STRBUF_INIT;
	sqlite3 *db = NULL;
	if (recorder_close(rec))
		check_fail(__FILE__, __LINE__, "recorder_close failed");
	else if (recording_open(path, &db, &err))
		check_fail(__FILE__, __LINE__, "recording_open: %s", err.buf);
	strbuf_release(&err);
	return db;
}

/* Records two processes (the leader second by start time), optionally with
 * /proc samples, and opens the result for reading. */
static sqlite3 *make_recording(const char *dir, int with_samples)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	sqlite3 *db = NULL;
	strbuf_addf(&path, "%s/profile.db", dir);
	if (recorder_open(path.buf, &rec, &err)) {
		check_fail(__FILE__, __LINE__, "recorder_open: %s", err.buf);
		goto out;
	}
	struct process_info early = { .pid = 7, .ppid = 1, .start_ns = 0, .end_ns = 50,
				      .command = "helper", .exit_code = 0 };
	struct process_info leader = { .pid = 9, .ppid = 1, .start_ns = 10, .end_ns = -1,
				       .command = "main-app", .is_leader = 1, .exit_code = -1 };
	record_process(rec, &early);
	record_process(rec, &leader);
	if (with_samples) {
		recorder_schema(rec, proc_schema);
		recorder_schema(rec, "INSERT INTO proc_samples(t_ns, pid, user_ns, sys_ns, rss_bytes,"
				     " hwm_bytes, rchar, read_bytes) VALUES"
				     " (1, 7, 100, 10, 1000, 1500, 50, NULL),"
				     " (2, 7, 300, 20, 800, 2000, 70, NULL),"
				     " (2, 9, 500, 40, 4000, NULL, NULL, NULL)");
		/* ru_maxrss keeps the image from before an exec: it does not
		 * beat pid 7's own readings; pid 11, never read, has only it. */
		struct rusage_info ru = { .pid = 7, .maxrss_bytes = 5000 };
		record_rusage(rec, &ru);
		struct process_info quick = { .pid = 11, .ppid = 9, .start_ns = 20, .end_ns = 30,
					      .command = "quick", .exit_code = 0 };
		record_process(rec, &quick);
		struct rusage_info ru11 = { .pid = 11, .maxrss_bytes = 9000 };
		record_rusage(rec, &ru11);
	}
	db = recording_finish(rec, path.buf);
out:
	strbuf_release(&path);
	strbuf_release(&err);
	return db;
}

TEST(no_samples_absent, "without /proc samples every counter is absent (-1), and sums over them are -1, not 0")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	sqlite3 *db = make_recording(dir, 0);
	struct procstats ps;
	if (db && procstats_load(db, &ps) == 0) {
		CHECK_INT_EQ(ps.n, 2);
		for (size_t i = 0; i < ps.n; i++) {
			CHECK_INT_EQ(ps.v[i].user_ns, -1);
			CHECK_INT_EQ(ps.v[i].peak_rss_bytes, -1);
			CHECK_INT_EQ(ps.v[i].rchar, -1);
		}
		CHECK_INT_EQ(procstats_sum(&ps, PROCSTAT_FIELD(user_ns)), -1);
		CHECK_INT_EQ(procstats_sum(&ps, PROCSTAT_FIELD(rchar)), -1);
		procstats_release(&ps);
	} else {
		check_fail(__FILE__, __LINE__, "no recording or procstats_load failed");
	}
	sqlite3_close(db);
	check_rmtree(dir);
}

TEST(samples_last_reading, "with samples each process has its last CPU reading and its highest "
			   "memory figure; ru_maxrss only for a process nothing else read")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	sqlite3 *db = make_recording(dir, 1);
	struct procstats ps;
	if (db && procstats_load(db, &ps) == 0) {
		REQUIRE(ps.n == 3);
		const struct procstat *h = &ps.v[0], *m = &ps.v[1], *q = &ps.v[2];
		CHECK_INT_EQ(h->pid, 7); /* ordered by start time */
		CHECK_INT_EQ(h->user_ns, 300);
		CHECK_INT_EQ(h->sys_ns, 20);
		CHECK_INT_EQ(h->peak_rss_bytes, 2000); /* its readings, not ru_maxrss */
		CHECK_INT_EQ(m->peak_rss_bytes, 4000);
		CHECK_INT_EQ(q->pid, 11);
		CHECK_INT_EQ(q->peak_rss_bytes, 9000); /* nothing else read it */
		CHECK_INT_EQ(m->end_ns, -1);
		CHECK_INT_EQ(m->exit_code, -1);
		CHECK_INT_EQ(h->exit_code, 0);
		CHECK_STR_EQ(m->command, "main-app");
		/* sums skip absent figures rather than count them as zero */
		CHECK_INT_EQ(procstats_sum(&ps, PROCSTAT_FIELD(user_ns)), 800);
		CHECK_INT_EQ(procstats_sum(&ps, PROCSTAT_FIELD(rchar)), 70);
		CHECK_INT_EQ(procstats_sum(&ps, PROCSTAT_FIELD(read_bytes)), -1);
		procstats_release(&ps);
	} else {
		check_fail(__FILE__, __LINE__, "no recording or procstats_load failed");
	}
	sqlite3_close(db);
	check_rmtree(dir);
}

TEST(leader, "the leader is the process marked launched, not the first one started")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	sqlite3 *db = make_recording(dir, 0);
	struct procstats ps;
	if (db && procstats_load(db, &ps) == 0) {
		const struct procstat *l = procstats_leader(&ps);
		REQUIRE(l);
		CHECK_INT_EQ(l->pid, 9);
		ps.v[1].is_leader = 0; /* none marked: the first one */
		CHECK_INT_EQ(procstats_leader(&ps)->pid, 7);
		procstats_release(&ps);
	}
	struct procstats empty = { NULL, 0 };
	CHECK(procstats_leader(&empty) == NULL);
	sqlite3_close(db);
	check_rmtree(dir);
}

/* A shell (7) that ran a command (8, reaped at 40 and read before it) and
 * left one running past its own end (9). /proc/7/io at 90 holds 8's I/O. */
static sqlite3 *make_shell(const char *dir)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	sqlite3 *db = NULL;
	strbuf_addf(&path, "%s/shell.db", dir);
	if (recorder_open(path.buf, &rec, &err)) {
		check_fail(__FILE__, __LINE__, "recorder_open: %s", err.buf);
		goto out;
	}
	struct process_info sh = { .pid = 7, .ppid = 1, .start_ns = 0, .end_ns = 100,
				   .command = "sh", .is_leader = 1, .exit_code = 0 };
	struct process_info cmd = { .pid = 8, .ppid = 7, .start_ns = 5, .end_ns = 40,
				    .command = "cat", .exit_code = 0 };
	struct process_info bg = { .pid = 9, .ppid = 7, .start_ns = 6, .end_ns = -1,
				   .command = "daemon", .exit_code = -1 };
	record_process(rec, &sh);
	record_process(rec, &cmd);
	record_process(rec, &bg);
	record_meta_int(rec, "interval_ns", 5); /* the readings' interval, in these units */
	recorder_schema(rec, proc_schema);
	recorder_schema(rec, "INSERT INTO proc_samples(t_ns, pid, rchar, wchar) VALUES"
			     " (10, 7, 100, 10), (30, 8, 1000, 900), (90, 7, 1100, 910),"
			     " (90, 9, 500, 0)");
	db = recording_finish(rec, path.buf);
out:
	strbuf_release(&path);
	strbuf_release(&err);
	return db;
}

TEST(io_own, "a process's I/O is its own: what a shell reaped from its commands is theirs, "
	     "counted once")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	sqlite3 *db = make_shell(dir);
	struct procstats ps;
	if (db && procstats_load(db, &ps) == 0) {
		REQUIRE(ps.n == 3);
		CHECK_INT_EQ(ps.v[0].rchar, 100);
		CHECK_INT_EQ(ps.v[0].wchar, 10);
		CHECK_INT_EQ(ps.v[1].rchar, 1000);
		CHECK_INT_EQ(ps.v[2].rchar, 500);
		CHECK_INT_EQ(procstats_sum(&ps, PROCSTAT_FIELD(rchar)), 1600);
		CHECK_INT_EQ(procstats_sum(&ps, PROCSTAT_FIELD(syscr)), -1); /* an older recording */
		procstats_release(&ps);
		struct proc_point *v = NULL;
		size_t n = proc_timeline_load_own(db, "rchar", INT64_MAX, &v);
		REQUIRE(n == 3 && v);
		CHECK_INT_EQ(v[1].value, 1100); /* the command's reading at 30 */
		CHECK_INT_EQ(v[2].value, 1600); /* not again when the shell reaped it */
		free(v);
	} else {
		check_fail(__FILE__, __LINE__, "no recording or procstats_load failed");
	}
	sqlite3_close(db);
	check_rmtree(dir);
}

/* Three processes: 7 and 8 there before the run (start 0), 8 first read
 * late; 9 started during it. attached: meta attached = 1. */
static sqlite3 *make_timeline(const char *dir, int attached)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	sqlite3 *db = NULL;
	strbuf_addf(&path, "%s/profile-%d.db", dir, attached);
	if (recorder_open(path.buf, &rec, &err)) {
		check_fail(__FILE__, __LINE__, "recorder_open: %s", err.buf);
		goto out;
	}
	struct process_info a = { .pid = 7, .ppid = 1, .start_ns = 0, .end_ns = -1,
				  .command = "server", .is_leader = 1, .exit_code = -1 };
	struct process_info b = { .pid = 8, .ppid = 7, .start_ns = 0, .end_ns = -1,
				  .command = "worker", .exit_code = -1 };
	struct process_info c = { .pid = 9, .ppid = 7, .start_ns = 500, .end_ns = -1,
				  .command = "job", .exit_code = -1 };
	record_process(rec, &a);
	record_process(rec, &b);
	record_process(rec, &c);
	if (attached)
		record_meta_int(rec, "attached", 1);
	recorder_schema(rec, proc_schema);
	recorder_schema(rec, "INSERT INTO proc_samples(t_ns, pid, rss_bytes) VALUES"
			     " (100, 7, 100), (200, 7, 100), (200, 8, 1000),"
			     " (600, 7, 100), (600, 8, 1000), (600, 9, 50)");
	db = recording_finish(rec, path.buf);
out:
	strbuf_release(&path);
	strbuf_release(&err);
	return db;
}

TEST(timeline_attached, "attached, a process that was there before the run counts from its start: "
			"reading it late is not growth; one started during the run adds when read")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	for (int attached = 0; attached <= 1; attached++) {
		sqlite3 *db = make_timeline(dir, attached);
		struct proc_point *v = NULL;
		size_t n = db ? proc_timeline_load(db, "rss_bytes", INT64_MAX, &v) : 0;
		CHECK_INT_EQ(n, 3);
		if (n == 3) {
			CHECK_INT_EQ(v[0].value, attached ? 1100 : 100);
			CHECK_INT_EQ(v[1].value, 1100);
			CHECK_INT_EQ(v[2].value, 1150);
		}
		free(v);
		sqlite3_close(db);
	}
	check_rmtree(dir);
}

CHECK_MAIN()
