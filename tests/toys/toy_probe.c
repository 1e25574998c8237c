/* toy probe: how many of the target's processes are alive, once an interval
 * (table toy_ticks), each reading with the label of its option --toy-label.
 * The worked example of docs/development.md: one file
 * plus the line PROBE(toy) in src/probes/probe_list.h; built into a sonde of
 * its own by tests/integration/test_toys.py, never into the real one. */
#include "probes/probe.h"
#include "record/recorder.h"
#include "target/proctree.h"
#include "util/clock.h"
#include "util/strbuf.h"

#include <sqlite3.h>
#include <stdint.h>
#include <string.h>

static const char toy_schema[] =
    "CREATE TABLE IF NOT EXISTS toy_ticks(t_ns INTEGER, processes INTEGER, label TEXT);";

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
	    sqlite3_prepare_v2(recorder_db(ctx->rec), "INSERT INTO toy_ticks VALUES(?, ?, ?)", -1,
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
	/* The option's argument, checked by toy_label_parse(), lives as long as the run. */
	const char *label = probe_option_value(ctx->cfg, "toy-label");
	sqlite3_bind_text(insert, 3, label ? label : "toy", -1, SQLITE_STATIC);
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

/* --toy-label TEXT: up to 32 characters; toy_start() reads it. */
static int toy_label_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	(void)cfg;
	if (!*arg || strlen(arg) > 32) {
		strbuf_addf(err, "--toy-label '%s' is not 1 to 32 characters", arg);
		return -1;
	}
	return 0;
}

static const struct probe_option toy_options[] = {
	{ .name = "toy-label", .arg = PROBE_ARG_REQUIRED, .arg_name = "TEXT",
	  .help = "the toy probe's label for its readings (default toy)",
	  .parse = toy_label_parse },
	{ .name = NULL },
};

static const char *const toy_writes[] = { "toy_ticks", NULL };

const struct probe_ops probe_toy = {
	.name = "toy",
	.writes = toy_writes,
	.summary = "the target's live processes, counted once an interval (a worked example)",
	.options = toy_options,
	.available = toy_available,
	.start = toy_start,
	.poll = toy_poll,
	.stop = toy_stop,
	.free = toy_free,
};
