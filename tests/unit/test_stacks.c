/* test_stacks: frames and stacks are interned into one prefix tree. */
#include "check.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "record/stacks.h"
#include "util/strbuf.h"

#include <sqlite3.h>

struct fixture {
	char *dir;
	struct strbuf path;
	struct recorder *rec;
	struct stack_writer *sw;
};

static int fixture_open(struct fixture *fx)
{
	struct strbuf err = STRBUF_INIT;
	strbuf_init(&fx->path);
	fx->rec = NULL;
	fx->sw = NULL;
	fx->dir = check_tmpdir();
	if (!fx->dir)
		return -1;
	strbuf_addf(&fx->path, "%s/profile.db", fx->dir);
	int rc = recorder_open(fx->path.buf, &fx->rec, &err);
	if (rc)
		check_fail(__FILE__, __LINE__, "recorder_open: %s", err.buf);
	strbuf_release(&err);
	if (!rc)
		fx->sw = recorder_stacks(fx->rec);
	return rc || !fx->sw ? -1 : 0;
}

/* Closes the recorder and reopens the database for reading. */
static sqlite3 *fixture_reopen(struct fixture *fx)
{
	struct strbuf err = STRBUF_INIT;
	sqlite3 *db = NULL;
	CHECK_INT_EQ(recorder_close(fx->rec), 0);
	fx->rec = NULL;
	if (recording_open(fx->path.buf, &db, &err))
		check_fail(__FILE__, __LINE__, "recording_open: %s", err.buf);
	strbuf_release(&err);
	return db;
}

static void fixture_release(struct fixture *fx)
{
	recorder_close(fx->rec);
	strbuf_release(&fx->path);
	check_rmtree(fx->dir);
}

static int64_t frame(struct stack_writer *sw, const char *fn, const char *file, int line)
{
	struct frame_info f = { .function = fn, .file = file, .line = line, .module = "/bin/app",
				.kind = "native" };
	return stack_frame(sw, &f);
}

static int64_t q(sqlite3 *db, const char *sql)
{
	double v = -1;
	if (recording_query_double(db, sql, &v))
		return -1;
	return (int64_t)v;
}

TEST(same_frame_same_id, "the same frame interned twice has one id; a different file or line is another frame")
{
	struct fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	int64_t a = frame(fx.sw, "main", "app.c", 10);
	CHECK(a > 0);
	CHECK_INT_EQ(frame(fx.sw, "main", "app.c", 10), a);
	CHECK(frame(fx.sw, "main", "app.c", 11) != a);
	CHECK(frame(fx.sw, "main", "other.c", 10) != a);
	struct frame_info unknown = { 0 };
	int64_t u = stack_frame(fx.sw, &unknown);
	CHECK(u > 0);
	sqlite3 *db = fixture_reopen(&fx);
	REQUIRE(db);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM frames"), 4);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM frames WHERE function='[unknown]' AND kind='native'"
			   " AND line IS NULL"), 1);
	sqlite3_close(db);
	fixture_release(&fx);
}

TEST(same_stack_same_node, "the same stack interned twice gives the same leaf node and writes no new nodes")
{
	struct fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	int64_t ids[3] = { frame(fx.sw, "main", NULL, 0), frame(fx.sw, "run", NULL, 0),
			   frame(fx.sw, "work", NULL, 0) };
	int64_t leaf = stack_intern(fx.sw, ids, 3);
	CHECK(leaf > 0);
	CHECK_INT_EQ(stack_intern(fx.sw, ids, 3), leaf);
	int64_t prefix = stack_intern(fx.sw, ids, 2);
	CHECK(prefix > 0 && prefix != leaf);
	CHECK_INT_EQ(stack_intern(fx.sw, ids, 0), 0);
	sqlite3 *db = fixture_reopen(&fx);
	REQUIRE(db);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM stack_nodes"), 3);
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT depth FROM stack_nodes WHERE id=%lld", (long long)leaf);
	CHECK_INT_EQ(q(db, sql), 3);
	snprintf(sql, sizeof(sql), "SELECT parent FROM stack_nodes WHERE id=%lld", (long long)leaf);
	CHECK_INT_EQ(q(db, sql), prefix);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM stack_nodes WHERE parent=0 AND depth=1"), 1);
	sqlite3_close(db);
	fixture_release(&fx);
}

