/* test_recorder: what a run writes to profile.db is what a report reads back. */
#include "check.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "util/strbuf.h"

#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>

static char *db_path(const char *dir, struct strbuf *sb)
{
	strbuf_reset(sb);
	strbuf_addf(sb, "%s/profile.db", dir);
	return sb->buf;
}

static int64_t count(sqlite3 *db, const char *sql)
{
	double v = -1;
	if (recording_query_double(db, sql, &v))
		return -1;
	return (int64_t)v;
}

TEST(roundtrip, "meta, notes, processes and output lines written and closed are read back by recording_open")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	REQUIRE(recorder_open(db_path(dir, &path), &rec, &err) == 0);
	record_meta(rec, "command", "python3 train.py");
	record_meta_int(rec, "wall_ns", 1500000000);
	record_note(rec, 250, "proc", "info", "started");
	struct process_info p = { .pid = 100, .ppid = 1, .start_ns = 0, .end_ns = -1,
				  .command = "python3 train.py", .is_leader = 1, .exit_code = -1 };
	record_process(rec, &p);
	/* the process ends: a later row for the same pid updates it */
	struct process_info q = { .pid = 100, .ppid = 1, .start_ns = 0, .end_ns = 1400000000,
				  .command = NULL, .is_leader = 0, .exit_code = 3 };
	record_process(rec, &q);
	/* A kernel name keeps a real command line, unless that one was read
	 * before an exec (a child of sh seen as "sh -c ...", dead as "[ls]"). */
	struct process_info sh = { .pid = 101, .ppid = 100, .end_ns = -1, .command = "sh -c ls",
				   .exit_code = -1 };
	record_process(rec, &sh);
	struct process_info zombie = { .pid = 101, .ppid = 100, .end_ns = 5, .command = "[sh]",
				       .exit_code = 0 };
	record_process(rec, &zombie);
	struct process_info execd = { .pid = 102, .ppid = 100, .end_ns = -1, .command = "sh -c ls",
				      .exit_code = -1 };
	record_process(rec, &execd);
	struct process_info gone = { .pid = 102, .ppid = 100, .end_ns = 5, .command = "[ls]",
				     .exit_code = 0, .command_stale = 1 };
	record_process(rec, &gone);
	record_output_line(rec, 10, 100, 1, "hello", 5, 0);
	record_output_line(rec, 20, 100, 2, "bin\0ary\xff", 8, 1);
	record_probe(rec, "proc", "ok", NULL);
	CHECK(recorder_failed(rec) == NULL);
	CHECK_INT_EQ(recorder_close(rec), 0);

	struct stat st;
	strbuf_addstr(&path, "-wal");
	CHECK(stat(path.buf, &st) != 0); /* back to one plain file */

	sqlite3 *db = NULL;
	REQUIRE(recording_open(db_path(dir, &path), &db, &err) == 0);
	char *cmd = recording_meta_text(db, "command");
	CHECK_STR_EQ(cmd, "python3 train.py");
	free(cmd);
	int64_t v = 0;
	CHECK_INT_EQ(recording_meta_int(db, "wall_ns", &v), 0);
	CHECK_INT_EQ(v, 1500000000);
	CHECK_INT_EQ(recording_meta_int(db, "schema", &v), 0);
	CHECK_INT_EQ(v, RECORDING_SCHEMA_VERSION);
	CHECK(recording_meta_int(db, "absent", &v) != 0);
	CHECK(recording_meta_text(db, "absent") == NULL);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM notes WHERE text='started' AND t_ns=250"), 1);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM processes"), 3);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM processes WHERE pid=101 AND command='sh -c ls'"),
		     1);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM processes WHERE pid=102 AND command='[ls]'"), 1);
	CHECK_INT_EQ(count(db, "SELECT end_ns FROM processes WHERE pid=100"), 1400000000);
	CHECK_INT_EQ(count(db, "SELECT exit_code FROM processes WHERE pid=100"), 3);
	CHECK_INT_EQ(count(db, "SELECT is_leader FROM processes WHERE pid=100"), 1);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM processes WHERE command='python3 train.py'"), 1);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM output_lines"), 2);
	CHECK_INT_EQ(count(db, "SELECT length(CAST(line AS BLOB)) FROM output_lines WHERE stream=2"), 8);
	CHECK_INT_EQ(count(db, "SELECT truncated FROM output_lines WHERE stream=2"), 1);
	CHECK(recording_has_table(db, "probes"));
	CHECK(!recording_has_table(db, "no_such_table"));
	sqlite3_stmt *s;
	REQUIRE(sqlite3_prepare_v2(db, "SELECT line FROM output_lines WHERE stream=2", -1, &s, NULL) == SQLITE_OK);
	REQUIRE(sqlite3_step(s) == SQLITE_ROW);
	CHECK(sqlite3_column_bytes(s, 0) == 8 && !memcmp(sqlite3_column_blob(s, 0), "bin\0ary\xff", 8));
	sqlite3_finalize(s);
	sqlite3_close(db);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(dir);
}

