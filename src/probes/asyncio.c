/* asyncio probe: the asyncio agent's records (tasks, event-loop lag, retry
 * waits, semaphore, lock and connection-pool waits) read into the recording.
 *
 * The agent is pure Python (src/agents/asyncio): its directory goes first on
 * the command's PYTHONPATH, where its sitecustomize.py runs at every Python's
 * start-up, chains the user's own sitecustomize, and turns on only when the
 * program imports asyncio (3.8+). Each process writes aio-PID.txt into the
 * run's agent directory (agent_dir.h, shared with the allocation agent) in
 * the format of aio_wire.h; this probe follows those files as they grow and
 * stores their records in the aio_* tables. Records are bounded (AIO_ROWS_MAX); the rest are counted. */
#define LOG_DOMAIN "asyncio"
#include "probe.h"
#include "agent_dir.h"
#include "agent_reader.h"
#include "aio_wire.h"
#include "../record/recorder.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define AIO_AGENT_FILE "asyncio-agent/sitecustomize.py"
#define AIO_POLL_NS (200 * 1000000LL)
#define AIO_READ_PER_POLL (4 * 1024 * 1024) /* bytes per file; the rest waits a poll */
#define AIO_ROWS_MAX 4000000LL

static const char aio_schema[] =
	"CREATE TABLE IF NOT EXISTS aio_locations(pid INTEGER, id INTEGER, function TEXT,"
	" file TEXT, line INTEGER, PRIMARY KEY(pid, id));"
	"CREATE TABLE IF NOT EXISTS aio_tasks(pid INTEGER, id INTEGER, created_ns INTEGER,"
	" site INTEGER, coro INTEGER, tid INTEGER, done_ns INTEGER, state TEXT,"
	" PRIMARY KEY(pid, id));"
	"CREATE TABLE IF NOT EXISTS aio_lag(pid INTEGER, tid INTEGER, t_ns INTEGER,"
	" late_ns INTEGER);"
	"CREATE TABLE IF NOT EXISTS aio_retries(pid INTEGER, t_ns INTEGER, site INTEGER,"
	" delay_ns INTEGER, exc TEXT, task INTEGER);"
	"CREATE TABLE IF NOT EXISTS aio_waits(pid INTEGER, t_ns INTEGER, wait_ns INTEGER,"
	" site INTEGER, task INTEGER, kind TEXT, pool INTEGER, in_flight INTEGER);"
	"CREATE TABLE IF NOT EXISTS aio_pools(pid INTEGER, id INTEGER, slots INTEGER,"
	" site INTEGER, caller INTEGER, PRIMARY KEY(pid, id));"
	"CREATE TABLE IF NOT EXISTS aio_processes(pid INTEGER PRIMARY KEY, python TEXT,"
	" tasks_dropped INTEGER, write_errors INTEGER, bad_lines INTEGER);";

enum { INS_LOC, INS_TASK, UPD_TASK, INS_LAG, INS_RETRY, INS_WAIT, INS_POOL, INS_PROC, INS_N };

static const char *const ins_sql[INS_N] = {
	"INSERT OR REPLACE INTO aio_locations VALUES(?,?,?,?,?)",
	"INSERT OR REPLACE INTO aio_tasks VALUES(?,?,?,?,?,?,NULL,NULL)",
	"UPDATE aio_tasks SET done_ns = ?, state = ? WHERE pid = ? AND id = ?",
	"INSERT INTO aio_lag VALUES(?,?,?,?)",
	"INSERT INTO aio_retries VALUES(?,?,?,?,?,?)",
	"INSERT INTO aio_waits VALUES(?,?,?,?,?,?,?,?)",
	"INSERT OR REPLACE INTO aio_pools VALUES(?,?,?,?,?)",
	"INSERT OR REPLACE INTO aio_processes VALUES(?,?,?,?,?)",
};

/* What a process's file said about it (agent_file.user). */
struct aio_proc {
	char *python;
	int64_t tasks_dropped, write_errors;
};

static int line_apply(void *arg, struct agent_file *f, const char *line, size_t len);

static const struct agent_reader_spec aio_spec = {
	.probe = "asyncio",
	.agent = "the asyncio agent",
	.schema = aio_schema,
	.sql = ins_sql,
	.n_sql = INS_N,
	.prefix = "aio-",
	.line_max = AIO_LINE_MAX,
	.read_max = AIO_READ_PER_POLL,
	.user_size = sizeof(struct aio_proc),
	.rows_max = AIO_ROWS_MAX,
	.line = line_apply,
};

