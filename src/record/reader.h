/* reader: the read side of profile.db, used by analyses and `sonde report`.
 * recording_open() opens read-only and refuses a recording whose schema is
 * newer than this sonde (with a message saying so). */
#ifndef SONDE_READER_H
#define SONDE_READER_H

#include <sqlite3.h>
#include <stdint.h>

struct strbuf;

int recording_open(const char *path, sqlite3 **out, struct strbuf *err);

/* 0 and *out on success; -1 when the key is absent or NULL. */
int recording_meta_int(sqlite3 *db, const char *key, int64_t *out);
/* Returns a malloc'd copy (free it) or NULL. */
char *recording_meta_text(sqlite3 *db, const char *key);
/* 1 when the table exists. */
int recording_has_table(sqlite3 *db, const char *table);
/* A statement for sql, over a table that only some recordings have (a probe
 * that did not run leaves its tables out): NULL when the recording lacks
 * table or sql does not prepare. The caller finalizes it. */
sqlite3_stmt *recording_prepare(sqlite3 *db, const char *table, const char *sql);
/* 1 when the table exists and has that column (columns added later than their
 * table are absent from older recordings). */
int recording_has_column(sqlite3 *db, const char *table, const char *column);
/* Runs a query returning one number; 0 and *out on success, -1 when NULL/no row. */
int recording_query_double(sqlite3 *db, const char *sql, double *out);

#endif
