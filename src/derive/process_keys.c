/* process_keys: the rows of a process that had a pid used before it in the
 * run move to its own key (record/process_key.h).
 *
 * The session writes the processes table with keys; the probes write the pid
 * they saw. For each process whose key is not its pid (a later use of it),
 * newest first, every table with a pid column moves the rows of that pid to
 * the key:
 *   - a table with a time column (t_ns, start_ns, first_ns): the rows at or
 *     after the process's start (the earlier process with the pid was reaped
 *     before the kernel gave the pid again, so none of its rows is later).
 *     The start is its fork as the cpu probe saw it (process_events), else
 *     from the kernel's ticks, and then the earlier one's end when later: a
 *     tick of the earlier one's rows may move;
 *   - else, a table with a tid column: the rows of the threads that, after
 *     the first step, have samples or a thread life (offcpu_threads) under
 *     the key only;
 *   - else (a probe's totals per pid) the rows stay with the first process,
 *     and a note says which tables keep two processes together.
 * The threads table's names are copied, not moved, for a tid both had (the
 * main thread's tid is the pid). Tables the session writes with keys itself
 * (processes, rusage, execs, task_exits) are left alone. A run without a
 * reused pid (nearly every run) costs one query; one with many (a long
 * whole-machine run) one statement per table, through temporary tables of
 * the keyed processes and of their threads. */
#include "derive.h"
#include "../record/process_key.h"
#include "../record/reader.h"
#include "../record/recorder.h"
#include "../util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PROCESS_KEYS_TABLES_MAX 128
#define PROCESS_KEYS_TICK_NS 10000000LL /* a clock tick (USER_HZ 100) */

/* What a table offers for the move. */
struct keyed_table {
	char name[64];
	char time[16]; /* "" when none */
	int has_tid;
};

static int name_is_plain(const char *s)
{
	if (!*s || strlen(s) >= 64)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

static int table_is_sessions(const char *name)
{
	return !strcmp(name, "processes") || !strcmp(name, "rusage") || !strcmp(name, "execs") ||
	       !strcmp(name, "task_exits");
}

/* The tables with a pid column, and what else they have. */
static size_t keyed_tables(sqlite3 *db, struct keyed_table *out, size_t max)
{
	static const char *const times[] = { "t_ns", "start_ns", "first_ns" };
	sqlite3_stmt *st = NULL;
	size_t n = 0;
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	while (n < max && sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		if (!name || !name_is_plain(name) || table_is_sessions(name))
			continue;
		char sql[128];
		snprintf(sql, sizeof(sql), "PRAGMA table_info(\"%s\")", name);
		sqlite3_stmt *cols = NULL;
		if (sqlite3_prepare_v2(db, sql, -1, &cols, NULL) != SQLITE_OK)
			continue;
		struct keyed_table t = { .has_tid = 0 };
		int has_pid = 0, time_rank = (int)(sizeof(times) / sizeof(times[0]));
		while (sqlite3_step(cols) == SQLITE_ROW) {
			const char *col = (const char *)sqlite3_column_text(cols, 1);
			if (!col)
				continue;
			has_pid |= !strcmp(col, "pid");
			t.has_tid |= !strcmp(col, "tid");
			for (int i = 0; i < time_rank; i++)
				if (!strcmp(col, times[i])) {
					snprintf(t.time, sizeof(t.time), "%s", times[i]);
					time_rank = i;
				}
		}
		sqlite3_finalize(cols);
		if (!has_pid)
			continue;
		snprintf(t.name, sizeof(t.name), "%s", name);
		out[n++] = t;
	}
	sqlite3_finalize(st);
	return n;
}

/* Runs sql (one or more statements); the rows they changed, or -1. */
static int64_t exec_changes(sqlite3 *db, const char *sql, struct strbuf *why)
{
	char *err = NULL;
	int64_t before = sqlite3_total_changes64(db);
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		strbuf_addf(why, "%s", err ? err : sqlite3_errmsg(db));
		sqlite3_free(err);
		return -1;
	}
	return sqlite3_total_changes64(db) - before;
}

/* Runs the statement made of fmt; the rows it changed, or -1. */
__attribute__((format(printf, 3, 4))) static int64_t run_sqlf(sqlite3 *db, struct strbuf *why,
							      const char *fmt, ...)
{
	struct strbuf sql = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sql, fmt, ap);
	va_end(ap);
	int64_t c = exec_changes(db, sql.buf, why);
	strbuf_release(&sql);
	return c;
}

/* temp.process_keys_threads: the (pid, tid) pairs with samples or a thread
 * life (offcpu_threads) of the keyed processes' pids and keys. */
