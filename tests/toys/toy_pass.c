/* toy derive pass: the most processes the toy probe saw alive at once, as
 * meta.toy_max_processes. The worked example of docs/development.md: one
 * file plus the line DERIVE_PASS(toy) in src/derive/pass_list.h. */
#include "derive/derive.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "util/strbuf.h"

#include <stdint.h>

static const char *const toy_reads[] = { "toy_ticks", NULL };
static const char *const toy_writes[] = { "meta:toy_max_processes", NULL };

static int64_t toy_run(const struct derive_ctx *ctx, struct strbuf *why)
{
	double most = 0;
	(void)why;
	if (!recording_has_table(ctx->db, "toy_ticks") ||
	    recording_query_double(ctx->db, "SELECT max(processes) FROM toy_ticks", &most))
		return 0; /* the toy probe did not run: nothing to derive */
	record_meta_int(ctx->rec, "toy_max_processes", (int64_t)most);
	return 1;
}

const struct derive_pass derive_toy = {
	.name = "toy",
	.summary = "the most processes alive at once, from the toy probe",
	.reads = toy_reads,
	.writes = toy_writes,
	.run = toy_run,
};