struct aio_state {
	struct agent_reader ar; /* its statements: ins_sql's */
};

static int aio_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT;
	int rc = -1;
	if (ctx->cfg->no_agent)
		strbuf_addstr(why, "turned off by --no-agent");
	else if (!ctx->env)
		strbuf_addstr(why, "the asyncio agent needs the command launched by sonde (it is "
				   "loaded through PYTHONPATH)");
	else if (agent_find("SONDE_ASYNCIO_AGENT", AIO_AGENT_FILE, &path))
		strbuf_addf(why, "the asyncio agent %s is missing: build it with 'make'", path.buf);
	else if (strchr(path.buf, ':'))
		strbuf_addf(why, "the asyncio agent's path '%s' has a colon, which PYTHONPATH "
				 "cannot carry",
			    path.buf);
	else
		rc = 0;
	strbuf_release(&path);
	return rc;
}

static int aio_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct aio_state *st = xcalloc(1, sizeof(*st));
	p->state = st;
	struct strbuf path = STRBUF_INIT, sb = STRBUF_INIT;
	int rc = -1;
	if (agent_find("SONDE_ASYNCIO_AGENT", AIO_AGENT_FILE, &path)) {
		strbuf_addf(why, "the asyncio agent %s is missing", path.buf);
		goto out;
	}
	*strrchr(path.buf, '/') = '\0'; /* its directory goes on PYTHONPATH */
	if (agent_reader_start(&st->ar, ctx, &aio_spec, why))
		goto out;
	const char *old = probe_env_get(ctx, "PYTHONPATH");
	int had_old = old && *old; /* for the changelog line, below */
	probe_env_path_prepend(ctx, "PYTHONPATH", path.buf);
	probe_env_set(ctx, "SONDE_ASYNCIO_DIR", st->ar.dir);
	strbuf_addf(&sb, "PYTHONPATH=%s%s: sonde's start-up hook (sitecustomize.py), which runs "
			 "your own sitecustomize as usual and, in a Python 3.8+ that imports "
			 "asyncio, records tasks, event-loop lag, retry waits and semaphore waits; "
			 "SONDE_ASYNCIO_DIR=%s: where it writes them (removed after the run); "
			 "--no-agent turns it off",
		    path.buf, had_old ? ":$PYTHONPATH" : "", st->ar.dir);
	record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	p->next_poll_ns = ctx->start_ns + AIO_POLL_NS;
	rc = 0;
out:
	strbuf_release(&path);
	strbuf_release(&sb);
	return rc;
}

static void bind_text(sqlite3_stmt *st, int col, const char *s, size_t len)
{
	sqlite3_bind_text(st, col, s, (int)len, SQLITE_TRANSIENT);
}

/* One record into its table; t fields made relative to the run's start. */
static void record_apply(struct aio_state *st, struct probe_ctx *ctx, struct agent_file *f,
			 const struct aio_record *r)
{
	struct aio_proc *s = f->user;
	sqlite3_stmt *q = NULL;
	const int64_t *n = r->n;
	int64_t t0 = ctx->start_ns;
	if (r->kind == 'V') {
		free(s->python);
		s->python = xstrndup(r->s[0], r->slen[0]);
		return;
	}
	if (r->kind == 'X') {
		if (r->slen[0] == 13 && !memcmp(r->s[0], "tasks_dropped", 13))
			s->tasks_dropped = n[0];
		else if (r->slen[0] == 12 && !memcmp(r->s[0], "write_errors", 12))
			s->write_errors = n[0];
		return;
	}
	if (agent_reader_row(&st->ar))
		return;
	switch (r->kind) {
	case 'N':
		q = st->ar.ins[INS_LOC];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[0]);
		bind_text(q, 3, r->s[0], r->slen[0]);
		bind_text(q, 4, r->s[1], r->slen[1]);
		sqlite3_bind_int64(q, 5, n[1]);
		break;
	case 'T':
		q = st->ar.ins[INS_TASK];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[0]);
		sqlite3_bind_int64(q, 3, n[1] - t0);
		sqlite3_bind_int64(q, 4, n[2]);
		sqlite3_bind_int64(q, 5, n[3]);
		sqlite3_bind_int64(q, 6, n[4]);
		break;
	case 'E':
		q = st->ar.ins[UPD_TASK];
		sqlite3_bind_int64(q, 1, n[1] - t0);
		bind_text(q, 2, r->s[0], r->slen[0]);
		sqlite3_bind_int64(q, 3, f->pid);
		sqlite3_bind_int64(q, 4, n[0]);
		break;
	case 'L':
		q = st->ar.ins[INS_LAG];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[0]);
		sqlite3_bind_int64(q, 3, n[1] - t0);
		sqlite3_bind_int64(q, 4, n[2]);
		break;
	case 'R':
		q = st->ar.ins[INS_RETRY];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[0] - t0);
		sqlite3_bind_int64(q, 3, n[1]);
		sqlite3_bind_int64(q, 4, n[2]);
		bind_text(q, 5, r->s[0], r->slen[0]);
		sqlite3_bind_int64(q, 6, n[3]);
		break;
	case 'W':
		q = st->ar.ins[INS_WAIT];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[0] - t0);
		sqlite3_bind_int64(q, 3, n[1]);
		sqlite3_bind_int64(q, 4, n[2]);
		sqlite3_bind_int64(q, 5, n[3]);
		bind_text(q, 6, r->s[0], r->slen[0]);
		sqlite3_bind_int64(q, 7, n[4]);
		if (n[5] >= 0)
			sqlite3_bind_int64(q, 8, n[5]);
		else
			sqlite3_bind_null(q, 8);
		break;
	case 'P':
		q = st->ar.ins[INS_POOL];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[0]);
		sqlite3_bind_int64(q, 3, n[1]);
		sqlite3_bind_int64(q, 4, n[2]);
		sqlite3_bind_int64(q, 5, n[3]);
		break;
	default:
		return;
	}
	recorder_step(ctx->rec, q);
}

