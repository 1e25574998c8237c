/* pyfunction probe: the Python functions `--function` names
 * ("path/module.py:Class.method", "package.module:func"), timed call by call
 * by an agent inside the program that wraps each when its module is imported
 * (src/agents/asyncio/_sonde_function.py; no file is touched).
 *
 * The agent goes in as the asyncio agent does: its directory first on the
 * command's PYTHONPATH, where sitecustomize.py installs it when
 * SONDE_FUNCTION_DIR is set (SONDE_FUNCTIONS: one "id<TAB>spec" line per
 * Python SPEC). Each process writes fn-PID.txt in the run's agent directory,
 * one record a line, the kind first, fields separated by tabs:
 *
 *   V version pid python_version
 *   F target status function file line note    status: wrapped or not_found
 *   K id function file line                     a caller (ids per process)
 *   C target tid t_ns wall_ns cpu_ns caller     one call (t_ns CLOCK_MONOTONIC)
 *   L target line hits wall_ns text             a line's totals, at exit
 *   O target calls overhead_ns                  calls counted, at exit
 *
 * This probe stores them in the fn_* tables (fn_table.h) that the native
 * function probe writes too, so one analysis and one report section serve
 * both. --no-agent turns it off. */
#define LOG_DOMAIN "pyfunction"
#include "probe.h"
#include "agent_dir.h"
#include "agent_reader.h"
#include "fn_table.h"
#include "fnspec.h"
#include "wire_fields.h"
#include "../record/recorder.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define PYFN_AGENT_FILE "asyncio-agent/_sonde_function.py"
#define PYFN_POLL_NS (200 * 1000000LL)
#define PYFN_READ_PER_POLL (4 * 1024 * 1024)
#define PYFN_LINE_MAX 8192
#define PYFN_CALLERS_MAX 100000 /* per process */

enum { INS_CALL, INS_CALLER, INS_LINE, INS_N };
static const char *const pyfn_sql[INS_N] = {FN_CALLS_INSERT, FN_CALLERS_INSERT, FN_LINES_INSERT};

struct pyfn_target {
	int id;
	const char *spec;
	char *function, *file, *note;
	int line, wrapped;
	int64_t calls, timed, overhead_n;
	double overhead_sum_ns;
};

/* A process's callers: its agent's ids to (function, file, line). */
struct pyfn_caller {
	char *function, *file;
	int line;
};
struct pyfn_proc {
	struct pyfn_caller *v;
	size_t n;
};

struct pyfn_state {
	struct agent_reader ar;
	struct pyfn_target *targets;
	size_t ntargets;
	struct hashmap caller_ids; /* target, function, file -> fn_callers.id */
	int64_t next_caller;
};

static int pyfn_line(void *arg, struct agent_file *f, const char *line, size_t len);

static const struct agent_reader_spec pyfn_spec = {
    .probe = "pyfunction",
    .agent = "the --function agent",
    .schema = fn_table_schema,
    .sql = pyfn_sql,
    .n_sql = INS_N,
    .prefix = "fn-",
    .line_max = PYFN_LINE_MAX,
    .read_max = PYFN_READ_PER_POLL,
    .user_size = sizeof(struct pyfn_proc),
    .rows_max = FN_TABLE_ROWS_MAX,
    .line = pyfn_line,
};

static int pyfn_wanted(const struct probe_config *cfg)
{
	for (const char *const *s = cfg->functions; *s; s++)
		if (fnspec_kind(*s, cfg->argv) == FNSPEC_PYTHON)
			return 1;
	return 0;
}

