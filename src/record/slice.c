/* slice: the table map of the recording and the copy of its rows that a
 * time window, a process or a thread selects. */
#include "slice.h"
#include "reader.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <string.h>

#define SLICE_LISTED_IDS 12 /* pids or tids named in an error */
#define SLICE_NO_END	 (INT64_MAX / 4)

/* Every table any part of sonde creates, and how a slice cuts it. A new table
 * is one more line here (tests/unit/test_slice.c checks that none is missing). */
#define WHOLE(table, pid, tid)                                                                     \
	{                                                                                          \
		.name = table, .rule = SLICE_WHOLE, .pid_col = pid, .tid_col = tid                 \
	}
#define TOTAL(table, pid, tid)                                                                     \
	{                                                                                          \
		.name = table, .rule = SLICE_TOTAL, .pid_col = pid, .tid_col = tid                 \
	}
#define AT(table, pid, tid)                                                                        \
	{                                                                                          \
		.name = table, .rule = SLICE_AT, .time_col = "t_ns", .pid_col = pid,               \
		.tid_col = tid                                                                     \
	}
#define SPAN(table, pid, tid)                                                                      \
	{                                                                                          \
		.name = table, .rule = SLICE_SPAN, .time_col = "start_ns", .end_col = "end_ns",    \
		.pid_col = pid, .tid_col = tid                                                     \
	}
/* Rows that mix every process: left out by a pid or tid filter. */
#define MIXED_AT(table)                                                                            \
	{                                                                                          \
		.name = table, .rule = SLICE_AT, .time_col = "t_ns", .mixed = 1                    \
	}

const struct slice_table slice_tables[] = {
	/* core (src/record/recorder.c) */
	WHOLE("meta", NULL, NULL),
	{ .name = "processes",
	  .rule = SLICE_SPAN,
	  .time_col = "start_ns",
	  .end_col = "end_ns",
	  .pid_col = "pid",
	  .open_end = 1,
	  .end_nulls = "exit_code,signal" },
	TOTAL("rusage", "pid", NULL),
	/* pid there is always the launched process's: output is the run's, and
	 * phases are found in it. */
	AT("output_lines", NULL, NULL),
	AT("notes", NULL, NULL),
	WHOLE("probes", NULL, NULL),
	WHOLE("changelog", NULL, NULL),
	/* who the program is: its launcher's chain of execs, whole */
	WHOLE("execs", "pid", NULL),
	/* proc probe, exits (src/probes/proc.c, src/session/exits.c) */
	{ .name = "proc_samples",
	  .rule = SLICE_AT,
	  .time_col = "t_ns",
	  .pid_col = "pid",
	  .levels = "user_ns,sys_ns,minflt,majflt,vcsw,ivcsw,runq_wait_ns,rchar,wchar,"
		    "read_bytes,write_bytes,syscr,syscw",
	  .lifetime = "hwm_bytes" },
	{ .name = "task_exits",
	  .rule = SLICE_LIFE,
	  .time_col = "t_ns",
	  .pid_col = "pid",
	  .tid_col = "tid" },
	/* stacks (src/record/stacks.c) */
	WHOLE("frames", NULL, NULL),
	WHOLE("stack_nodes", NULL, NULL),
	AT("samples", "pid", "tid"),
	WHOLE("threads", "pid", "tid"),
	/* cpu, counters, offcpu probes */
	TOTAL("counters", "pid", "tid"),
	{ .name = "sample_counters", .rule = SLICE_TOTAL, .mixed = 1 },
	TOTAL("offcpu_threads", "pid", "tid"),
	TOTAL("offcpu_states", "pid", "tid"),
	AT("process_events", "pid", NULL),
	/* system probe: the machine, whatever the process */
	AT("disk_samples", NULL, NULL),
	AT("machine_samples", NULL, NULL),
	/* syscalls probe */
	TOTAL("syscalls", "pid", NULL),
	AT("syscall_timeline", "pid", NULL),
	TOTAL("syscall_errors", "pid", NULL),
	TOTAL("syscall_files", "pid", NULL),
	TOTAL("syscall_python", "pid", NULL), /* derive/syscall_python.c */
	/* alloc probe */
	TOTAL("alloc_sites", "pid", NULL),
	MIXED_AT("alloc_timeline"),
	MIXED_AT("alloc_site_timeline"),
	WHOLE("alloc_site_python", NULL, NULL),
	/* asyncio probe */
	WHOLE("aio_locations", "pid", NULL),
	{ .name = "aio_tasks",
	  .rule = SLICE_SPAN,
	  .time_col = "created_ns",
	  .end_col = "done_ns",
	  .pid_col = "pid",
	  .tid_col = "tid",
	  .open_end = 1 },
	AT("aio_lag", "pid", "tid"),
	AT("aio_retries", "pid", NULL),
	AT("aio_waits", "pid", NULL),
	WHOLE("aio_pools", "pid", NULL),
	WHOLE("aio_processes", "pid", NULL),
	/* nvml probe */
	WHOLE("nvml_devices", NULL, NULL),
	MIXED_AT("nvml_samples"),
	AT("nvml_proc_memory", "pid", NULL),
	WHOLE("nvml_topology", NULL, NULL),
	/* cuda probe */
	WHOLE("gpu_processes", "pid", NULL),
	WHOLE("gpu_devices", "pid", NULL),
	SPAN("gpu_kernels", "pid", NULL),
	SPAN("gpu_copies", "pid", NULL),
	SPAN("gpu_memsets", "pid", NULL),
	SPAN("gpu_api", "pid", "tid"),
	SPAN("gpu_syncs", "pid", NULL),
	AT("gpu_memory", "pid", NULL),
	SPAN("nvtx_ranges", "pid", "tid"),
	/* function and pyfunction probes (--function): a call is kept when it
	 * began in the window; a Python function's line totals are whole-run */
	WHOLE("fn_targets", NULL, NULL),
	AT("fn_calls", "pid", "tid"),
	WHOLE("fn_callers", NULL, NULL),
	TOTAL("fn_lines", "pid", NULL),
	{ .name = NULL },
};

