/* agent_reader: a probe's side of an in-process agent (agent_reader.h). */
#include "agent_reader.h"
#include "agent_dir.h"
#include "../util/strbuf.h"

#include <stdlib.h>

int agent_reader_start(struct agent_reader *ar, struct probe_ctx *ctx,
		       const struct agent_reader_spec *spec, struct strbuf *why)
{
	*ar = (struct agent_reader){ .spec = spec };
	ar->ins = xcalloc((size_t)spec->n_sql, sizeof(*ar->ins));
	if (recorder_schema(ctx->rec, spec->schema)) {
		strbuf_addf(why, "cannot create the %s probe's tables", spec->probe);
		return -1;
	}
	for (int i = 0; i < spec->n_sql; i++)
		if (sqlite3_prepare_v2(recorder_db(ctx->rec), spec->sql[i], -1, &ar->ins[i],
				       NULL) != SQLITE_OK) {
			strbuf_addf(why, "cannot prepare the %s probe's statements", spec->probe);
			return -1;
		}
	if (!(ar->dir = agent_dir_acquire(why)))
		return -1;
	ar->files = (struct agent_files)AGENT_FILES_INIT(ar->dir, spec->prefix, spec->line_max);
	return 0;
}

/* Gives the file its user before the probe sees its first line. */
static int line_hand(void *arg, struct agent_file *f, const char *line, size_t len)
{
	struct agent_reader *ar = arg;
	if (!f->user && ar->spec->user_size)
		f->user = xcalloc(1, ar->spec->user_size);
	return ar->spec->line(ar->arg, f, line, len);
}

void agent_reader_read(struct agent_reader *ar, struct probe_ctx *ctx, int drain, void *arg)
{
	if (!ar->dir)
		return;
	recorder_lock(ctx->rec);
	ar->ctx = ctx;
	ar->arg = arg;
	agent_files_poll(&ar->files, drain ? 0 : ar->spec->read_max, line_hand, ar);
	ar->ctx = NULL;
	ar->arg = NULL;
	recorder_unlock(ctx->rec);
}

int agent_reader_row(struct agent_reader *ar)
{
	if (ar->rows >= ar->spec->rows_max) {
		ar->rows_dropped++;
		return -1;
	}
	ar->rows++;
	return 0;
}

void agent_reader_notes(struct agent_reader *ar, struct probe_ctx *ctx)
{
	struct strbuf sb = STRBUF_INIT;
	int64_t bad = 0;
	for (size_t i = 0; i < ar->files.n; i++)
		bad += ar->files.f[i].bad_lines;
	if (ar->rows_dropped) {
		strbuf_addf(&sb, "%s's records were capped at %lld rows: %lld more were not stored",
			    ar->spec->agent, (long long)ar->spec->rows_max,
			    (long long)ar->rows_dropped);
		record_note(ctx->rec, 0, ar->spec->probe, "warning", sb.buf);
	}
	if (bad) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "%lld lines of %s's records were malformed and skipped",
			    (long long)bad, ar->spec->agent);
		record_note(ctx->rec, 0, ar->spec->probe, "warning", sb.buf);
	}
	strbuf_release(&sb);
}

void agent_reader_release(struct agent_reader *ar, void (*user_free)(void *))
{
	agent_files_release(&ar->files, user_free);
	for (int i = 0; ar->ins && i < ar->spec->n_sql; i++)
		sqlite3_finalize(ar->ins[i]);
	free(ar->ins);
	ar->ins = NULL;
	if (ar->dir)
		agent_dir_release();
	ar->dir = NULL;
}