static int pyfn_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT;
	int rc = -1;
	if (!pyfn_wanted(ctx->cfg))
		strbuf_addstr(why, "no Python function named (--function)");
	else if (ctx->cfg->no_agent)
		strbuf_addstr(why, "turned off by --no-agent: Python functions are timed by an "
				   "agent inside the program");
	else if (!ctx->env)
		strbuf_addstr(why, "Python functions are timed by an agent loaded at the "
				   "program's start (PYTHONPATH): use 'sonde run'");
	else if (agent_find("SONDE_FUNCTION_AGENT", PYFN_AGENT_FILE, &path))
		strbuf_addf(why, "the --function agent %s is missing: build it with 'make'",
			    path.buf);
	else if (strchr(path.buf, ':'))
		strbuf_addf(why, "the agent's path '%s' has a colon, which PYTHONPATH cannot carry",
			    path.buf);
	else
		rc = 0;
	strbuf_release(&path);
	return rc;
}

static int pyfn_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct pyfn_state *st = xcalloc(1, sizeof(*st));
	p->state = st;
	struct strbuf path = STRBUF_INIT, specs = STRBUF_INIT, sb = STRBUF_INIT;
	int rc = -1;
	if (agent_find("SONDE_FUNCTION_AGENT", PYFN_AGENT_FILE, &path)) {
		strbuf_addf(why, "the --function agent %s is missing", path.buf);
		goto out;
	}
	*strrchr(path.buf, '/') = '\0';
	if (agent_reader_start(&st->ar, ctx, &pyfn_spec, why))
		goto out;
	size_t n = 0;
	for (const char *const *s = ctx->cfg->functions; *s; s++)
		n++;
	st->targets = xcalloc(n ? n : 1, sizeof(*st->targets));
	for (size_t i = 0; i < n; i++) {
		const char *spec = ctx->cfg->functions[i];
		if (fnspec_kind(spec, ctx->cfg->argv) != FNSPEC_PYTHON || strchr(spec, '\n') ||
		    strchr(spec, '\t'))
			continue;
		st->targets[st->ntargets++] = (struct pyfn_target){.id = (int)i + 1, .spec = spec};
		strbuf_addf(&specs, "%zu\t%s\n", i + 1, spec);
	}
	probe_env_path_prepend(ctx, "PYTHONPATH", path.buf);
	probe_env_set(ctx, "SONDE_FUNCTION_DIR", st->ar.dir);
	probe_env_set(ctx, "SONDE_FUNCTIONS", specs.buf ? specs.buf : "");
	strbuf_addf(&sb,
		    "PYTHONPATH=%s:...: sonde's start-up hook (sitecustomize.py), which runs "
		    "your own sitecustomize as usual and wraps the Python functions named by "
		    "--function when their module is imported (no file is changed); "
		    "SONDE_FUNCTION_DIR=%s: where it writes their calls (removed after the "
		    "run); --no-agent turns it off",
		    path.buf, st->ar.dir);
	record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	p->next_poll_ns = ctx->start_ns + PYFN_POLL_NS;
	rc = 0;
out:
	strbuf_release(&path);
	strbuf_release(&specs);
	strbuf_release(&sb);
	return rc;
}

static struct pyfn_target *target_of(struct pyfn_state *st, int64_t id)
{
	for (size_t i = 0; i < st->ntargets; i++)
		if (st->targets[i].id == id)
			return &st->targets[i];
	return NULL;
}

static void bind_text(sqlite3_stmt *q, int col, const char *s, size_t len)
{
	sqlite3_bind_text(q, col, s, (int)len, SQLITE_TRANSIENT);
}

