/* test_recorder_oom: SQLite allocation failures, injected one at a time at
 * every allocation a small recording makes, never crash or leak the
 * recorder, and each is reported (sqlite's and curl's torture tests). */
#include "check.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "record/stacks.h"
#include "util/strbuf.h"

#include <sqlite3.h>

static sqlite3_mem_methods real_mem;
static long alloc_count, fail_at; /* fail the fail_at-th allocation (1-based); 0: never */
static int injected;

static void *oom_malloc(int n)
{
	if (fail_at && ++alloc_count == fail_at) {
		injected = 1;
		return NULL;
	}
	return real_mem.xMalloc(n);
}

static void *oom_realloc(void *p, int n)
{
	if (fail_at && ++alloc_count == fail_at) {
		injected = 1;
		return NULL;
	}
	return real_mem.xRealloc(p, n);
}

static int install_oom(void)
{
	if (sqlite3_shutdown() != SQLITE_OK ||
	    sqlite3_config(SQLITE_CONFIG_GETMALLOC, &real_mem) != SQLITE_OK)
		return -1;
	sqlite3_mem_methods m = real_mem;
	m.xMalloc = oom_malloc;
	m.xRealloc = oom_realloc;
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK)
		return -1;
	return sqlite3_initialize() == SQLITE_OK ? 0 : -1;
}

/* One small run: open, core rows, a stack, a flush, more rows, close.
 * Returns 0 when everything was recorded; -1 with a message in why otherwise. */
static int small_run(const char *path, struct strbuf *why)
{
	struct recorder *rec = NULL;
	if (recorder_open(path, &rec, why)) {
		if (!why->len)
			strbuf_addstr(why, "(recorder_open failed without a message)");
		return -1;
	}
	record_meta(rec, "command", "app --flag");
	record_note(rec, 1, "proc", "info", "hello");
	struct process_info p = { .pid = 10, .ppid = 1, .end_ns = -1, .command = "app",
				  .is_leader = 1, .exit_code = -1 };
	record_process(rec, &p);
	record_output_line(rec, 2, 10, 1, "line", 4, 0);
	struct stack_writer *sw = recorder_stacks(rec);
	if (sw) {
		struct frame_info f1 = { .function = "main", .module = "/bin/app" };
		struct frame_info f2 = { .function = "work", .file = "app.c", .line = 7 };
		int64_t ids[2] = { stack_frame(sw, &f1), stack_frame(sw, &f2) };
		if (ids[0] && ids[1]) {
			struct sample_info s = { .t_ns = 3, .pid = 10, .tid = 10, .source = "cpu",
						 .weight = 1, .on_cpu = 1, .gil = -1 };
			s.node = stack_intern(sw, ids, 2);
			stack_sample(sw, &s);
		}
	}
	recorder_tick(rec, 1);
	record_meta_int(rec, "wall_ns", 1000);
	struct rusage_info ru = { .pid = 0, .user_s = 0.5 };
	record_rusage(rec, &ru);
	const char *failed = recorder_failed(rec);
	int ok = !failed && sw;
	if (failed)
		strbuf_addstr(why, failed);
	else if (!sw)
		strbuf_addstr(why, "(no stack writer)");
	if (recorder_close(rec)) { /* it also logged why */
		if (ok)
			strbuf_addstr(why, "recorder_close reported a failure");
		ok = 0;
	}
	return ok ? 0 : -1;
}

/* 1 when every row small_run writes is in the recording at path. */
static int run_complete(const char *path)
{
	struct strbuf err = STRBUF_INIT;
	sqlite3 *db = NULL;
	int ok = 0;
	if (!recording_open(path, &db, &err)) {
		int64_t wall = 0;
		double notes = 0, samples = 0, ru = 0, lines = 0;
		ok = !recording_meta_int(db, "wall_ns", &wall) && wall == 1000 &&
		     !recording_query_double(db, "SELECT count(*) FROM notes", &notes) && notes == 1 &&
		     !recording_query_double(db, "SELECT count(*) FROM samples", &samples) &&
		     samples == 1 &&
		     !recording_query_double(db, "SELECT count(*) FROM rusage", &ru) && ru == 1 &&
		     !recording_query_double(db, "SELECT count(*) FROM output_lines", &lines) &&
		     lines == 1;
	}
	sqlite3_close(db);
	strbuf_release(&err);
	return ok;
}

static void remove_db(const char *path)
{
	static const char *sfx[] = { "", "-wal", "-shm", "-journal" };
	char p[4200];
	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		unlink(p);
	}
}

TEST(every_alloc_fails_once, "failing each SQLite allocation in turn never crashes or leaks, a failed recording says why, and one that reports success holds every row")
{
	if (install_oom())
		SKIP("this SQLite cannot take a custom allocator");
	/* thousands of small recordings: on tmpfs their fsyncs cost nothing */
	if (!getenv("TMPDIR") && access("/dev/shm", W_OK | X_OK) == 0)
		setenv("TMPDIR", "/dev/shm", 1);
	char *dir = check_tmpdir();
	REQUIRE(dir);
	char path[4200];
	snprintf(path, sizeof(path), "%s/profile.db", dir);
	struct strbuf why = STRBUF_INIT;
	long n;
	int failures = 0, silent = 0, lost = 0;
	for (n = 1; n < 5000; n++) {
		alloc_count = 0;
		injected = 0;
		fail_at = n;
		strbuf_reset(&why);
		int rc = small_run(path, &why);
		fail_at = 0;
		if (rc == 0 && !run_complete(path)) {
			lost++; /* reported success, but rows are missing */
			if (getenv("OOM_DEBUG"))
				fprintf(stderr, "rows lost at allocation %ld\n", n);
		}
		remove_db(path);
		if (!injected) {
			CHECK_INT_EQ(rc, 0); /* the whole run fit: it must have worked */
			break;
		}
		failures += rc != 0;
		if (rc && !why.len) {
			silent++;
			if (getenv("OOM_DEBUG"))
				fprintf(stderr, "silent failure at allocation %ld\n", n);
		}
	}
	CHECK(n < 5000);
	CHECK(failures > 0);
	CHECK_INT_EQ(silent, 0);
	CHECK_INT_EQ(lost, 0);
	/* and with no failure a run is readable */
	strbuf_reset(&why);
	CHECK_INT_EQ(small_run(path, &why), 0);
	CHECK(run_complete(path));
	strbuf_release(&why);
	check_rmtree(dir);
}

CHECK_MAIN()