static int64_t threads_table(sqlite3 *db, const struct keyed_table *t, size_t n, struct strbuf *why)
{
	struct strbuf sql = STRBUF_INIT;
	/* Typed columns: a column of CREATE TABLE AS has no affinity, and an
	 * index on it then serves no comparison with an INTEGER column. */
	strbuf_addstr(&sql, "CREATE TEMP TABLE process_keys_threads(pid INTEGER, tid INTEGER);"
			    "INSERT INTO temp.process_keys_threads SELECT NULL, NULL WHERE 0");
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, "samples") || !strcmp(t[i].name, "offcpu_threads"))
			strbuf_addf(&sql,
				    " UNION SELECT DISTINCT pid, tid FROM \"%s\" WHERE pid IN"
				    " (SELECT pid FROM temp.process_keys UNION SELECT key FROM"
				    " temp.process_keys)",
				    t[i].name);
	strbuf_addstr(&sql, ";CREATE INDEX temp.process_keys_threads_at ON"
			    " process_keys_threads(pid, tid)");
	int64_t c = exec_changes(db, sql.buf, why);
	strbuf_release(&sql);
	if (c < 0)
		return -1;
	/* A thread of a key's that its pid's first process never had. */
	return run_sqlf(
	    db, why,
	    "CREATE TEMP TABLE process_keys_moved(pid INTEGER, tid INTEGER, key INTEGER);"
	    "INSERT INTO temp.process_keys_moved SELECT k.pid, t.tid, min(k.key)"
	    " FROM temp.process_keys k JOIN temp.process_keys_threads t ON t.pid = k.key"
	    " WHERE NOT EXISTS (SELECT 1 FROM temp.process_keys_threads u WHERE"
	    " u.pid = k.pid AND u.tid = t.tid) GROUP BY k.pid, t.tid;"
	    "CREATE INDEX temp.process_keys_moved_at ON process_keys_moved(pid, tid)");
}

/* Moves every table's rows, one statement a table whatever the number of
 * keyed processes (a long whole-machine run may have thousands). */
static int64_t move_rows(sqlite3 *db, struct keyed_table *t, size_t n, struct strbuf *why)
{
	int64_t moved = 0, c = 0;
	for (size_t i = 0; i < n && c >= 0; i++) {
		if (!t[i].time[0])
			continue;
		/* The newest process of the pid that had started at the row's time. */
		c = run_sqlf(
		    db, why,
		    "UPDATE OR IGNORE \"%s\" SET pid = (SELECT k.key FROM temp.process_keys k"
		    " WHERE k.pid = \"%s\".pid AND k.from_ns <= \"%s\".\"%s\""
		    " ORDER BY k.from_ns DESC LIMIT 1) WHERE pid IN (SELECT pid FROM"
		    " temp.process_keys) AND \"%s\" >= (SELECT min(k.from_ns) FROM"
		    " temp.process_keys k WHERE k.pid = \"%s\".pid)",
		    t[i].name, t[i].name, t[i].name, t[i].time, t[i].time, t[i].name);
		moved += c > 0 ? c : 0;
	}
	if (c < 0 || threads_table(db, t, n, why) < 0)
		return -1;
	for (size_t i = 0; i < n && c >= 0; i++) {
		if (t[i].time[0] || !t[i].has_tid)
			continue;
		c = run_sqlf(
		    db, why,
		    "UPDATE OR IGNORE \"%s\" SET pid = (SELECT m.key FROM temp.process_keys_moved"
		    " m WHERE m.pid = \"%s\".pid AND m.tid = \"%s\".tid) WHERE EXISTS (SELECT 1"
		    " FROM temp.process_keys_moved m WHERE m.pid = \"%s\".pid AND"
		    " m.tid = \"%s\".tid)",
		    t[i].name, t[i].name, t[i].name, t[i].name, t[i].name);
		moved += c > 0 ? c : 0;
	}
	if (c < 0)
		return -1;
	/* The name of a thread both processes had (the main thread's tid is the
	 * pid) is copied to the key; a run without stacks has no threads table. */
	if (!recording_has_table(db, "threads"))
		return moved;
	c = run_sqlf(db, why,
		     "INSERT OR IGNORE INTO threads SELECT k.key, th.tid, th.name FROM"
		     " temp.process_keys k JOIN threads th ON th.pid = k.pid JOIN"
		     " temp.process_keys_threads u ON u.pid = k.key AND u.tid = th.tid");
	return c < 0 ? -1 : moved + c;
}

/* Names the tables with neither a time nor a tid that hold rows of a keyed
 * pid: their totals keep the processes together. */