TEST(newer_schema_refused, "a recording with a newer schema is refused with a message that says so")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	REQUIRE(recorder_open(db_path(dir, &path), &rec, &err) == 0);
	record_meta_int(rec, "schema", RECORDING_SCHEMA_VERSION + 1);
	recorder_close(rec);
	sqlite3 *db = (sqlite3 *)&err; /* must stay untouched */
	CHECK(recording_open(path.buf, &db, &err) != 0);
	CHECK(db == (sqlite3 *)&err);
	CHECK_CONTAINS(err.buf, "newer");
	CHECK_CONTAINS(err.buf, "profile.db");
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(dir);
}

TEST(not_a_recording, "a missing file, a text file and a foreign SQLite database are refused with a message")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	sqlite3 *db = NULL;
	strbuf_addf(&path, "%s/missing.db", dir);
	CHECK(recording_open(path.buf, &db, &err) != 0);
	CHECK_CONTAINS(err.buf, "No such file");

	strbuf_reset(&path);
	strbuf_reset(&err);
	strbuf_addf(&path, "%s/text.db", dir);
	FILE *f = fopen(path.buf, "w");
	REQUIRE(f);
	fputs("this is not a database, it is a rather long line of plain text\n", f);
	fclose(f);
	CHECK(recording_open(path.buf, &db, &err) != 0);
	CHECK(err.len > 0);

	strbuf_reset(&path);
	strbuf_reset(&err);
	strbuf_addf(&path, "%s/other.db", dir);
	REQUIRE(sqlite3_open(path.buf, &db) == SQLITE_OK);
	sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL);
	sqlite3_close(db);
	db = NULL;
	CHECK(recording_open(path.buf, &db, &err) != 0);
	CHECK_CONTAINS(err.buf, "not a sonde recording");
	CHECK(db == NULL);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(dir);
}

TEST(flush_visible, "a forced tick makes written rows visible to another connection before close")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	REQUIRE(recorder_open(db_path(dir, &path), &rec, &err) == 0);
	record_note(rec, 1, "test", "event", "before flush");
	sqlite3 *db = NULL;
	REQUIRE(recording_open(path.buf, &db, &err) == 0);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM notes"), 0); /* still in the transaction */
	recorder_tick(rec, 1);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM notes"), 1);
	record_note(rec, 2, "test", "event", "after flush");
	recorder_tick(rec, 0); /* not due yet: stays pending */
	recorder_tick(rec, 1);
	CHECK_INT_EQ(count(db, "SELECT count(*) FROM notes"), 2);
	sqlite3_close(db);
	CHECK_INT_EQ(recorder_close(rec), 0);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(dir);
}

static void *reader_release_later(void *arg)
{
	usleep(300 * 1000);
	sqlite3_exec(arg, "COMMIT", NULL, NULL, NULL);
	return NULL;
}

TEST(open_waits_for_reader, "a reader holding the new recording's file open does not fail the run with 'database is locked'")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	FILE *f = fopen(db_path(dir, &path), "w"); /* as the run directory makes it: empty */
	REQUIRE(f);
	fclose(f);
	sqlite3 *db = NULL;
	REQUIRE(sqlite3_open(path.buf, &db) == SQLITE_OK);
	/* A poll of the file in a read transaction: a shared lock on it. */
	REQUIRE(sqlite3_exec(db, "BEGIN; SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) ==
		SQLITE_OK);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, reader_release_later, db) == 0);
	int ret = recorder_open(path.buf, &rec, &err);
	pthread_join(t, NULL);
	CHECK_INT_EQ(ret, 0);
	if (ret)
		printf("  recorder_open: %s\n", err.buf);
	sqlite3_close(db);
	if (!ret)
		CHECK_INT_EQ(recorder_close(rec), 0);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(dir);
}

TEST(open_fails_cleanly, "a recording that cannot be created is refused with a message naming the path")
{
	struct strbuf err = STRBUF_INIT;
	struct recorder *rec = (struct recorder *)&err;
	CHECK(recorder_open("/nonexistent-dir-for-sonde/profile.db", &rec, &err) != 0);
	CHECK(rec == (struct recorder *)&err);
	CHECK_CONTAINS(err.buf, "/nonexistent-dir-for-sonde/profile.db");
	strbuf_release(&err);
}

TEST(failure_sticks, "after a write error the recorder says why, drops later writes and close reports failure")
{
	char *dir = check_tmpdir();
	REQUIRE(dir);
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct recorder *rec = NULL;
	REQUIRE(recorder_open(db_path(dir, &path), &rec, &err) == 0);
	CHECK(recorder_schema(rec, "CREATE TABLE oops(") != 0);
	CHECK(recorder_failed(rec) != NULL);
	CHECK(recorder_db(rec) == NULL);
	record_note(rec, 1, "test", "event", "dropped");
	CHECK(recorder_failed(rec) != NULL);
	CHECK(recorder_close(rec) != 0);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(dir);
}

CHECK_MAIN()
