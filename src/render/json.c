/* json renderer: report.json, the report model as it is (keys in docs/report-format.md). */
#include "render.h"
#include "../util/strbuf.h"

static int json_write_chunk(const char *buf, size_t size, void *data)
{
	return fwrite(buf, 1, size, data) == size ? 0 : -1;
}

static int json_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	if (json_dump_callback(ctx->report, json_write_chunk, out,
			       JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))) {
		strbuf_addstr(err, "cannot serialise the report");
		return -1;
	}
	fputc('\n', out);
	return 0;
}

const struct renderer render_json = { .name = "json", .file = "report.json", .render = json_render };
