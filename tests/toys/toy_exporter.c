/* toy exporter: `sonde export DIR --format toy` writes toy.txt, one line per
 * process of the run (or of the slice: --pid, --from, --to): its pid and
 * command. The worked example of docs/development.md: one file plus the
 * line EXPORTER(toy) in src/render/exporter_list.h. */
#include "render/render.h"
#include "util/strbuf.h"

#include <sqlite3.h>
#include <stdio.h>

static int toy_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	sqlite3_stmt *st = NULL;
	int rows = 0;
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT pid, coalesce(command, '') FROM processes"
			       " ORDER BY start_ns, pid",
			       -1, &st, NULL) != SQLITE_OK) {
		strbuf_addf(err, "no processes table: %s", sqlite3_errmsg(ctx->db));
		return -1;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		fprintf(out, "%lld %s\n", (long long)sqlite3_column_int64(st, 0),
			(const char *)sqlite3_column_text(st, 1));
		rows++;
	}
	sqlite3_finalize(st);
	return rows ? 0 : 1; /* 1: nothing to write */
}

static const struct renderer render_toy = { .name = "toy",
					    .file = "toy.txt",
					    .render = toy_render };

const struct exporter export_toy = {
	.name = "toy",
	.description = "the run's processes, a line each: pid and command (a worked example)",
	.renderer = &render_toy,
};
