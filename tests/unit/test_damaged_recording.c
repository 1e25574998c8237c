/* test_damaged_recording: the report path (every analysis, every renderer,
 * the terminal summary) on damaged recordings: the SQL-level mutations of a
 * small real recording (tests/fuzz/report_template.sql) that once crashed it
 * or tripped a sanitizer, each checked to give a report. Under make check's
 * sanitizers an overflow or a bad read aborts the test. */
#include "check.h"
#include "analysis/analysis.h"
#include "render/render.h"
#include "util/strbuf.h"

#include <sqlite3.h>

#ifndef SONDE_SOURCE_DIR
#define SONDE_SOURCE_DIR "."
#endif

/* The template recording with sql applied, in memory. */
static sqlite3 *damaged(const char *sql)
{
	struct strbuf text = STRBUF_INIT;
	FILE *f = fopen(SONDE_SOURCE_DIR "/tests/fuzz/report_template.sql", "r");
	if (!f)
		return NULL;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&text, buf, n);
	fclose(f);
	sqlite3 *db = NULL;
	char *err = NULL;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, text.buf, NULL, NULL, &err) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		check_fail(__FILE__, __LINE__, "building the recording: %s", err ? err : "?");
		sqlite3_free(err);
		sqlite3_close(db);
		db = NULL;
	}
	strbuf_release(&text);
	return db;
}

/* 1 when the whole report path ran on the recording and gave a report. */
static int reported(const char *sql)
{
	sqlite3 *db = damaged(sql);
	if (!db)
		return 0;
	struct strbuf err = STRBUF_INIT;
	json_t *report = report_build(db, &err);
	FILE *null = fopen("/dev/null", "w");
	if (report && null) {
		struct render_ctx ctx = { .report = report, .db = db, .dir = "run" };
		for (size_t i = 0; render_table[i]; i++) {
			strbuf_reset(&err);
			render_table[i]->render(&ctx, null, &err);
		}
		render_terminal(&ctx, null);
	}
	if (null)
		fclose(null);
	int ok = report != NULL;
	json_decref(report);
	strbuf_release(&err);
	sqlite3_close(db);
	return ok;
}

TEST(template_reports, "the undamaged template recording gives a report")
{
	CHECK(reported("SELECT 1"));
}

TEST(offcpu_ns_huge, "off-CPU intervals of INT64_MAX or INT64_MIN ns give a report (a signed overflow summing them per thread)")
{
	CHECK(reported("UPDATE offcpu_states SET ns = 9223372036854775807"));
	/* One thread blocked at one place in two states: two sums to add up. */
	CHECK(reported("DELETE FROM offcpu_states WHERE rowid > (SELECT MIN(rowid) + 1 FROM"
		       " offcpu_states);"
		       "UPDATE offcpu_states SET ns = 1e308, state = CASE WHEN"
		       " rowid % 2 THEN 'S' ELSE 'D' END, node = (SELECT MIN(node) FROM"
		       " offcpu_states), tid = (SELECT MIN(tid) FROM offcpu_states)"));
	CHECK(reported("UPDATE offcpu_states SET ns = -9223372036854775808"));
	CHECK(reported("UPDATE offcpu_states SET ns = 1e19"));
}

TEST(python_times_extreme, "python samples at INT64_MIN and INT64_MAX ns give a report (signed overflows in the tick and span arithmetic)")
{
	CHECK(reported("UPDATE samples SET t_ns = CASE WHEN rowid % 2 THEN 9223372036854775807"
		       " ELSE -9223372036854775808 END WHERE source = 'python'"));
}

TEST(rss_extreme, "RSS readings of INT64_MAX, INT64_MIN or at extreme times give a report (signed overflows in the RSS total and jumps)")
{
	CHECK(reported("UPDATE proc_samples SET rss_bytes = 9223372036854775807"));
	CHECK(reported("UPDATE proc_samples SET rss_bytes = -9223372036854775808 WHERE rowid % 2"));
	CHECK(reported("UPDATE proc_samples SET t_ns = CASE WHEN rowid % 2 THEN -9223372036854775808"
		       " ELSE 9223372036854775807 END"));
}

TEST(leak_huge, "a leak of 1e300 bytes gives a report (a finding's impact cast past int64)")
{
	CHECK(reported("UPDATE alloc_sites SET leaked_bytes = 1e300, peak_bytes = 1e300"));
}

TEST(dangling_stacks, "samples pointing to missing stack nodes, and nodes to missing frames or parents, give a report")
{
	CHECK(reported("UPDATE samples SET node = node + 1000003"));
	CHECK(reported("DELETE FROM stack_nodes"));
	CHECK(reported("UPDATE stack_nodes SET frame = frame + 1000003, parent = parent + 7"));
	CHECK(reported("DELETE FROM frames"));
}

TEST(cyclic_stacks, "stack nodes that are their own parents or form cycles give a report")
{
	CHECK(reported("UPDATE stack_nodes SET parent = id"));
	CHECK(reported("UPDATE stack_nodes SET parent = (SELECT MIN(id) FROM stack_nodes) + id % 3"));
}

TEST(wrong_types, "text, blobs and NULLs where numbers belong give a report")
{
	CHECK(reported("UPDATE samples SET weight = 'x', on_cpu = x'00ff', gil = NULL, t_ns = NULL"));
	CHECK(reported("UPDATE meta SET value = x'00ff'"));
	CHECK(reported("UPDATE meta SET value = NULL WHERE key <> 'schema'"));
	CHECK(reported("UPDATE frames SET function = NULL, file = x'ff00', line = -5"));
}

TEST(tables_missing, "a recording missing its stack, process or meta rows gives a report")
{
	CHECK(reported("DROP TABLE samples"));
	CHECK(reported("DROP TABLE processes; DROP TABLE proc_samples"));
	CHECK(reported("DELETE FROM meta WHERE key <> 'schema'"));
}

CHECK_MAIN()