const struct slice_table *slice_table_find(const char *name)
{
	for (const struct slice_table *t = slice_tables; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

/* The filter made concrete: a window on the run's clock [from, to). */
struct slice_cut {
	int64_t from_ns, to_ns; /* to_ns SLICE_NO_END: no end */
	int64_t end_ns;		/* the run's end, for wall_ns */
	int window;		/* a window narrower than the run */
	int64_t pid, tid;
	const char *phase; /* the filter's, or NULL */
};

static int64_t max_time(sqlite3 *db, const char *table, const char *col)
{
	struct strbuf sql = STRBUF_INIT;
	double v = -1;
	if (recording_has_table(db, table)) {
		strbuf_addf(&sql, "SELECT max(%s) FROM %s", col, table);
		if (recording_query_double(db, sql.buf, &v))
			v = -1;
	}
	strbuf_release(&sql);
	return (int64_t)v;
}

int64_t slice_run_end_ns(sqlite3 *db)
{
	int64_t launch_ns = 0, wall_ns;
	recording_meta_int(db, "launch_ns", &launch_ns);
	if (!recording_meta_int(db, "wall_ns", &wall_ns) && wall_ns > 0)
		return launch_ns + wall_ns;
	int64_t end = -1, t;
	static const char *const timed[] = { "samples", "proc_samples", "output_lines" };
	for (size_t i = 0; i < sizeof(timed) / sizeof(timed[0]); i++)
		if ((t = max_time(db, timed[i], "t_ns")) > end)
			end = t;
	return end;
}

/* Appends up to SLICE_LISTED_IDS of the ids the query returns ("1, 2 and 3
 * more"); 1 when want is one of them. */
static int ids_list(sqlite3 *db, const char *sql, int64_t pid, int64_t want, struct strbuf *out)
{
	sqlite3_stmt *st;
	size_t n = 0;
	int found = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_bind_parameter_count(st))
		sqlite3_bind_int64(st, 1, pid);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		found |= id == want;
		if (n < SLICE_LISTED_IDS)
			strbuf_addf(out, "%s%lld", n ? ", " : "", (long long)id);
		n++;
	}
	if (n > SLICE_LISTED_IDS)
		strbuf_addf(out, " and %zu more", n - SLICE_LISTED_IDS);
	sqlite3_finalize(st);
	return found;
}