static void kept_tables(sqlite3 *db, const struct keyed_table *t, size_t n, struct strbuf *kept)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i].time[0] || t[i].has_tid)
			continue;
		struct strbuf sql = STRBUF_INIT;
		sqlite3_stmt *st = NULL;
		strbuf_addf(&sql,
			    "SELECT 1 FROM \"%s\" WHERE pid IN (SELECT pid FROM temp.process_keys)"
			    " LIMIT 1",
			    t[i].name);
		if (sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			strbuf_addf(kept, "%s%s", kept->len ? ", " : "", t[i].name);
		sqlite3_finalize(st);
		strbuf_release(&sql);
	}
}

static int64_t process_keys_run(const struct derive_ctx *ctx, struct strbuf *why)
{
	struct keyed_table tables[PROCESS_KEYS_TABLES_MAX];
	struct strbuf kept = STRBUF_INIT;
	int64_t moved = 0;
	double later = 0;
	char count[96];
	snprintf(count, sizeof(count), "SELECT count(*) FROM processes WHERE pid >= %d",
		 PROCESS_KEY_STRIDE);
	if (!recording_has_table(ctx->db, "processes") ||
	    recording_query_double(ctx->db, count, &later) || later < 1)
		return 0; /* nothing keyed: one query, nearly every run */
	/* Each later process's bound: its fork as the cpu probe saw it
	 * (process_events), within a few ticks of its start, is exact; else
	 * the earlier process's end, when later than the start (both from
	 * ticks: up to a tick early); else the start. */
	char forked[256] = "NULL";
	if (recording_has_table(ctx->db, "process_events"))
		snprintf(forked, sizeof(forked),
			 "(SELECT min(e.t_ns) FROM process_events e WHERE e.pid = p.pid %% %d"
			 " AND e.event = 'fork' AND e.t_ns BETWEEN p.start_ns - %lld"
			 " AND p.start_ns + %lld)",
			 PROCESS_KEY_STRIDE, PROCESS_KEYS_TICK_NS, 2 * PROCESS_KEYS_TICK_NS);
	if (run_sqlf(ctx->db, why,
		     "CREATE TEMP TABLE process_keys(pid INTEGER, key INTEGER, from_ns INTEGER);"
		     "INSERT INTO temp.process_keys SELECT p.pid %% %d, p.pid,"
		     " coalesce(%s, max(p.start_ns, min(coalesce(q.end_ns, 0), p.start_ns + %lld)))"
		     " FROM processes p LEFT JOIN processes q ON q.pid = p.pid - %d"
		     " WHERE p.pid >= %d;"
		     "CREATE INDEX temp.process_keys_at ON process_keys(pid, from_ns)",
		     PROCESS_KEY_STRIDE, forked, PROCESS_KEYS_TICK_NS, PROCESS_KEY_STRIDE,
		     PROCESS_KEY_STRIDE) < 0) {
		moved = -1;
		goto out;
	}
	size_t n = keyed_tables(ctx->db, tables, PROCESS_KEYS_TABLES_MAX);
	kept_tables(ctx->db, tables, n, &kept);
	moved = move_rows(ctx->db, tables, n, why);
	if (moved < 0)
		goto out;
	struct strbuf note = STRBUF_INIT;
	strbuf_addf(
	    &note,
	    "%.0f process%s of the run had a pid an earlier one had: each has its own key in"
	    " the recording (pid + %d per earlier use)",
	    later, later == 1 ? "" : "es", PROCESS_KEY_STRIDE);
	if (kept.len)
		strbuf_addf(&note, "; the totals per pid of %s keep them together", kept.buf);
	record_note(ctx->rec, 0, "derive", "process_keys", note.buf);
	strbuf_release(&note);
out:;
	/* Temporary tables only: a failed drop loses nothing, and says nothing. */
	struct strbuf ignored = STRBUF_INIT;
	exec_changes(ctx->db,
		     "DROP TABLE IF EXISTS temp.process_keys; DROP TABLE IF EXISTS"
		     " temp.process_keys_threads; DROP TABLE IF EXISTS temp.process_keys_moved",
		     &ignored);
	strbuf_release(&ignored);
	strbuf_release(&kept);
	return moved;
}

static const char *const process_keys_reads[] = { "processes", "process_events", NULL };
/* Every table with a pid column; these are the ones other passes read. */
static const char *const process_keys_writes[] = { "samples",	    "threads",	"offcpu_threads",
						   "offcpu_states", "syscalls", "syscall_timeline",
						   "output_lines",  NULL };

const struct derive_pass derive_process_keys = {
	.name = "process_keys",
	.summary =
	    "rows of a process whose pid an earlier process of the run had, moved to its key",
	.reads = process_keys_reads,
	.writes = process_keys_writes,
	.run = process_keys_run,
};
