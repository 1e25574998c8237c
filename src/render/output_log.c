/* output_log renderer: output.log, the target's own lines with the time (s
 * since the start) and where they came from: out, err, or log (--log FILE). */
#include "render.h"
#include "../util/strbuf.h"

static int output_log_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT t_ns, stream, line, truncated FROM output_lines ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK) {
		strbuf_addstr(err, "the recording has no output table");
		return -1;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		double t_s = (double)sqlite3_column_int64(st, 0) / 1e9;
		int stream = sqlite3_column_int(st, 1);
		fprintf(out, "%12.6f %s ", t_s, stream == 2 ? "err" : stream == 3 ? "log" : "out");
		int len = sqlite3_column_bytes(st, 2);
		if (len > 0)
			fwrite(sqlite3_column_blob(st, 2), 1, (size_t)len, out);
		fputs(sqlite3_column_int(st, 3) ? " [line truncated by sonde]\n" : "\n", out);
	}
	sqlite3_finalize(st);
	return 0;
}

const struct renderer render_output_log = { .name = "output", .file = "output.log",
					    .render = output_log_render };
