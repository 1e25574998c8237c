/* test_syscall_track: pairing system-call entries and exits per thread,
 * and what is summed per site, errno and file. */
#include "check.h"
#include "probes/syscall_track.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <string.h>

/* A file name that tells the fd and its generation apart. */
static int name_file(void *arg, pid_t pid, int fd, int64_t gen, char *buf, size_t cap)
{
	int *asked = arg;
	(*asked)++;
	snprintf(buf, cap, "/p%d/fd%d-gen%lld", (int)pid, fd, (long long)gen);
	return 0;
}

static long nr_of(const char *name)
{
	char buf[32];
	for (long nr = 0; nr < 1024; nr++)
		if (!strcmp(syscall_name(nr, buf, sizeof(buf)), name))
			return nr;
	return -1;
}

static const struct syscall_agg *agg_of(const struct syscall_tracker *t, long nr, uint32_t stack)
{
	const struct syscall_agg *v;
	size_t n = syscall_tracker_aggs(t, &v);
	for (size_t i = 0; i < n; i++)
		if (v[i].nr == nr && v[i].stack == stack)
			return &v[i];
	return NULL;
}

/* Writes t's tables into a fresh recording in dir (expecting `rows` rows of
 * syscalls) and opens it for reading; NULL (with a failure noted) when it
 * cannot. */
static sqlite3 *written(struct syscall_tracker *t, const char *dir, size_t rows)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&path, "%s/profile.db", dir);
	struct recorder *rec = NULL;
	sqlite3 *db = NULL;
	if (!recorder_open(path.buf, &rec, &err)) {
		size_t n = syscall_tracker_write(t, rec, NULL, NULL);
		CHECK(rows ? n == rows : n > 0);
		CHECK(!recorder_close(rec));
	}
	if (recording_open(path.buf, &db, &err))
		check_fail(__FILE__, __LINE__, "recording_open: %s", err.buf);
	strbuf_release(&path);
	strbuf_release(&err);
	return db;
}

TEST(pairs, "an exit pairs with its thread's entry: the call's time is exit - entry, per site")
{
	long wr = nr_of("write");
	REQUIRE(wr >= 0);
	int asked = 0;
	struct syscall_tracker *t = syscall_tracker_new(name_file, &asked);
	/* two threads interleaved, one site each */
	syscall_tracker_enter(t, 10, 10, 1000, wr, 3);
	syscall_tracker_enter(t, 10, 11, 1100, wr, 4);
	syscall_tracker_exit(t, 10, 11, 1400, wr, 8, 7);
	syscall_tracker_exit(t, 10, 10, 1600, wr, 5, 6);
	syscall_tracker_enter(t, 10, 10, 2000, wr, 3);
	syscall_tracker_exit(t, 10, 10, 2100, wr, 5, 6);
	const struct syscall_agg *a = agg_of(t, wr, 6), *b = agg_of(t, wr, 7);
	REQUIRE(a && b);
	CHECK_INT_EQ(a->calls, 2);
	CHECK_INT_EQ(a->total_ns, 700);
	CHECK_INT_EQ(a->max_ns, 600);
	CHECK_INT_EQ(a->bytes, 10);
	CHECK_INT_EQ(a->untimed, 0);
	CHECK_INT_EQ(b->calls, 1);
	CHECK_INT_EQ(b->total_ns, 300);
	CHECK_INT_EQ(syscall_tracker_calls(t), 3);
	CHECK_INT_EQ(asked, 2); /* fd 3 and fd 4, each named once */
	syscall_tracker_free(t);
}

TEST(untimed, "an exit without its entry, or with another call's, is counted but not timed")
{
	long rd = nr_of("read"), cl = nr_of("close");
	REQUIRE(rd >= 0 && cl >= 0);
	struct syscall_tracker *t = syscall_tracker_new(NULL, NULL);
	syscall_tracker_exit(t, 1, 1, 50, rd, 1, 0); /* began before sonde followed */
	syscall_tracker_enter(t, 1, 1, 100, cl, 3);
	syscall_tracker_exit(t, 1, 1, 200, rd, 1, 0); /* the close's exit was lost */
	syscall_tracker_enter(t, 1, 2, 300, rd, 3);
	syscall_tracker_thread_exit(t, 2);
	syscall_tracker_exit(t, 1, 2, 400, rd, 1, 0); /* a recycled tid */
	const struct syscall_agg *a = agg_of(t, rd, 0);
	REQUIRE(a);
	CHECK_INT_EQ(a->calls, 3);
	CHECK_INT_EQ(a->untimed, 3);
	CHECK_INT_EQ(a->total_ns, 0);
	syscall_tracker_free(t);
}

