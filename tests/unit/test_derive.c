/* test_derive: the derive stage's order of passes, and the Python + native
 * stitch pass over a small recording. */
#include "check.h"
#include "derive/derive.h"
#include "record/process_key.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "record/stacks.h"
#include "util/strbuf.h"

/* ---- toy passes: the order follows what they read and write ---- */

static int ran[8], nran;

/* Each toy pass notes that it ran; toy 4 fails. */
#define TOY(id)                                                                                    \
	static int64_t toy_##id##_run(const struct derive_ctx *ctx, struct strbuf *why)            \
	{                                                                                          \
		(void)ctx;                                                                         \
		if (nran < 8)                                                                      \
			ran[nran++] = id;                                                          \
		if (id == 4)                                                                       \
			strbuf_addstr(why, "toy failure");                                         \
		return id == 4 ? -1 : 0;                                                           \
	}

TOY(1)
TOY(2)
TOY(3)
TOY(4)

static const char *const reads_mixed[] = { "samples:mixed", NULL };
static const char *const writes_mixed[] = { "samples:mixed", NULL };
static const char *const reads_cpu[] = { "samples:cpu", NULL };
static const char *const writes_phases[] = { "phases", NULL };
static const char *const reads_phases[] = { "phases", NULL };

/* Reads what the next one writes. */
static const struct derive_pass toy_reader = { .name = "reader",
					       .reads = reads_mixed,
					       .run = toy_1_run };
static const struct derive_pass toy_writer = {
	.name = "writer", .reads = reads_cpu, .writes = writes_mixed, .run = toy_2_run
};
static const struct derive_pass toy_apart = {
	.name = "apart", .reads = reads_cpu, .writes = writes_phases, .run = toy_3_run
};
static const struct derive_pass toy_loop_a = {
	.name = "loop_a", .reads = reads_phases, .writes = writes_mixed, .run = toy_1_run
};
static const struct derive_pass toy_failing = {
	.name = "failing", .reads = reads_cpu, .writes = writes_phases, .run = toy_4_run
};
static const struct derive_pass toy_loop_b = {
	.name = "loop_b", .reads = reads_mixed, .writes = writes_phases, .run = toy_2_run
};

TEST(meets, "a whole table meets its parts, and two different parts of one table do not meet")
{
	CHECK(derive_meets("samples", "samples:mixed"));
	CHECK(derive_meets("samples:mixed", "samples"));
	CHECK(derive_meets("samples:mixed", "samples:mixed"));
	CHECK(!derive_meets("samples:cpu", "samples:mixed"));
	CHECK(!derive_meets("samples_x", "samples"));
	CHECK(!derive_meets("sample", "samples"));
}

TEST(order_needs, "a pass that reads what another writes runs after it, whatever the table says")
{
	const struct derive_pass *table[] = { &toy_reader, &toy_apart, &toy_writer, NULL };
	const struct derive_pass *out[DERIVE_PASSES_MAX];
	struct strbuf why = STRBUF_INIT;
	REQUIRE(derive_order(table, out, &why) == 3);
	CHECK(out[0] == &toy_apart); /* first in the table that waits on nothing */
	CHECK(out[1] == &toy_writer);
	CHECK(out[2] == &toy_reader);
	strbuf_release(&why);
}

TEST(order_cycle, "passes that wait on each other are refused, each named, and none runs")
{
	const struct derive_pass *table[] = { &toy_apart, &toy_loop_a, &toy_loop_b, NULL };
	const struct derive_pass *out[DERIVE_PASSES_MAX];
	struct strbuf why = STRBUF_INIT;
	CHECK(derive_order(table, out, &why) < 0);
	CHECK_CONTAINS(why.buf, "loop_a");
	CHECK_CONTAINS(why.buf, "loop_b");
	CHECK_NOT_CONTAINS(why.buf, "apart");
	strbuf_release(&why);
}

TEST(table_orders, "the session's table of passes has an order")
{
	const struct derive_pass *out[DERIVE_PASSES_MAX];
	struct strbuf why = STRBUF_INIT;
	size_t n = 0;
	while (derive_table[n])
		n++;
	CHECK_INT_EQ(derive_order(derive_table, out, &why), n);
	CHECK_INT_EQ(why.len, 0);
	strbuf_release(&why);
}

/* ---- a recording ---- */

struct rec_fixture {
	char *dir;
	struct recorder *rec;
	struct stack_writer *sw;
};

