/* phase_nvtx: top-level NVTX ranges as phases (phase_nvtx.h). */
#include "phase_nvtx.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdio.h>

long phase_nvtx_read(sqlite3 *db, struct phase_table *t, struct strbuf *err)
{
	sqlite3_stmt *st;
	long added = 0;
	if (!recording_has_table(db, "nvtx_ranges"))
		return 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT tid, start_ns, end_ns, closed, type, domain, name"
			       " FROM nvtx_ranges WHERE end_ns >= start_ns AND (type = 'range' OR"
			       " (type = 'push' AND depth = 0)) ORDER BY start_ns, rowid",
			       -1, &st, NULL) != SQLITE_OK) {
		strbuf_addf(err, "cannot read the NVTX ranges: %s", sqlite3_errmsg(db));
		return -1;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 4);
		const char *domain = (const char *)sqlite3_column_text(st, 5);
		const char *text = (const char *)sqlite3_column_text(st, 6);
		char name[PHASE_NAME_MAX];
		if (domain && *domain)
			snprintf(name, sizeof(name), "%s: %s", domain, text ? text : "");
		else
			snprintf(name, sizeof(name), "%s", text ? text : "");
		int push = type && type[0] == 'p';
		enum phase_ended_by by =
		    sqlite3_column_int(st, 3) ? PHASE_ENDED_MARKER : PHASE_ENDED_RUN_END;
		if (!phase_table_add_span(t, name, sqlite3_column_int64(st, 1),
					  sqlite3_column_int64(st, 2),
					  push ? sqlite3_column_int64(st, 0) : 0, by))
			added++;
	}
	sqlite3_finalize(st);
	return added;
}
