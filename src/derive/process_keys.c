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
 * (processes, rusage, execs, task_exits) are left alone. A run without a reused pid (nearly every
 * run) costs one query. */
#include "derive.h"
#include "../record/process_key.h"
#include "../record/reader.h"
#include "../record/recorder.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <string.h>

#define PROCESS_KEYS_TABLES_MAX 128
#define PROCESS_KEYS_TICK_NS 10000000LL /* a clock tick (USER_HZ 100) */

/* What a table offers for the move. */
struct keyed_table {
	char name[64];
	char time[16]; /* "" when none */
	int has_tid;
	int keeps_two; /* neither: holds a row of a reused pid, kept with the first */
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

/* 1 when table t holds a row of pid. */
static int table_has_pid(sqlite3 *db, const char *t, int64_t pid)
{
	struct strbuf sql = STRBUF_INIT;
	sqlite3_stmt *st = NULL;
	strbuf_addf(&sql, "SELECT 1 FROM \"%s\" WHERE pid = %lld LIMIT 1", t, (long long)pid);
	int has = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL) == SQLITE_OK &&
		  sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	strbuf_release(&sql);
	return has;
}

/* The threads seen under process p: a subquery over the tables that hold
 * thread lives. */
static void threads_of(struct strbuf *sql, const struct keyed_table *t, size_t n, int64_t p)
{
	int first = 1;
	strbuf_addstr(sql, "(");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(t[i].name, "samples") && strcmp(t[i].name, "offcpu_threads"))
			continue;
		strbuf_addf(sql, "%sSELECT tid FROM \"%s\" WHERE pid = %lld",
			    first ? "" : " UNION ", t[i].name, (long long)p);
		first = 0;
	}
	if (first)
		strbuf_addstr(sql, "SELECT NULL WHERE 0");
	strbuf_addstr(sql, ")");
}

/* The statement that moves table t's rows of key's pid to key (step 0: by
 * time, step 1: by thread); "" when t has no part in that step. */
static void move_sql(struct strbuf *sql, const struct keyed_table *t, size_t n, size_t i, int step,
		     int64_t key, int64_t start_ns)
{
	int64_t pid = process_key_pid(key);
	strbuf_reset(sql);
	if (step == 0 ? !t[i].time[0] : t[i].time[0] || !t[i].has_tid)
		return;
	strbuf_addf(sql, "UPDATE OR IGNORE \"%s\" SET pid = %lld WHERE pid = %lld", t[i].name,
		    (long long)key, (long long)pid);
	if (step == 0) {
		strbuf_addf(sql, " AND \"%s\" >= %lld", t[i].time, (long long)start_ns);
		return;
	}
	strbuf_addstr(sql, " AND tid IN ");
	threads_of(sql, t, n, key);
	strbuf_addstr(sql, " AND tid NOT IN ");
	threads_of(sql, t, n, pid);
	if (strcmp(t[i].name, "threads"))
		return;
	strbuf_addf(sql,
		    "; INSERT OR IGNORE INTO threads SELECT %lld, tid, name FROM threads"
		    " WHERE pid = %lld AND tid IN ",
		    (long long)key, (long long)pid);
	threads_of(sql, t, n, key);
}

/* Moves the rows of process key (a later use of its pid, started at start_ns). */
static int64_t move_process(sqlite3 *db, const struct keyed_table *t, size_t n, int64_t key,
			    int64_t start_ns, struct strbuf *why)
{
	int64_t moved = 0;
	struct strbuf sql = STRBUF_INIT;
	for (int step = 0; step < 2; step++)
		for (size_t i = 0; i < n; i++) {
			move_sql(&sql, t, n, i, step, key, start_ns);
			if (!sql.len)
				continue;
			int64_t c = exec_changes(db, sql.buf, why);
			if (c < 0) {
				moved = -1;
				goto out;
			}
			moved += c;
		}
out:
	strbuf_release(&sql);
	return moved;
}

static int64_t process_keys_run(const struct derive_ctx *ctx, struct strbuf *why)
{
	struct keyed_table tables[PROCESS_KEYS_TABLES_MAX];
	struct strbuf kept = STRBUF_INIT;
	sqlite3_stmt *st = NULL;
	int64_t moved = 0, later = 0;
	char sql[640];
	/* The process's fork as the cpu probe saw it (process_events), within
	 * a few ticks of its start, is the exact bound; else the earlier
	 * process's end, when later than the start (both from ticks: up to a
	 * tick early); else the start. */
	char forked[256] = "NULL";
	if (recording_has_table(ctx->db, "process_events"))
		snprintf(forked, sizeof(forked),
			 "(SELECT min(e.t_ns) FROM process_events e WHERE e.pid = p.pid %% %d"
			 " AND e.event = 'fork' AND e.t_ns BETWEEN p.start_ns - %lld"
			 " AND p.start_ns + %lld)",
			 PROCESS_KEY_STRIDE, PROCESS_KEYS_TICK_NS, 2 * PROCESS_KEYS_TICK_NS);
	snprintf(sql, sizeof(sql),
		 "SELECT p.pid, coalesce(%s,"
		 " max(p.start_ns, min(coalesce(q.end_ns, 0), p.start_ns + %lld)))"
		 " FROM processes p LEFT JOIN processes q ON q.pid = p.pid - %d"
		 " WHERE p.pid >= %d ORDER BY p.pid DESC",
		 forked, PROCESS_KEYS_TICK_NS, PROCESS_KEY_STRIDE, PROCESS_KEY_STRIDE);
	if (sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL) != SQLITE_OK)
		goto out; /* no processes table: nothing keyed */
	size_t n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t key = sqlite3_column_int64(st, 0);
		if (!later++)
			n = keyed_tables(ctx->db, tables, PROCESS_KEYS_TABLES_MAX);
		for (size_t i = 0; i < n; i++)
			if (!tables[i].time[0] && !tables[i].has_tid && !tables[i].keeps_two)
				tables[i].keeps_two =
				    table_has_pid(ctx->db, tables[i].name, process_key_pid(key));
		int64_t c = move_process(ctx->db, tables, n, key, sqlite3_column_int64(st, 1), why);
		if (c < 0) {
			moved = -1;
			goto out;
		}
		moved += c;
	}
	for (size_t i = 0; i < n; i++)
		if (tables[i].keeps_two)
			strbuf_addf(&kept, "%s%s", kept.len ? ", " : "", tables[i].name);
	if (later) {
		struct strbuf note = STRBUF_INIT;
		strbuf_addf(&note,
			    "%lld process%s of the run had a pid an earlier one had: each has its "
			    "own key in the recording (pid + %d per earlier use)",
			    (long long)later, later == 1 ? "" : "es", PROCESS_KEY_STRIDE);
		if (kept.len)
			strbuf_addf(&note, "; the totals per pid of %s keep them together",
				    kept.buf);
		record_note(ctx->rec, 0, "derive", "process_keys", note.buf);
		strbuf_release(&note);
	}
out:
	sqlite3_finalize(st);
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