static int fixture_open(struct rec_fixture *fx)
{
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT;
	int rc = -1;
	fx->rec = NULL;
	if (!(fx->dir = check_tmpdir()))
		goto out;
	strbuf_addf(&path, "%s/profile.db", fx->dir);
	if (recorder_open(path.buf, &fx->rec, &err)) {
		check_fail(__FILE__, __LINE__, "recorder_open: %s", err.buf);
		goto out;
	}
	fx->sw = recorder_stacks(fx->rec);
	rc = fx->sw ? 0 : -1;
out:
	strbuf_release(&err);
	strbuf_release(&path);
	return rc;
}

static void fixture_close(struct rec_fixture *fx)
{
	if (fx->rec)
		recorder_close(fx->rec);
	check_rmtree(fx->dir);
}

static int64_t frame(struct rec_fixture *fx, const char *fn, const char *module, const char *kind)
{
	struct frame_info fi = { fn, NULL, 0, module, kind };
	return stack_frame(fx->sw, &fi);
}

static void sample_of(struct rec_fixture *fx, const char *source, int64_t t_ns, pid_t pid,
		      pid_t tid, const int64_t *frames, size_t n, int on_cpu)
{
	struct sample_info si = { .t_ns = t_ns,
				  .pid = pid,
				  .tid = tid,
				  .node = stack_intern(fx->sw, frames, n),
				  .source = source,
				  .weight = 1,
				  .on_cpu = on_cpu,
				  .gil = -1 };
	stack_sample(fx->sw, &si);
}

static void sample_on(struct rec_fixture *fx, const char *source, int64_t t_ns, pid_t tid,
		      const int64_t *frames, size_t n, int on_cpu)
{
	sample_of(fx, source, t_ns, 100, tid, frames, n, on_cpu);
}

static void sample(struct rec_fixture *fx, const char *source, int64_t t_ns, pid_t tid,
		   const int64_t *frames, size_t n)
{
	sample_on(fx, source, t_ns, tid, frames, n, 1);
}

/* The functions of the stack of source's sample at t_ns, outermost first,
 * joined with ' '. */