/* The fn_callers id of a process's caller cid for target t (written once). */
static int64_t caller_id(struct pyfn_state *st, const struct pyfn_proc *pp,
			 const struct pyfn_target *t, int64_t cid)
{
	if (cid < 1 || (size_t)cid > pp->n || !pp->v[cid - 1].function)
		return -1;
	const struct pyfn_caller *c = &pp->v[cid - 1];
	struct strbuf key = STRBUF_INIT;
	strbuf_add(&key, &t->id, sizeof(t->id));
	strbuf_addf(&key, "%s%c%s", c->function, 0, c->file);
	int64_t *known = hashmap_get(&st->caller_ids, key.buf, key.len), id;
	if (known) {
		id = *known;
	} else {
		id = ++st->next_caller;
		hashmap_put(&st->caller_ids, key.buf, key.len, id);
		sqlite3_stmt *q = st->ar.ins[INS_CALLER];
		sqlite3_bind_int(q, 1, t->id);
		sqlite3_bind_int64(q, 2, id);
		sqlite3_bind_text(q, 3, c->function, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(q, 4, c->file, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(q, 5, c->line);
		recorder_step(st->ar.ctx->rec, q);
	}
	strbuf_release(&key);
	return id;
}

static void caller_keep(struct pyfn_proc *pp, int64_t cid, const char *const *s, const size_t *slen,
			int64_t line)
{
	if (cid < 1 || cid > PYFN_CALLERS_MAX)
		return;
	if ((size_t)cid > pp->n) {
		pp->v = xrealloc(pp->v, (size_t)cid * sizeof(*pp->v));
		memset(pp->v + pp->n, 0, ((size_t)cid - pp->n) * sizeof(*pp->v));
		pp->n = (size_t)cid;
	}
	struct pyfn_caller *c = &pp->v[cid - 1];
	free(c->function);
	free(c->file);
	c->function = xstrndup(s[0], slen[0]);
	c->file = xstrndup(s[1], slen[1]);
	c->line = (int)line;
}

static void found_keep(struct pyfn_target *t, const int64_t *n, const char *const *s,
		       const size_t *slen)
{
	int wrapped = slen[0] == 7 && !memcmp(s[0], "wrapped", 7);
	if (wrapped && !t->wrapped) {
		free(t->function);
		free(t->file);
		t->function = xstrndup(s[1], slen[1]);
		t->file = xstrndup(s[2], slen[2]);
		t->line = (int)n[1];
		t->wrapped = 1;
	} else if (!wrapped && !t->note && slen[3]) {
		t->note = xstrndup(s[3], slen[3]);
	}
}

static int pyfn_line(void *arg, struct agent_file *f, const char *line, size_t len)
{
	struct pyfn_state *st = arg;
	struct pyfn_proc *pp = f->user;
	int64_t n[6];
	const char *s[4];
	size_t slen[4];
	if (len < 2 || line[1] != '\t')
		return -1;
	static const char *const layouts[] = {"V:iis",	  "F:isssis", "K:issi",
					      "C:iiiiii", "L:iiiis",  "O:iii"};
	const char *fields = NULL;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i][0] == line[0])
			fields = layouts[i] + 2;
	if (!fields || wire_fields_parse(line, len, fields, n, s, slen))
		return -1;
	struct pyfn_target *t = line[0] == 'V' || line[0] == 'K' ? NULL : target_of(st, n[0]);
	sqlite3_stmt *q = NULL;
	switch (line[0]) {
	case 'K':
		caller_keep(pp, n[0], s, slen, n[1]);
		return 0;
	case 'F':
		if (t)
			found_keep(t, n, s, slen);
		return 0;
	case 'O':
		if (t) {
			t->calls += n[1];
			t->overhead_sum_ns += (double)n[2];
			t->overhead_n++;
		}
		return 0;
	case 'C':
		if (!t || agent_reader_row(&st->ar))
			return 0;
		q = st->ar.ins[INS_CALL];
		sqlite3_bind_int(q, 1, t->id);
		sqlite3_bind_int64(q, 2, f->pid);
		sqlite3_bind_int64(q, 3, n[1]);
		sqlite3_bind_int64(q, 4, n[2] - st->ar.ctx->start_ns);
		sqlite3_bind_int64(q, 5, n[3]);
		sqlite3_bind_int64(q, 6, n[4]);
		int64_t id = caller_id(st, pp, t, n[5]);
		if (id > 0)
			sqlite3_bind_int64(q, 7, id);
		else
			sqlite3_bind_null(q, 7);
		t->timed++;
		break;
	case 'L':
		if (!t || agent_reader_row(&st->ar))
			return 0;
		q = st->ar.ins[INS_LINE];
		sqlite3_bind_int(q, 1, t->id);
		sqlite3_bind_int64(q, 2, f->pid);
		sqlite3_bind_int64(q, 3, n[1]);
		sqlite3_bind_int64(q, 4, n[2]);
		sqlite3_bind_int64(q, 5, n[3]);
		bind_text(q, 6, s[0], slen[0]);
		break;
	default:
		return 0;
	}
	recorder_step(st->ar.ctx->rec, q);
	return 0;
}

