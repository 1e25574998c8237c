/* reader: read-only access to a recording. */
#include "reader.h"
#include "recorder.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int recording_open(const char *path, sqlite3 **out, struct strbuf *err)
{
	sqlite3 *db = NULL;
	int64_t schema;
	if (access(path, R_OK)) {
		strbuf_addf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* Read-write when allowed: a recording left by a killed sonde still has its
	 * last batches in profile.db-wal, and only a writer can recover them. Never
	 * as a writer through a link (NOFOLLOW): that falls back to read-only. */
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		db = NULL;
		if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
			strbuf_addf(err, "%s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
			goto fail;
		}
	}
	sqlite3_busy_timeout(db, RECORDER_BUSY_TIMEOUT_MS);
	if (!recording_has_table(db, "meta") || recording_meta_int(db, "schema", &schema)) {
		int code = sqlite3_errcode(db);
		if (code != SQLITE_OK && code != SQLITE_DONE && code != SQLITE_ROW) {
			strbuf_addf(err, "%s: %s", path, sqlite3_errmsg(db));
			goto fail;
		}
		strbuf_addf(err, "%s: not a sonde recording", path);
		goto fail;
	}
	if (schema > RECORDING_SCHEMA_VERSION) {
		strbuf_addf(err, "%s: recording schema %lld is newer than this sonde reads (%d)",
			    path, (long long)schema, RECORDING_SCHEMA_VERSION);
		goto fail;
	}
	*out = db;
	return 0;
fail:
	sqlite3_close(db);
	return -1;
}

int recording_meta_int(sqlite3 *db, const char *key, int64_t *out)
{
	sqlite3_stmt *st;
	int ret = -1;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key=?", -1, &st, NULL) !=
	    SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*out = sqlite3_column_int64(st, 0);
		ret = 0;
	}
	sqlite3_finalize(st);
	return ret;
}

char *recording_meta_text(sqlite3 *db, const char *key)
{
	sqlite3_stmt *st;
	char *ret = NULL;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key=?", -1, &st, NULL) !=
	    SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		ret = xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return ret;
}

int recording_has_table(sqlite3 *db, const char *table)
{
	sqlite3_stmt *st;
	int ret = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1,
			       &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	ret = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return ret;
}

sqlite3_stmt *recording_prepare(sqlite3 *db, const char *table, const char *sql)
{
	sqlite3_stmt *st;
	if (!recording_has_table(db, table) ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	return st;
}

int recording_has_column(sqlite3 *db, const char *table, const char *column)
{
	sqlite3_stmt *st;
	int ret = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
	ret = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return ret;
}

int recording_query_double(sqlite3 *db, const char *sql, double *out)
{
	sqlite3_stmt *st;
	int ret = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*out = sqlite3_column_double(st, 0);
		ret = 0;
	}
	sqlite3_finalize(st);
	return ret;
}