#define PIDS_SQL "SELECT pid FROM processes ORDER BY 1"
#define TIDS_SQL                                                                                   \
	"SELECT tid FROM threads WHERE pid = ?1 UNION SELECT tid FROM samples WHERE pid = ?1 ORDER BY 1"

/* Checks the filter against the recording and makes it concrete. */
static int cut_make(sqlite3 *db, const struct slice_filter *f, struct slice_cut *cut,
		    struct strbuf *err)
{
	int64_t end = slice_run_end_ns(db);
	struct strbuf ids = STRBUF_INIT;
	int ret = -1;
	if (f->from_ns < 0 || (f->to_ns >= 0 && f->to_ns <= f->from_ns) || f->to_ns == 0) {
		strbuf_addf(err,
			    "empty window: --from %.3f s must be 0 or more and before --to %.3f s",
			    (double)f->from_ns / 1e9, (double)f->to_ns / 1e9);
		goto out;
	}
	if (end < 0 && (f->from_ns > 0 || f->to_ns >= 0)) {
		strbuf_addstr(err, "the recording holds no timed rows: it cannot be cut by time");
		goto out;
	}
	if (f->from_ns > 0 && f->from_ns >= end) {
		strbuf_addf(err, "--from %.3f s is past the run's end (%.3f s)",
			    (double)f->from_ns / 1e9, (double)end / 1e9);
		goto out;
	}
	int64_t pid = f->pid;
	if (pid && !ids_list(db, PIDS_SQL, 0, pid, &ids)) {
		strbuf_addf(err, "pid %lld was not recorded (recorded: %s)", (long long)pid,
			    ids.len ? ids.buf : "none");
		goto out;
	}
	if (f->tid && !pid) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db,
				       "SELECT pid FROM threads WHERE tid = ?1 UNION"
				       " SELECT pid FROM samples WHERE tid = ?1 LIMIT 1",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, f->tid);
			if (sqlite3_step(st) == SQLITE_ROW)
				pid = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
		if (!pid) {
			strbuf_addf(err, "thread %lld was not recorded", (long long)f->tid);
			goto out;
		}
	}
	strbuf_reset(&ids);
	if (f->tid && !ids_list(db, TIDS_SQL, pid, f->tid, &ids)) {
		strbuf_addf(err, "thread %lld was not recorded in pid %lld (recorded: %s)",
			    (long long)f->tid, (long long)pid, ids.len ? ids.buf : "none");
		goto out;
	}
	cut->from_ns = f->from_ns;
	cut->to_ns = f->to_ns >= 0 && f->to_ns < end ? f->to_ns : SLICE_NO_END;
	cut->end_ns = end;
	cut->window = cut->from_ns > 0 || cut->to_ns != SLICE_NO_END;
	cut->pid = pid;
	cut->tid = f->tid;
	cut->phase = f->phase;
	ret = 0;
out:
	strbuf_release(&ids);
	return ret;
}