TEST(errors_files, "failed calls count per errno and move no bytes; a closed fd's next file "
		   "is a new one, named with its generation; the tables are written")
{
	long op = nr_of("openat"), rd = nr_of("read"), cl = nr_of("close");
	REQUIRE(op >= 0 && rd >= 0 && cl >= 0);
	int asked = 0;
	struct syscall_tracker *t = syscall_tracker_new(name_file, &asked);
	for (int i = 0; i < 3; i++) {
		syscall_tracker_enter(t, 5, 5, 10 * i, op, -100);
		syscall_tracker_exit(t, 5, 5, 10 * i + 1, op, -2 /* ENOENT */, 1);
	}
	syscall_tracker_enter(t, 5, 5, 100, rd, 3);
	syscall_tracker_exit(t, 5, 5, 101, rd, 100, 2);
	syscall_tracker_enter(t, 5, 5, 110, cl, 3);
	syscall_tracker_exit(t, 5, 5, 111, cl, 0, 3);
	syscall_tracker_enter(t, 5, 5, 120, rd, 3);
	syscall_tracker_exit(t, 5, 5, 121, rd, 7, 2);
	syscall_tracker_enter(t, 5, 5, 130, rd, 3);
	syscall_tracker_exit(t, 5, 5, 131, rd, -9 /* EBADF */, 2);
	const struct syscall_agg *o = agg_of(t, op, 1);
	REQUIRE(o);
	CHECK_INT_EQ(o->errors, 3);
	CHECK_INT_EQ(o->bytes, 0);
	CHECK_INT_EQ(asked, 2);

	char *dir = check_tmpdir();
	REQUIRE(dir);
	sqlite3 *db = written(t, dir, 0);
	if (db) {
		double v = -1;
		CHECK(!recording_query_double(db,
					      "SELECT calls FROM syscall_errors WHERE"
					      " name = 'openat' AND errno = 2",
					      &v));
		CHECK(v == 3);
		CHECK(!recording_query_double(db,
					      "SELECT read_bytes FROM syscall_files WHERE"
					      " path = '/p5/fd3-gen0'",
					      &v));
		CHECK(v == 100);
		CHECK(!recording_query_double(db,
					      "SELECT read_bytes FROM syscall_files WHERE"
					      " path = '/p5/fd3-gen1'",
					      &v));
		CHECK(v == 7);
		CHECK(!recording_query_double(db,
					      "SELECT sum(calls) FROM syscalls WHERE"
					      " name = 'read' AND path IS NULL",
					      &v));
		CHECK(v == 1); /* the failed read: no file */
		CHECK(!recording_query_double(db,
					      "SELECT count(*) FROM syscalls WHERE"
					      " name = 'read' AND path IS NOT NULL",
					      &v));
		CHECK(v == 2); /* one row per file */
		sqlite3_close(db);
	}
	check_rmtree(dir);
	syscall_tracker_free(t);
}

TEST(stretches, "each row's calls are counted per 100 ms stretch of the run, by the exit's "
		"time; a flush names its file")
{
	long wr = nr_of("write"), fs = nr_of("fsync");
	REQUIRE(wr >= 0 && fs >= 0);
	int asked = 0;
	struct syscall_tracker *t = syscall_tracker_new(name_file, &asked);
	int64_t ms = 1000000;
	syscall_tracker_enter(t, 5, 5, 10 * ms, wr, 3);
	syscall_tracker_exit(t, 5, 5, 12 * ms, wr, 10, 1);
	syscall_tracker_enter(t, 5, 5, 95 * ms, wr, 3);
	syscall_tracker_exit(t, 5, 5, 130 * ms, wr, 20, 1); /* returns in the second stretch */
	syscall_tracker_enter(t, 5, 5, 140 * ms, fs, 3);
	syscall_tracker_exit(t, 5, 5, 190 * ms, fs, 0, 1);

	char *dir = check_tmpdir();
	REQUIRE(dir);
	sqlite3 *db = written(t, dir, 2);
	if (db) {
		double v = -1;
		CHECK(!recording_query_double(db,
					      "SELECT t.bytes FROM syscall_timeline t JOIN syscalls s"
					      " ON s.pid = t.pid AND s.id = t.id WHERE s.name = 'write'"
					      " AND t.t_ns = 100000000",
					      &v));
		CHECK(v == 20);
		CHECK(!recording_query_double(db,
					      "SELECT count(*) FROM syscall_timeline WHERE t_ns = 0",
					      &v));
		CHECK(v == 1);
		CHECK(!recording_query_double(db,
					      "SELECT t.total_ns FROM syscall_timeline t JOIN syscalls s"
					      " ON s.pid = t.pid AND s.id = t.id WHERE s.name = 'fsync'"
					      " AND s.path = '/p5/fd3-gen0'",
					      &v));
		CHECK(v == 50 * ms);
		sqlite3_close(db);
	}
	check_rmtree(dir);
	syscall_tracker_free(t);
}

TEST(names, "calls are named by number on x86_64, numbered otherwise; the byte movers are known")
{
	char buf[32];
#if defined(__x86_64__)
	CHECK_STR_EQ(syscall_name(1, buf, sizeof(buf)), "write");
	CHECK_STR_EQ(syscall_name(74, buf, sizeof(buf)), "fsync");
#endif
	CHECK_STR_EQ(syscall_name(100000, buf, sizeof(buf)), "syscall_100000");
	CHECK_INT_EQ(syscall_moves_bytes("read"), 1);
	CHECK_INT_EQ(syscall_moves_bytes("sendmsg"), 2);
	CHECK_INT_EQ(syscall_moves_bytes("fsync"), 0);
	CHECK_INT_EQ(syscall_syncs_fd("fdatasync"), 1);
	CHECK_INT_EQ(syscall_syncs_fd("write"), 0);
}

CHECK_MAIN()
