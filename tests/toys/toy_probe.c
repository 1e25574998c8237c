/* toy probe: how many of the target's processes are alive, once an interval
 * (table toy_ticks). The worked example of docs/development.md: one file
 * plus the line PROBE(toy) in src/probes/probe_list.h; built into a sonde of
 * its own by tests/integration/test_toys.py, never into the real one. */
#include "probes/probe.h"
#include "record/recorder.h"
#include "target/proctree.h"
#include "util/clock.h"
#include "util/strbuf.h"

#include <sqlite3.h>
#include <stdint.h>

static const char toy_schema[] =
    "CREATE TABLE IF NOT EXISTS toy_ticks(t_ns INTEGER, processes INTEGER);";

static int toy_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	(void)ctx;
	(void)why;
	return 0; /* nothing to lack: /proc is read by the session already */
}

static int toy_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	sqlite3_stmt *insert = NULL;
	if (recorder_schema(ctx->rec, toy_schema) || !recorder_db(ctx->rec) ||
	    sqlite3_prepare_v2(recorder_db(ctx->rec), "INSERT INTO toy_ticks VALUES(?, ?)", -1,
			       &insert, NULL) != SQLITE_OK) {
		strbuf_addstr(why, "cannot make the toy_ticks table");
		return -1;
	}
	p->state = insert; /* all the state it needs */
	p->next_poll_ns = ctx->start_ns;
	return 0;
}

static void toy_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	sqlite3_stmt *insert = p->state;
	sqlite3_bind_int64(insert, 1, now_ns - ctx->start_ns);
	sqlite3_bind_int64(insert, 2, (int64_t)proctree_live(ctx->tree));
	recorder_step(ctx->rec, insert);
	p->next_poll_ns = now_ns + ctx->cfg->interval_ns;
}

static void toy_stop(struct probe *p, struct probe_ctx *ctx)
{
	toy_poll(p, ctx, clock_mono_ns()); /* one last reading */
}

static void toy_free(struct probe *p)
{
	sqlite3_finalize(p->state);
	p->state = NULL;
}

const struct probe_ops probe_toy = {
	.name = "toy",
	.summary = "the target's live processes, counted once an interval (a worked example)",
	.available = toy_available,
	.start = toy_start,
	.poll = toy_poll,
	.stop = toy_stop,
	.free = toy_free,
};