static void pyfn_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct pyfn_state *st = p->state;
	agent_reader_read(&st->ar, ctx, 0, st);
	p->next_poll_ns = now_ns + PYFN_POLL_NS;
}

static void pyfn_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct pyfn_state *st = p->state;
	agent_reader_read(&st->ar, ctx, 1, st);
	for (size_t i = 0; i < st->ntargets; i++) {
		struct pyfn_target *t = &st->targets[i];
		int64_t calls = t->calls > t->timed ? t->calls : t->timed;
		struct strbuf note = STRBUF_INIT;
		if (!t->wrapped && !t->note)
			strbuf_addstr(&note, st->ar.files.n
						 ? "no Python process of the run imported it"
						 : "no Python process of the run started "
						   "the agent (not a Python program, or "
						   "Python older than 3.8)");
		else if (!t->wrapped)
			strbuf_addstr(&note, t->note);
		else if (calls > t->timed)
			strbuf_addf(&note, "%lld of %lld calls timed", (long long)t->timed,
				    (long long)calls);
		struct fn_target_row row = {
		    .id = t->id,
		    .spec = t->spec,
		    .kind = "python",
		    .function = t->function,
		    .file = t->file,
		    .line = t->line,
		    .status = !t->wrapped ? "not_found"
			      : calls	  ? "measured"
					  : "never_called",
		    .note = note.len ? note.buf : NULL,
		    .calls = t->wrapped ? calls : -1,
		    .calls_timed = t->wrapped ? t->timed : -1,
		    .overhead_ns = t->overhead_n ? t->overhead_sum_ns / (double)t->overhead_n : -1,
		};
		fn_table_target(ctx->rec, &row);
		if (!t->wrapped) {
			struct strbuf w = STRBUF_INIT;
			strbuf_addf(&w, "--function '%s': not measured: %s", t->spec, note.buf);
			log_warn("%s", w.buf);
			record_note(ctx->rec, 0, "pyfunction", "warning", w.buf);
			strbuf_release(&w);
		}
		strbuf_release(&note);
	}
	agent_reader_notes(&st->ar, ctx);
}

static void pyfn_proc_free(void *arg)
{
	struct pyfn_proc *pp = arg;
	for (size_t i = 0; pp && i < pp->n; i++) {
		free(pp->v[i].function);
		free(pp->v[i].file);
	}
	if (pp)
		free(pp->v);
	free(pp);
}

static void pyfn_free(struct probe *p)
{
	struct pyfn_state *st = p->state;
	if (!st)
		return;
	agent_reader_release(&st->ar, pyfn_proc_free);
	for (size_t i = 0; i < st->ntargets; i++) {
		free(st->targets[i].function);
		free(st->targets[i].file);
		free(st->targets[i].note);
	}
	free(st->targets);
	hashmap_release(&st->caller_ids);
	free(st);
	p->state = NULL;
}

static const char *const pyfunction_writes[] = {
	"fn_targets",
	"fn_calls",
	"fn_callers",
	"fn_lines",
	NULL,
};

const struct probe_ops probe_pyfunction = {
    .name = "pyfunction",
    .writes = pyfunction_writes,
    .summary = "Python functions named by --function: calls, wall and CPU time, callers, "
	       "lines (agent)",
    .enabled_by_default = 0,
    .wanted = pyfn_wanted,
    .available = pyfn_available,
    .start = pyfn_start,
    .poll = pyfn_poll,
    .stop = pyfn_stop,
    .free = pyfn_free,
};
