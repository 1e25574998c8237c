/* slice: the table map covers every table sonde creates, and a window keeps
 * the rows in it on the window's clock. */
#include "check.h"
#include "record/slice.h"
#include "record/reader.h"
#include "util/strbuf.h"

#include <dirent.h>
#include <sqlite3.h>

#ifndef SONDE_SOURCE_DIR
#define SONDE_SOURCE_DIR "."
#endif

#define CREATE_PREFIX "CREATE TABLE IF NOT EXISTS "

/* The text of the C string literals from p on, joined, up to the statement's
 * end (");" in the joined text), into sb. */
static void statement_text(const char *p, struct strbuf *sb)
{
	int in = 1;
	for (; *p; p++) {
		if (*p == '"' && p[-1] != '\\') {
			in = !in;
			continue;
		}
		if (!in)
			continue;
		strbuf_addch(sb, *p);
		if (sb->len >= 2 && !strcmp(sb->buf + sb->len - 2, ");"))
			return;
	}
}

/* 1 when the statement declares column col (as "col " after "(" or ", "). */
static int has_column(const char *stmt, const char *col)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	strbuf_addf(&a, "(%s ", col);
	strbuf_addf(&b, ", %s ", col);
	int found = strstr(stmt, a.buf) || strstr(stmt, b.buf);
	strbuf_release(&a);
	strbuf_release(&b);
	return found;
}

static void columns_check(const struct slice_table *t, const char *stmt)
{
	const char *cols[] = { t->time_col, t->end_col, t->pid_col, t->tid_col };
	for (size_t i = 0; i < 4; i++)
		if (cols[i] && !has_column(stmt, cols[i]))
			check_fail(__FILE__, __LINE__,
				   "table %s: the map names column %s, absent in %s", t->name,
				   cols[i], stmt);
}

/* Every "CREATE TABLE IF NOT EXISTS name(" in the C files below dir. */
static void tables_scan(const char *dir, size_t *found)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		struct strbuf path = STRBUF_INIT;
		strbuf_addf(&path, "%s/%s", dir, de->d_name);
		struct stat st;
		size_t n = strlen(de->d_name);
		if (!stat(path.buf, &st) && S_ISDIR(st.st_mode)) {
			tables_scan(path.buf, found);
		} else if (n > 2 && !strcmp(de->d_name + n - 2, ".c")) {
			FILE *f = fopen(path.buf, "r");
			struct strbuf text = STRBUF_INIT;
			char buf[4096];
			size_t k;
			while (f && (k = fread(buf, 1, sizeof(buf), f)) > 0)
				strbuf_add(&text, buf, k);
			if (f)
				fclose(f);
			for (const char *p = strbuf_str(&text); (p = strstr(p, CREATE_PREFIX));) {
				p += strlen(CREATE_PREFIX);
				size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
				char name[128];
				snprintf(name, sizeof(name), "%.*s", (int)len, p);
				(*found)++;
				const struct slice_table *t = slice_table_find(name);
				if (!t) {
					check_fail(
					    __FILE__, __LINE__,
					    "%s creates table %s, which src/record/slice.c's "
					    "slice_tables does not list",
					    path.buf, name);
					continue;
				}
				struct strbuf stmt = STRBUF_INIT;
				strbuf_addstr(&stmt, CREATE_PREFIX);
				statement_text(p, &stmt);
				columns_check(t, stmt.buf);
				strbuf_release(&stmt);
			}
			strbuf_release(&text);
		}
		strbuf_release(&path);
	}
	closedir(d);
}

TEST(every_table_mapped, "every table sonde creates has an entry in the slice map, whose columns "
			 "it declares")
{
	size_t found = 0;
	tables_scan(SONDE_SOURCE_DIR "/src", &found);
	/* meta, samples, proc_samples, ...: the scan itself must have worked. */
	CHECK(found >= 30);
	CHECK(slice_table_find("samples") != NULL);
	CHECK(slice_table_find("no_such_table") == NULL);
}

TEST(time_rules_have_columns, "every rule that cuts by time names its time column")
{
	for (const struct slice_table *t = slice_tables; t->name; t++) {
		if (t->rule == SLICE_AT || t->rule == SLICE_SPAN || t->rule == SLICE_LIFE)
			CHECK(t->time_col != NULL);
		if (t->rule == SLICE_SPAN)
			CHECK(t->end_col != NULL);
		if (t->levels || t->rule == SLICE_LIFE)
			CHECK(t->pid_col != NULL);
	}
}

/* A small recording: two processes, samples at 0.5 s steps, proc readings. */
static char *recording_make(void)
{
	char *dir = check_tmpdir();
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/profile.db", dir);
	free(dir);
	sqlite3 *db;
	if (sqlite3_open(path.buf, &db) != SQLITE_OK)
		return NULL;
	const char *sql =
	    "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
	    "INSERT INTO meta VALUES('schema', 1), ('wall_ns', 4000000000), ('launch_ns', 0),"
	    " ('leader_pid', 10), ('exit_code', 0), ('start_unix_ns', 1000);"
	    "CREATE TABLE processes(pid INTEGER PRIMARY KEY, ppid INTEGER, start_ns INTEGER,"
	    " end_ns INTEGER, command TEXT, is_leader INTEGER, exit_code INTEGER, signal INTEGER);"
	    "INSERT INTO processes VALUES(10, 1, 0, 4000000000, 'a', 1, 0, 0),"
	    " (11, 10, 2500000000, 3500000000, 'b', 0, 0, 0);"
	    "CREATE TABLE rusage(pid INTEGER PRIMARY KEY, user_s REAL);"
	    "INSERT INTO rusage VALUES(0, 4.0);"
	    "CREATE TABLE samples(t_ns INTEGER, pid INTEGER, tid INTEGER, node INTEGER,"
	    " source TEXT, weight INTEGER, on_cpu INTEGER, gil INTEGER);"
	    "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 7)"
	    " INSERT INTO samples SELECT i * 500000000, CASE WHEN i >= 5 AND i < 7 THEN 11"
	    " ELSE 10 END, 10, 1, 'cpu', 1, 1, NULL FROM k;"
	    "CREATE TABLE proc_samples(t_ns INTEGER, pid INTEGER, user_ns INTEGER, hwm_bytes"
	    " INTEGER);"
	    "INSERT INTO proc_samples VALUES(0, 10, 0, 5), (1000000000, 10, 900, 5),"
	    " (2000000000, 10, 1900, 9), (3000000000, 10, 2000, 9);"
	    "CREATE TABLE threads(pid INTEGER, tid INTEGER, name TEXT);"
	    "INSERT INTO threads VALUES(10, 10, 'a');"
	    "CREATE TABLE unknown_table(x INTEGER);";
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? strbuf_detach(&path) : NULL;
}

