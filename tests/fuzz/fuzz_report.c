/* fuzz_report: `sonde report` reads a profile.db that may be damaged, from an
 * older or newer sonde, or made by hand to hurt: every analysis and renderer
 * must survive it. The input is a list of SQL-level mutations (rows deleted
 * or duplicated, tables dropped, columns set to NULL, text, blobs, huge or
 * negative numbers, ids of other rows) applied to a small real recording
 * (report_template.sql, found through $SONDE_FUZZ_ROOT), then the whole report
 * path runs: report_build(), every renderer and the terminal summary.
 * sources: src/analysis/ src/record/ src/render/ src/util/ src/target/machine.c
 * libs: -lsqlite3 -ljansson -lm -lz
 * max_len: 512
 */
#include "analysis/analysis.h"
#include "render/render.h"
#include "util/strbuf.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP_BYTES 8
#define TABLES_MAX 64
#define COLUMNS_MAX 16

struct table {
	char name[64];
	char cols[COLUMNS_MAX][64];
	int ncols;
};

static unsigned char *template_db;
static sqlite3_int64 template_len;
static struct table tables[TABLES_MAX];
static int ntables;
static FILE *devnull;

static void fail(const char *what, sqlite3 *db)
{
	fprintf(stderr, "fuzz_report: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
	exit(1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *root = getenv("SONDE_FUZZ_ROOT");
	struct strbuf path = STRBUF_INIT, sql = STRBUF_INIT;
	strbuf_addf(&path, "%s/tests/fuzz/report_template.sql", root ? root : ".");
	FILE *f = fopen(path.buf, "r");
	if (!f)
		fail("cannot open report_template.sql (set SONDE_FUZZ_ROOT)", NULL);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sql, buf, n);
	fclose(f);
	sqlite3 *db;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, sql.buf, NULL, NULL, NULL) != SQLITE_OK)
		fail("loading the template", db);
	sqlite3_stmt *st, *cols;
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
			       -1, &st, NULL) != SQLITE_OK)
		fail("listing tables", db);
	while (sqlite3_step(st) == SQLITE_ROW && ntables < TABLES_MAX) {
		struct table *t = &tables[ntables++];
		snprintf(t->name, sizeof(t->name), "%s", sqlite3_column_text(st, 0));
		if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?)", -1, &cols, NULL) !=
		    SQLITE_OK)
			fail("listing columns", db);
		sqlite3_bind_text(cols, 1, t->name, -1, SQLITE_STATIC);
		while (sqlite3_step(cols) == SQLITE_ROW && t->ncols < COLUMNS_MAX)
			snprintf(t->cols[t->ncols++], sizeof(t->cols[0]), "%s",
				 sqlite3_column_text(cols, 0));
		sqlite3_finalize(cols);
	}
	sqlite3_finalize(st);
	template_db = sqlite3_serialize(db, "main", &template_len, 0);
	if (!template_db)
		fail("serialising the template", db);
	sqlite3_close(db);
	devnull = fopen("/dev/null", "w");
	strbuf_release(&path);
	strbuf_release(&sql);
	return 0;
}

/* Binds the value an op's bytes choose. */
static void bind_value(sqlite3_stmt *st, int i, const uint8_t *op)
{
	int64_t small = (int8_t)op[5] * 256 + op[6];
	switch (op[4] % 12) {
	case 0: sqlite3_bind_null(st, i); break;
	case 1: sqlite3_bind_int64(st, i, small); break;
	case 2: sqlite3_bind_int64(st, i, INT64_MAX - (op[6] & 3)); break;
	case 3: sqlite3_bind_int64(st, i, INT64_MIN + (op[6] & 3)); break;
	case 4: sqlite3_bind_int64(st, i, (int64_t)((uint64_t)small << (op[7] % 64))); break;
	case 5: sqlite3_bind_double(st, i, small * 1e300); break;
	case 6: sqlite3_bind_double(st, i, (double)small / 7.0); break;
	case 7: sqlite3_bind_text(st, i, "x\x1b[2J\r\n\x07;|`<>&\"'\xff\xc2\x9b", -1, SQLITE_STATIC); break;
	case 8: sqlite3_bind_blob(st, i, op, OP_BYTES, SQLITE_TRANSIENT); break;
	case 9: sqlite3_bind_text(st, i, "", 0, SQLITE_STATIC); break;
	case 10: { /* a long name */
		size_t n = 100 + (size_t)op[6] * 100;
		char *s = malloc(n + 1);
		memset(s, 'n', n);
		s[n] = '\0';
		sqlite3_bind_text(st, i, s, (int)n, free);
		break;
	}
	default: sqlite3_bind_int64(st, i, op[6] % 8); break; /* small ids: cycles, collisions */
	}
}

static void apply(sqlite3 *db, const uint8_t *op)
{
	const struct table *t = &tables[op[1] % ntables];
	const char *col = t->ncols ? t->cols[op[2] % t->ncols] : "rowid";
	int mod = (op[3] >> 4) + 1, rem = (op[3] & 15) % mod;
	char sql[512];
	switch (op[0] % 6) {
	case 0:
	case 1:
		snprintf(sql, sizeof(sql), "UPDATE OR IGNORE \"%s\" SET \"%s\" = ? WHERE rowid %% %d = %d",
			 t->name, col, mod, rem);
		break;
	case 2:
		snprintf(sql, sizeof(sql), "DELETE FROM \"%s\" WHERE rowid %% %d = %d", t->name, mod,
			 rem);
		break;
	case 3:
		snprintf(sql, sizeof(sql), "INSERT OR IGNORE INTO \"%s\" SELECT * FROM \"%s\" WHERE rowid %% %d = %d",
			 t->name, t->name, mod, rem);
		break;
	case 4: /* a column pointing at another row's, or at itself + k */
		snprintf(sql, sizeof(sql), "UPDATE OR IGNORE \"%s\" SET \"%s\" = rowid + (%d) WHERE rowid %% %d = %d",
			 t->name, col, (int8_t)op[5], mod, rem);
		break;
	default:
		if (op[5] % 8)
			return; /* dropping a table is rare: it hides the rest */
		snprintf(sql, sizeof(sql), "DROP TABLE \"%s\"", t->name);
	}
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return; /* a dropped table */
	if (sqlite3_bind_parameter_count(st))
		bind_value(st, 1, op);
	sqlite3_step(st);
	sqlite3_finalize(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	sqlite3 *db;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		return 0;
	unsigned char *copy = sqlite3_malloc64((sqlite3_uint64)template_len);
	memcpy(copy, template_db, (size_t)template_len);
	if (sqlite3_deserialize(db, "main", copy, template_len, template_len,
				SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return 0;
	}
	for (size_t i = 0; i < n; i += OP_BYTES) { /* a short last op reads zeros */
		uint8_t op[OP_BYTES] = { 0 };
		memcpy(op, data + i, n - i < OP_BYTES ? n - i : OP_BYTES);
		apply(db, op);
	}
	struct strbuf err = STRBUF_INIT;
	json_t *report = report_build(db, &err);
	if (report) {
		struct render_ctx ctx = { .report = report, .db = db, .dir = "fuzz-run" };
		for (size_t i = 0; render_table[i]; i++) {
			strbuf_reset(&err);
			render_table[i]->render(&ctx, devnull, &err);
		}
		render_terminal(&ctx, devnull);
		json_decref(report);
	}
	strbuf_release(&err);
	sqlite3_close(db);
	return 0;
}