/* Is col one of the comma-separated names in list? */
static int col_in(const char *list, const char *col)
{
	size_t n = strlen(col);
	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, col, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

/* 1 when the slice keeps (some of) the table's rows. */
static int table_kept(const struct slice_table *t, const struct slice_cut *cut)
{
	if (t->rule == SLICE_TOTAL && cut->window)
		return 0;
	if ((cut->pid || cut->tid) && !t->pid_col && t->mixed)
		return 0;
	/* Per-process rows that are not descriptions cannot be cut by thread. */
	if (cut->tid && t->pid_col && !t->tid_col && t->rule != SLICE_WHOLE && !t->open_end)
		return 0;
	return 1;
}

/* The SELECT list: the table's columns, times moved to the window's clock. */
static int select_list(sqlite3 *db, const struct slice_table *t, const struct slice_cut *cut,
		       struct strbuf *sql)
{
	sqlite3_stmt *st;
	struct strbuf q = STRBUF_INIT;
	strbuf_addf(&q, "SELECT name FROM pragma_table_info('%s', 'src')", t->name);
	int rc = sqlite3_prepare_v2(db, q.buf, -1, &st, NULL);
	strbuf_release(&q);
	if (rc != SQLITE_OK)
		return -1;
	long long from = (long long)cut->from_ns, to = (long long)cut->to_ns;
	int n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 0);
		if (!c)
			continue;
		strbuf_addstr(sql, n++ ? ", " : "");
		int is_time = t->time_col && !strcmp(c, t->time_col);
		int is_end = t->end_col && !strcmp(c, t->end_col);
		const char *cut_end = t->end_col ? t->end_col : "NULL";
		if (t->rule == SLICE_SPAN && is_time)
			strbuf_addf(sql, "max(a.\"%s\", %lld) - %lld", c, from, from);
		else if (is_time)
			strbuf_addf(sql, "a.\"%s\" - %lld", c, from);
		else if (is_end && t->open_end)
			strbuf_addf(sql, "CASE WHEN a.\"%s\" < %lld THEN a.\"%s\" - %lld END", c,
				    to, c, from);
		else if (is_end)
			strbuf_addf(sql, "min(a.\"%s\", %lld) - %lld", c, to, from);
		else if (col_in(t->end_nulls, c))
			strbuf_addf(sql, "CASE WHEN a.\"%s\" < %lld THEN a.\"%s\" END", cut_end, to,
				    c);
		else if (cut->window && col_in(t->lifetime, c))
			strbuf_addstr(sql, "NULL");
		else if (cut->from_ns > 0 && t->pid_col && col_in(t->levels, c))
			strbuf_addf(sql, "a.\"%s\" - coalesce(b.\"%s\", 0)", c, c);
		else
			strbuf_addf(sql, "a.\"%s\"", c);
	}
	sqlite3_finalize(st);
	return n ? 0 : -1;
}

static void where_clause(const struct slice_table *t, const struct slice_cut *cut,
			 struct strbuf *sql)
{
	long long from = (long long)cut->from_ns, to = (long long)cut->to_ns;
	strbuf_addstr(sql, " WHERE 1");
	if (cut->window && (t->rule == SLICE_AT || t->rule == SLICE_LIFE))
		strbuf_addf(sql, " AND a.\"%s\" >= %lld AND a.\"%s\" < %lld", t->time_col, from,
			    t->time_col, to);
	if (cut->window && t->rule == SLICE_SPAN)
		strbuf_addf(sql, " AND a.\"%s\" < %lld AND coalesce(a.\"%s\", %lld) >= %lld",
			    t->time_col, to, t->end_col, (long long)SLICE_NO_END, from);
	if (cut->window && t->rule == SLICE_LIFE)
		strbuf_addf(
		    sql, " AND a.\"%s\" IN (SELECT pid FROM src.processes WHERE start_ns >= %lld)",
		    t->pid_col, from);
	if (cut->pid && t->pid_col)
		strbuf_addf(sql, " AND a.\"%s\" = %lld", t->pid_col, (long long)cut->pid);
	if (cut->tid && t->tid_col)
		strbuf_addf(sql, " AND a.\"%s\" = %lld", t->tid_col, (long long)cut->tid);
}

/* Each pid's last row before the window (or at its start): what levels are
 * made relative to. */