static int line_apply(void *arg, struct agent_file *f, const char *line, size_t len)
{
	struct aio_state *st = arg;
	struct aio_record r;
	if (aio_record_parse(line, len, &r))
		return -1;
	record_apply(st, st->ar.ctx, f, &r);
	return 0;
}

static void aio_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct aio_state *st = p->state;
	agent_reader_read(&st->ar, ctx, 0, st);
	p->next_poll_ns = now_ns + AIO_POLL_NS;
}

static void aio_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct aio_state *st = p->state;
	agent_reader_read(&st->ar, ctx, 1, st);
	static const struct aio_proc none;
	for (size_t i = 0; i < st->ar.files.n; i++) {
		struct agent_file *f = &st->ar.files.f[i];
		const struct aio_proc *s = f->user ? f->user : &none;
		sqlite3_stmt *q = st->ar.ins[INS_PROC];
		sqlite3_bind_int64(q, 1, f->pid);
		if (s->python)
			sqlite3_bind_text(q, 2, s->python, -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(q, 2);
		sqlite3_bind_int64(q, 3, s->tasks_dropped);
		sqlite3_bind_int64(q, 4, s->write_errors);
		sqlite3_bind_int64(q, 5, f->bad_lines);
		recorder_step(ctx->rec, q);
	}
	record_meta_int(ctx->rec, "aio_processes", (int64_t)st->ar.files.n);
	agent_reader_notes(&st->ar, ctx);
}

static void aio_proc_free(void *p)
{
	struct aio_proc *s = p;
	if (s)
		free(s->python);
	free(s);
}

static void aio_free(struct probe *p)
{
	struct aio_state *st = p->state;
	if (!st)
		return;
	agent_reader_release(&st->ar, aio_proc_free);
	free(st);
	p->state = NULL;
}

static int aio_no_agent_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	(void)arg;
	(void)err;
	cfg->no_agent = 1;
	return 0;
}

static const struct probe_option aio_options[] = {
	{ .name = "no-agent", .arg = PROBE_ARG_NONE,
	  .help = "load no agent into the command (the asyncio\n"
		  "recorder, on by default for Pythons that use\n"
		  "asyncio, goes in through PYTHONPATH; the CUDA\n"
		  "agent through CUDA_INJECTION64_PATH)",
	  .run_only = "--no-agent belongs to 'sonde run': nothing is loaded into an attached "
		      "process",
	  .parse = aio_no_agent_parse },
	{ .name = NULL },
};

static const char *const asyncio_writes[] = {
	"aio_locations",
	"aio_tasks",
	"aio_lag",
	"aio_retries",
	"aio_waits",
	"aio_pools",
	"aio_processes",
	NULL,
};

const struct probe_ops probe_asyncio = {
	.name = "asyncio",
	.writes = asyncio_writes,
	.summary = "asyncio tasks, event-loop lag, retries and waits (Python 3.8+ agent)",
	.options = aio_options,
	.enabled_by_default = 1,
	.quiet_when_unavailable = 1,
	.available = aio_available,
	.start = aio_start,
	.poll = aio_poll,
	.stop = aio_stop,
	.free = aio_free,
};