static void stack_of(struct rec_fixture *fx, const char *source, int64_t t_ns, struct strbuf *sb)
{
	sqlite3_stmt *st;
	sqlite3 *db = recorder_db(fx->rec);
	if (sqlite3_prepare_v2(
		    db,
		    "WITH RECURSIVE up(id, depth) AS (SELECT node, 0 FROM samples"
		    " WHERE source = ?1 AND t_ns = ?2 UNION ALL SELECT n.parent,"
		    " up.depth + 1 FROM stack_nodes n JOIN up ON n.id = up.id WHERE"
		    " n.parent > 0) SELECT f.function FROM up JOIN stack_nodes n ON"
		    " n.id = up.id JOIN frames f ON f.id = n.frame ORDER BY up.depth DESC",
		    -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, t_ns);
	while (sqlite3_step(st) == SQLITE_ROW)
		strbuf_addf(sb, "%s%s", sb->len ? " " : "",
			    (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

static int64_t count_of(struct rec_fixture *fx, const char *source)
{
	sqlite3_stmt *st;
	int64_t n = -1;
	if (sqlite3_prepare_v2(recorder_db(fx->rec),
			       "SELECT count(*) FROM samples WHERE source = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

#define MS 1000000LL

TEST(stitch, "the stitch pass puts a cpu sample's C frames below the Python stack of its "
	     "thread's nearest python sample, and leaves a sample with none native")
{
	struct rec_fixture fx;
	if (fixture_open(&fx))
		goto out;
	const char *py = "/usr/bin/python3.11";
	int64_t native[] = { frame(&fx, "main", py, "native"),
			     frame(&fx, "_PyEval_EvalFrameDefault", py, "native"),
			     frame(&fx, "PyObject_Vectorcall", py, "native"),
			     frame(&fx, "deflate", "/usr/lib/libz.so.1", "native") };
	int64_t python[] = { frame(&fx, "<module>", "app.py", "python"),
			     frame(&fx, "compress", "app.py", "python") };
	record_meta_int(fx.rec, "python_rate_hz", 100); /* 10 ms: within 15 ms */
	sample(&fx, "python", 100 * MS, 7, python, 2);
	sample(&fx, "cpu", 104 * MS, 7, native, 4);
	sample(&fx, "cpu", 300 * MS, 7, native, 4); /* 200 ms from any python sample */
	sample(&fx, "cpu", 101 * MS, 8, native, 2); /* another thread: no python sample */
	CHECK(derive_run(fx.rec, derive_table) == 0);
	struct strbuf sb = STRBUF_INIT;
	stack_of(&fx, "mixed", 104 * MS, &sb);
	CHECK_STR_EQ(sb.buf, "<module> compress deflate");
	strbuf_reset(&sb);
	stack_of(&fx, "mixed", 300 * MS, &sb);
	CHECK_STR_EQ(sb.buf, "main _PyEval_EvalFrameDefault PyObject_Vectorcall deflate");
	strbuf_reset(&sb);
	stack_of(&fx, "mixed", 101 * MS, &sb);
	CHECK_STR_EQ(sb.buf, "main _PyEval_EvalFrameDefault");
	strbuf_release(&sb);
	CHECK_INT_EQ(count_of(&fx, "mixed"), 3);
	int64_t stitched = -1;
	CHECK(!recording_meta_int(recorder_db(fx.rec), "mixed_samples_stitched", &stitched));
	CHECK_INT_EQ(stitched, 1);
out:
	fixture_close(&fx);
}

TEST(stitch_ran, "a cpu sample takes the Python stack of its thread's nearest python sample "
		 "taken while the thread ran, not a nearer one taken while it waited for a CPU")
{
	struct rec_fixture fx;
	if (fixture_open(&fx))
		goto out;
	const char *py = "/usr/bin/python3.11";
	int64_t native[] = { frame(&fx, "main", py, "native"),
			     frame(&fx, "_PyEval_EvalFrameDefault", py, "native"),
			     frame(&fx, "encoder_call", "_json.so", "native") };
	int64_t loop[] = { frame(&fx, "<module>", "app.py", "python"),
			   frame(&fx, "main", "app.py", "python") };
	int64_t record[] = { loop[0], loop[1], frame(&fx, "record", "app.py", "python") };
	record_meta_int(fx.rec, "python_rate_hz", 100);
	/* Preempted in main's clock read: read at 100 and 110 ms while queued
	 * (2); running in record at 122 ms. */
	sample_on(&fx, "python", 100 * MS, 7, loop, 2, 2);
	sample_on(&fx, "python", 110 * MS, 7, loop, 2, 2);
	sample_on(&fx, "python", 122 * MS, 7, record, 3, 1);
	sample(&fx, "cpu", 113 * MS, 7, native, 3);
	/* Only waiting samples near: the nearest of them. */
	sample_on(&fx, "python", 400 * MS, 7, loop, 2, 0);
	sample(&fx, "cpu", 405 * MS, 7, native, 3);
	CHECK(derive_run(fx.rec, derive_table) == 0);
	struct strbuf sb = STRBUF_INIT;
	stack_of(&fx, "mixed", 113 * MS, &sb);
	CHECK_STR_EQ(sb.buf, "<module> main record encoder_call");
	strbuf_reset(&sb);
	stack_of(&fx, "mixed", 405 * MS, &sb);
	CHECK_STR_EQ(sb.buf, "<module> main encoder_call");
	strbuf_release(&sb);
out:
	fixture_close(&fx);
}

TEST(stitch_none, "the stitch pass writes nothing for a recording without python samples")
{
	struct rec_fixture fx;
	if (fixture_open(&fx))
		goto out;
	int64_t native[] = { frame(&fx, "main", "/usr/bin/prog", "native") };
	record_meta_int(fx.rec, "python_rate_hz", 100);
	sample(&fx, "cpu", 5 * MS, 7, native, 1);
	CHECK(derive_run(fx.rec, derive_table) == 0);
	CHECK_INT_EQ(count_of(&fx, "mixed"), 0);
	int64_t stitched;
	CHECK(recording_meta_int(recorder_db(fx.rec), "mixed_samples_stitched", &stitched));
out:
	fixture_close(&fx);
}

/* The count of rows sql finds (-1: it failed). */
static double rows(struct rec_fixture *fx, const char *sql)
{
	double n = -1;
	if (recording_query_double(recorder_db(fx->rec), sql, &n))
		return -1;
	return n;
}

TEST(process_keys, "a later process with a reused pid gets its rows by time, its own threads, "
		   "and a note naming the totals that stay with the first")
{
	struct rec_fixture fx;
	if (fixture_open(&fx))
		goto out;
	const int64_t key = process_key_make(100, 1);
	struct process_info first = { .pid = 100, .ppid = 1, .start_ns = 0, .end_ns = 1000 * MS,
				      .exit_code = 0 };
	struct process_info later = { .pid = (pid_t)key, .ppid = 1, .start_ns = 1500 * MS,
				      .end_ns = 3000 * MS, .exit_code = 0 };
	struct process_info third = { .pid = (pid_t)process_key_make(100, 2), .ppid = 1,
				      .start_ns = 3500 * MS, .end_ns = 4500 * MS, .exit_code = 0 };
	record_process(fx.rec, &first);
	record_process(fx.rec, &later);
	record_process(fx.rec, &third);
	int64_t native[] = { frame(&fx, "main", "/usr/bin/prog", "native") };
	sample(&fx, "cpu", 500 * MS, 100, native, 1);
	sample(&fx, "cpu", 2000 * MS, 100, native, 1);
	sample(&fx, "cpu", 2100 * MS, 101, native, 1);
	sample(&fx, "cpu", 4000 * MS, 100, native, 1);
	stack_thread_name(fx.sw, 100, 100, "main");
	stack_thread_name(fx.sw, 100, 101, "worker");
	REQUIRE(!recorder_schema(fx.rec, "CREATE TABLE per_thread(pid INTEGER, tid INTEGER, n INTEGER);"
				       "INSERT INTO per_thread VALUES(100, 100, 1), (100, 101, 2);"
				       "CREATE TABLE per_pid(pid INTEGER, n INTEGER);"
				       "INSERT INTO per_pid VALUES(100, 3);"));
	CHECK(derive_run(fx.rec, derive_table) == 0);
	CHECK(rows(&fx, "SELECT count(*) FROM samples WHERE source = 'cpu' AND pid = 100"
			" AND t_ns = 500000000") == 1);
	CHECK(rows(&fx, "SELECT count(*) FROM samples WHERE source = 'cpu' AND pid = 4194404") ==
	      2);
	/* A third process with the pid takes the rows from its own start on. */
	CHECK(rows(&fx, "SELECT count(*) FROM samples WHERE source = 'cpu' AND pid = 8388708"
			" AND t_ns = 4000000000") == 1);
	/* The main thread's tid is both's: its name is copied; the worker's moves. */
	CHECK(rows(&fx, "SELECT count(*) FROM threads WHERE pid = 4194404 AND tid = 100") == 1);
	CHECK(rows(&fx, "SELECT count(*) FROM threads WHERE pid = 100 AND tid = 100") == 1);
	CHECK(rows(&fx, "SELECT count(*) FROM threads WHERE pid = 4194404 AND tid = 101") == 1);
	CHECK(rows(&fx, "SELECT count(*) FROM threads WHERE pid = 100 AND tid = 101") == 0);
	CHECK(rows(&fx, "SELECT n FROM per_thread WHERE pid = 4194404") == 2);
	CHECK(rows(&fx, "SELECT n FROM per_thread WHERE pid = 100") == 1);
	CHECK(rows(&fx, "SELECT n FROM per_pid WHERE pid = 100") == 3);
	CHECK(rows(&fx, "SELECT count(*) FROM notes WHERE probe = 'derive' AND text LIKE"
			" '2 processes of the run had a pid an earlier one had:%per_pid%'") == 1);
out:
	fixture_close(&fx);
}

TEST(process_keys_none, "without a reused pid the keys pass moves nothing and notes nothing")
{
	struct rec_fixture fx;
	if (fixture_open(&fx))
		goto out;
	struct process_info only = { .pid = 100, .ppid = 1, .start_ns = 0, .end_ns = -1,
				     .exit_code = -1 };
	record_process(fx.rec, &only);
	int64_t native[] = { frame(&fx, "main", "/usr/bin/prog", "native") };
	sample(&fx, "cpu", 2000 * MS, 100, native, 1);
	CHECK(derive_run(fx.rec, derive_table) == 0);
	CHECK(rows(&fx, "SELECT count(*) FROM samples WHERE pid = 100") == 1);
	CHECK(rows(&fx, "SELECT count(*) FROM notes WHERE probe = 'derive'") == 0);
out:
	fixture_close(&fx);
}

TEST(run_order, "the stage runs a table's passes in the order of their needs, and a pass that "
		"fails leaves a note while the others still run")
{
	struct rec_fixture fx;
	if (fixture_open(&fx))
		goto out;
	const struct derive_pass *table[] = { &toy_reader, &toy_failing, &toy_writer, NULL };
	nran = 0;
	CHECK(derive_run(fx.rec, table) < 0);
	CHECK_INT_EQ(nran, 3);
	CHECK_INT_EQ(ran[0], 4);
	CHECK_INT_EQ(ran[1], 2);
	CHECK_INT_EQ(ran[2], 1);
	double notes = 0;
	CHECK(!recording_query_double(recorder_db(fx.rec),
				      "SELECT count(*) FROM notes WHERE text LIKE"
				      " 'derive pass failing failed: toy failure'",
				      &notes));
	CHECK(notes == 1);
out:
	fixture_close(&fx);
}

CHECK_MAIN()