static int baseline_make(sqlite3 *db, const struct slice_table *t, const struct slice_cut *cut,
			 struct strbuf *err)
{
	struct strbuf sql = STRBUF_INIT;
	strbuf_addf(&sql,
		    "DROP TABLE IF EXISTS temp.slice_base;"
		    "CREATE TEMP TABLE slice_base AS SELECT a.* FROM src.\"%s\" a JOIN"
		    " (SELECT \"%s\" AS k, max(\"%s\") AS t FROM src.\"%s\" WHERE \"%s\" <= %lld"
		    " GROUP BY 1) m ON a.\"%s\" = m.k AND a.\"%s\" = m.t GROUP BY a.\"%s\"",
		    t->name, t->pid_col, t->time_col, t->name, t->time_col, (long long)cut->from_ns,
		    t->pid_col, t->time_col, t->pid_col);
	int rc = sqlite3_exec(db, sql.buf, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		strbuf_addf(err, "%s: %s", t->name, sqlite3_errmsg(db));
	strbuf_release(&sql);
	return rc == SQLITE_OK ? 0 : -1;
}

static int table_copy(sqlite3 *db, const struct slice_table *t, const char *create,
		      const struct slice_cut *cut, struct strbuf *err)
{
	struct strbuf sql = STRBUF_INIT;
	int ret = -1;
	if (sqlite3_exec(db, create, NULL, NULL, NULL) != SQLITE_OK) {
		strbuf_addf(err, "%s: %s", t->name, sqlite3_errmsg(db));
		goto out;
	}
	int levels = t->levels && t->pid_col && cut->from_ns > 0;
	if (levels && baseline_make(db, t, cut, err))
		goto out;
	strbuf_addf(&sql, "INSERT INTO main.\"%s\" SELECT ", t->name);
	if (select_list(db, t, cut, &sql)) {
		strbuf_addf(err, "%s: its columns could not be read", t->name);
		goto out;
	}
	strbuf_addf(&sql, " FROM src.\"%s\" a", t->name);
	if (levels)
		strbuf_addf(&sql, " LEFT JOIN temp.slice_base b ON b.\"%s\" = a.\"%s\"", t->pid_col,
			    t->pid_col);
	where_clause(t, cut, &sql);
	if (sqlite3_exec(db, sql.buf, NULL, NULL, NULL) != SQLITE_OK) {
		strbuf_addf(err, "%s: %s", t->name, sqlite3_errmsg(db));
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&sql);
	return ret;
}

/* The run's meta, moved to the window, and the slice's own keys. */
static int meta_adjust(sqlite3 *db, const struct slice_cut *cut, const char *left_out,
		       struct strbuf *err)
{
	struct strbuf sql = STRBUF_INIT;
	long long from = (long long)cut->from_ns;
	int64_t launch_ns = 0;
	recording_meta_int(db, "launch_ns", &launch_ns);
	if (cut->window) {
		int64_t to = cut->to_ns == SLICE_NO_END ? cut->end_ns : cut->to_ns;
		int64_t begin = launch_ns > cut->from_ns ? launch_ns : cut->from_ns;
		strbuf_addf(
		    &sql,
		    "INSERT OR REPLACE INTO meta(key, value) VALUES('wall_ns', %lld);"
		    "UPDATE meta SET value = max(value - %lld, 0) WHERE key = 'launch_ns';"
		    "UPDATE meta SET value = value + %lld"
		    " WHERE key IN ('start_mono_ns', 'start_unix_ns', 'cpu_clock_origin_ns');"
		    "UPDATE meta SET value = value - %lld WHERE key = 'alloc_peak_ns';"
		    "DELETE FROM meta WHERE key = 'alloc_peak_ns' AND (value < 0 OR value >= %lld);",
		    (long long)(to - begin), from, from, from, (long long)(to - cut->from_ns));
		if (cut->to_ns != SLICE_NO_END)
			strbuf_addstr(
			    &sql, "DELETE FROM meta WHERE key IN ('exit_code', 'target_exited');");
		strbuf_addf(&sql,
			    "INSERT OR REPLACE INTO meta(key, value) VALUES('slice_from_ns', %lld),"
			    " ('slice_to_ns', %lld);",
			    from, (long long)to);
	}
	if (cut->pid)
		/* The run's exit code is the launched process's. */
		strbuf_addf(&sql,
			    "INSERT OR REPLACE INTO meta(key, value) VALUES('slice_pid', %lld);"
			    "DELETE FROM meta WHERE key IN ('exit_code', 'target_exited') AND"
			    " (SELECT value FROM meta WHERE key = 'leader_pid') IS NOT %lld;",
			    (long long)cut->pid, (long long)cut->pid);
	if (cut->tid)
		strbuf_addf(&sql,
			    "INSERT OR REPLACE INTO meta(key, value) VALUES('slice_tid', %lld);",
			    (long long)cut->tid);
	char *phase = cut->phase ? sqlite3_mprintf("%Q", cut->phase) : NULL;
	if (phase)
		strbuf_addf(&sql,
			    "INSERT OR REPLACE INTO meta(key, value) VALUES('slice_phase', %s);",
			    phase);
	sqlite3_free(phase);
	int ret = sqlite3_exec(db, strbuf_str(&sql), NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	sqlite3_stmt *st;
	if (!ret && left_out) {
		ret = -1;
		if (sqlite3_prepare_v2(
			db, "INSERT OR REPLACE INTO meta(key, value) VALUES('slice_left_out', ?)",
			-1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, left_out, -1, SQLITE_STATIC);
			ret = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
			sqlite3_finalize(st);
		}
	}
	if (ret)
		strbuf_addf(err, "meta: %s", sqlite3_errmsg(db));
	strbuf_release(&sql);
	return ret;
}

/* Copies every table (then its indexes) of the attached recording "src". */
static int tables_copy(sqlite3 *db, const struct slice_cut *cut, struct strbuf *err)
{
	sqlite3_stmt *st;
	struct strbuf left_out = STRBUF_INIT;
	int ret = -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT type, name, tbl_name, sql FROM src.sqlite_master"
			       " WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
			       " ORDER BY type = 'index', rowid",
			       -1, &st, NULL) != SQLITE_OK) {
		strbuf_addf(err, "%s", sqlite3_errmsg(db));
		goto out;
	}
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		const char *table = (const char *)sqlite3_column_text(st, 2);
		const char *create = (const char *)sqlite3_column_text(st, 3);
		if (!type || !name || !table || !create)
			continue;
		const struct slice_table *t = slice_table_find(table);
		int kept = t && table_kept(t, cut);
		if (!strcmp(type, "index")) {
			if (kept && sqlite3_exec(db, create, NULL, NULL, NULL) != SQLITE_OK) {
				strbuf_addf(err, "%s: %s", name, sqlite3_errmsg(db));
				goto out;
			}
			continue;
		}
		if (strcmp(type, "table"))
			continue;
		if (!kept) {
			/* Created empty: queries that join it still run, and find nothing. */
			strbuf_addf(&left_out, "%s%s", left_out.len ? ", " : "", name);
			if (sqlite3_exec(db, create, NULL, NULL, NULL) != SQLITE_OK) {
				strbuf_addf(err, "%s: %s", name, sqlite3_errmsg(db));
				goto out;
			}
			continue;
		}
		if (table_copy(db, t, create, cut, err))
			goto out;
	}
	if (rc != SQLITE_DONE) {
		strbuf_addf(err, "%s", sqlite3_errmsg(db));
		goto out;
	}
	ret = meta_adjust(db, cut, left_out.len ? left_out.buf : NULL, err);
	if (!ret)
		sqlite3_exec(db, "DROP TABLE IF EXISTS temp.slice_base", NULL, NULL, NULL);