static int64_t one(sqlite3 *db, const char *sql)
{
	double v = -1;
	recording_query_double(db, sql, &v);
	return (int64_t)v;
}

TEST(window_cut, "a window keeps the rows in it on its own clock, with wall_ns its length, and "
		 "counts from its start")
{
	char *path = recording_make();
	REQUIRE(path);
	struct slice_filter f = { .from_ns = 1000000000, .to_ns = 3000000000, .pid = 0, .tid = 0 };
	sqlite3 *db = NULL;
	struct strbuf err = STRBUF_INIT;
	REQUIRE(slice_open(path, &f, &db, &err) == 0);
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM samples"), 4);
	CHECK_INT_EQ(one(db, "SELECT min(t_ns) FROM samples"), 0);
	CHECK_INT_EQ(one(db, "SELECT max(t_ns) FROM samples"), 1500000000);
	int64_t v = -1;
	CHECK(!recording_meta_int(db, "wall_ns", &v) && v == 2000000000);
	CHECK(!recording_meta_int(db, "start_unix_ns", &v) && v == 1000001000);
	CHECK(recording_meta_int(db, "exit_code", &v)); /* the leader had not exited */
	CHECK(!recording_meta_int(db, "slice_from_ns", &v) && v == 1000000000);
	/* Cumulative readings count from the last one before the window. */
	CHECK_INT_EQ(one(db, "SELECT max(user_ns) FROM proc_samples"), 1000);
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM proc_samples WHERE hwm_bytes IS NOT NULL"), 0);
	/* The child started inside, ended after: open at the slice's end. */
	CHECK_INT_EQ(one(db, "SELECT start_ns FROM processes WHERE pid = 11"), 1500000000);
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM processes WHERE pid = 11 AND end_ns IS NULL"
			     " AND exit_code IS NULL"),
		     1);
	/* Whole-run totals are there, empty; an unknown table is left out. */
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM rusage"), 0);
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM unknown_table"), 0);
	char *left = recording_meta_text(db, "slice_left_out");
	CHECK(left && strstr(left, "rusage") && strstr(left, "unknown_table"));
	free(left);
	sqlite3_close(db);
	strbuf_release(&err);
	free(path);
}

TEST(pid_cut, "a pid filter keeps that process's rows and its totals, on the run's clock")
{
	char *path = recording_make();
	REQUIRE(path);
	struct slice_filter f = SLICE_FILTER_INIT;
	f.pid = 11;
	sqlite3 *db = NULL;
	struct strbuf err = STRBUF_INIT;
	REQUIRE(slice_open(path, &f, &db, &err) == 0);
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM samples"), 2);
	CHECK_INT_EQ(one(db, "SELECT min(t_ns) FROM samples"), 2500000000);
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM processes"), 1);
	CHECK_INT_EQ(one(db, "SELECT count(*) FROM rusage"), 0); /* pid 0's total is not pid 11's */
	int64_t v;
	CHECK(recording_meta_int(db, "exit_code", &v)); /* the run's is the leader's */
	CHECK(!recording_meta_int(db, "slice_pid", &v) && v == 11);
	sqlite3_close(db);
	strbuf_release(&err);
	free(path);
}

TEST(bad_filters, "a bad window or an unknown pid is refused with one line saying why")
{
	char *path = recording_make();
	REQUIRE(path);
	struct {
		struct slice_filter f;
		const char *says;
	} cases[] = {
		{ { 3000000000, 2000000000, 0, 0, NULL }, "empty window" },
		{ { 5000000000, -1, 0, 0, NULL }, "past the run's end (4.000 s)" },
		{ { -1, -1, 0, 0, NULL }, "0 or more" },
		{ { 0, -1, 77, 0, NULL }, "pid 77 was not recorded (recorded: 10, 11)" },
		{ { 0, -1, 10, 99, NULL }, "thread 99 was not recorded in pid 10 (recorded: 10)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sqlite3 *db = NULL;
		struct strbuf err = STRBUF_INIT;
		CHECK(slice_open(path, &cases[i].f, &db, &err) == -1);
		CHECK(db == NULL);
		CHECK_CONTAINS(strbuf_str(&err), cases[i].says);
		CHECK(!strchr(strbuf_str(&err), '\n'));
		strbuf_release(&err);
	}
	struct slice_filter all = SLICE_FILTER_INIT;
	sqlite3 *db = NULL;
	struct strbuf err = STRBUF_INIT;
	CHECK(slice_open("/nonexistent/profile.db", &all, &db, &err) == -1);
	CHECK_CONTAINS(strbuf_str(&err), "No such file");
	strbuf_release(&err);
	free(path);
}

CHECK_MAIN()