TEST(two_paths_two_nodes, "one function reached by two call paths is two nodes with the same frame")
{
	struct fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	int64_t m = frame(fx.sw, "main", NULL, 0), a = frame(fx.sw, "a", NULL, 0),
		b = frame(fx.sw, "b", NULL, 0), f = frame(fx.sw, "f", NULL, 0);
	int64_t p1[] = { m, a, f }, p2[] = { m, b, f };
	int64_t n1 = stack_intern(fx.sw, p1, 3), n2 = stack_intern(fx.sw, p2, 3);
	CHECK(n1 > 0 && n2 > 0);
	CHECK(n1 != n2);
	/* f called directly from main is a third place */
	int64_t p3[] = { m, f };
	int64_t n3 = stack_intern(fx.sw, p3, 2);
	CHECK(n3 != n1 && n3 != n2);
	struct sample_info s = { .t_ns = 5, .pid = 1, .tid = 1, .node = n1, .source = "cpu",
				 .weight = 1, .on_cpu = 1, .gil = -1 };
	stack_sample(fx.sw, &s);
	s.node = n2;
	stack_sample(fx.sw, &s);
	stack_thread_name(fx.sw, 1, 1, "main-thread");
	sqlite3 *db = fixture_reopen(&fx);
	REQUIRE(db);
	char sql[160];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM stack_nodes WHERE frame=%lld", (long long)f);
	CHECK_INT_EQ(q(db, sql), 3);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM stack_nodes"), 6); /* main, a, b, and f three times */
	CHECK_INT_EQ(q(db, "SELECT count(DISTINCT node) FROM samples WHERE source='cpu'"), 2);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM samples WHERE gil IS NULL AND on_cpu=1"), 2);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM threads WHERE name='main-thread'"), 1);
	sqlite3_close(db);
	fixture_release(&fx);
}

TEST(one_writer_per_run, "every probe that asks gets the run's one stack writer")
{
	struct fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	CHECK(recorder_stacks(fx.rec) == fx.sw);
	fixture_release(&fx);
}

TEST(given_name_wins, "a thread name the program gave replaces the kernel's, and a later kernel name does not put it back")
{
	struct fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	stack_thread_name(fx.sw, 10, 11, "python3");
	stack_thread_name_given(fx.sw, 10, 11, "loader");
	stack_thread_name(fx.sw, 10, 11, "python3");
	stack_thread_name(fx.sw, 10, 12, "python3");
	stack_thread_name_given(fx.sw, 10, 13, "worker-2");
	sqlite3 *db = fixture_reopen(&fx);
	REQUIRE(db);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM threads WHERE tid = 11 AND name = 'loader'"), 1);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM threads WHERE tid = 12 AND name = 'python3'"), 1);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM threads WHERE tid = 13 AND name = 'worker-2'"), 1);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM threads"), 3);
	sqlite3_close(db);
	fixture_release(&fx);
}

TEST(samples_batched, "samples written in a batch are the rows of each one, in order, whatever the batch's size (one row, a full statement, a statement and the rest)")
{
	struct fixture fx;
	if (fixture_open(&fx)) {
		fixture_release(&fx);
		REQUIRE(0);
	}
	int64_t node = stack_intern(fx.sw, (int64_t[]){ frame(fx.sw, "main", "a.c", 1) }, 1);
	struct sample_info v[19];
	for (int i = 0; i < 19; i++)
		v[i] = (struct sample_info){ .t_ns = 1000 + i, .pid = 7, .tid = 70 + i % 3,
					     .node = node, .source = i % 2 ? "python" : "cpu",
					     .weight = i + 1, .on_cpu = i % 4 == 3 ? -1 : i % 3,
					     .gil = i % 5 == 4 ? -1 : i % 2 };
	stack_samples(fx.sw, v, 1);
	stack_samples(fx.sw, v + 1, 8);
	stack_samples(fx.sw, v + 9, 10);
	sqlite3 *db = fixture_reopen(&fx);
	REQUIRE(db);
	CHECK_INT_EQ(q(db, "SELECT count(*) FROM samples"), 19);
	sqlite3_stmt *st;
	REQUIRE(sqlite3_prepare_v2(db, "SELECT t_ns, pid, tid, node, source, weight, on_cpu, gil"
				       " FROM samples ORDER BY rowid", -1, &st, NULL) == SQLITE_OK);
	for (int i = 0; i < 19 && sqlite3_step(st) == SQLITE_ROW; i++) {
		CHECK_INT_EQ(sqlite3_column_int64(st, 0), v[i].t_ns);
		CHECK_INT_EQ(sqlite3_column_int(st, 2), v[i].tid);
		CHECK_INT_EQ(sqlite3_column_int64(st, 3), node);
		CHECK_STR_EQ((const char *)sqlite3_column_text(st, 4), v[i].source);
		CHECK_INT_EQ(sqlite3_column_int64(st, 5), v[i].weight);
		CHECK_INT_EQ(sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 6),
			     v[i].on_cpu);
		CHECK_INT_EQ(sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 7),
			     v[i].gil);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	fixture_release(&fx);
}

CHECK_MAIN()