out:
	sqlite3_finalize(st);
	strbuf_release(&left_out);
	return ret;
}

int slice_open(const char *path, const struct slice_filter *filter, sqlite3 **out,
	       struct strbuf *err)
{
	sqlite3 *rec = NULL, *db = NULL;
	sqlite3_stmt *st = NULL;
	struct slice_cut cut = { 0 };
	int ret = -1;
	if (recording_open(path, &rec, err))
		goto out;
	if (cut_make(rec, filter, &cut, err))
		goto out;
	/* "": a private temporary database, on disk when it grows, gone at close. */
	if (sqlite3_open_v2("", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		strbuf_addf(err, "a temporary database: %s",
			    db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	if (sqlite3_prepare_v2(db, "ATTACH DATABASE ? AS src", -1, &st, NULL) != SQLITE_OK) {
		strbuf_addf(err, "%s: %s", path, sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		strbuf_addf(err, "%s: %s", path, sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	struct strbuf why = STRBUF_INIT;
	int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK
		     ? tables_copy(db, &cut, &why)
		     : -1;
	rc = sqlite3_exec(db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) == SQLITE_OK && !rc
		 ? 0
		 : -1;
	if (rc)
		strbuf_addf(err, "%s: the slice could not be made (%s)", path,
			    why.len ? why.buf : sqlite3_errmsg(db));
	strbuf_release(&why);
	if (rc || sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	*out = db;
	db = NULL;
	ret = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	sqlite3_close(rec);
	return ret;
}
