/* fn_table: the --function tables' schema and their one-row writer. */
#include "fn_table.h"
#include "../record/recorder.h"

#include <stddef.h>

const char fn_table_schema[] =
    "CREATE TABLE IF NOT EXISTS fn_targets(id INTEGER PRIMARY KEY, spec TEXT, kind TEXT,"
    " function TEXT, file TEXT, line INTEGER, status TEXT, note TEXT, calls INTEGER,"
    " calls_timed INTEGER, overhead_ns REAL);"
    "CREATE TABLE IF NOT EXISTS fn_calls(target INTEGER, pid INTEGER, tid INTEGER,"
    " t_ns INTEGER, wall_ns INTEGER, cpu_ns INTEGER, caller INTEGER);"
    "CREATE TABLE IF NOT EXISTS fn_callers(target INTEGER, id INTEGER, function TEXT,"
    " file TEXT, line INTEGER, PRIMARY KEY(target, id));"
    "CREATE TABLE IF NOT EXISTS fn_lines(target INTEGER, pid INTEGER, line INTEGER,"
    " hits INTEGER, wall_ns INTEGER, text TEXT);";

int fn_table_open(struct recorder *rec) { return recorder_schema(rec, fn_table_schema); }

static void bind_text_or_null(sqlite3_stmt *q, int col, const char *s)
{
	if (s)
		sqlite3_bind_text(q, col, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, col);
}

static void bind_count(sqlite3_stmt *q, int col, int64_t n)
{
	if (n >= 0)
		sqlite3_bind_int64(q, col, n);
	else
		sqlite3_bind_null(q, col);
}

void fn_table_target(struct recorder *rec, const struct fn_target_row *t)
{
	sqlite3_stmt *q = NULL;
	recorder_lock(rec);
	sqlite3 *db = recorder_db(rec);
	if (!db || sqlite3_prepare_v2(db,
				      "INSERT OR REPLACE INTO fn_targets"
				      " VALUES(?,?,?,?,?,?,?,?,?,?,?)",
				      -1, &q, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int(q, 1, t->id);
	bind_text_or_null(q, 2, t->spec);
	bind_text_or_null(q, 3, t->kind);
	bind_text_or_null(q, 4, t->function);
	bind_text_or_null(q, 5, t->file);
	if (t->line > 0)
		sqlite3_bind_int(q, 6, t->line);
	else
		sqlite3_bind_null(q, 6);
	bind_text_or_null(q, 7, t->status);
	bind_text_or_null(q, 8, t->note);
	bind_count(q, 9, t->calls);
	bind_count(q, 10, t->calls_timed);
	if (t->overhead_ns >= 0)
		sqlite3_bind_double(q, 11, t->overhead_ns);
	else
		sqlite3_bind_null(q, 11);
	recorder_step(rec, q);
out:
	sqlite3_finalize(q);
	recorder_unlock(rec);
}
