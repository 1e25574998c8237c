/* recorder: batched SQLite writes for one run. */
#define LOG_DOMAIN "record"
#include "recorder.h"
#include "stacks.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct recorder {
	sqlite3 *db;
	int in_txn;
	int64_t txn_start_ns;
	struct strbuf failed;
	struct stack_writer *stacks;
	sqlite3_stmt *st_meta, *st_note, *st_line, *st_probe, *st_change, *st_proc, *st_rusage,
	    *st_exec;
	pthread_mutex_t lock; /* recursive: see recorder_lock() */
	_Atomic int64_t live_samples, live_rss_bytes;
};

static const char core_schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	"CREATE TABLE IF NOT EXISTS processes(pid INTEGER PRIMARY KEY, ppid INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, command TEXT, is_leader INTEGER,"
	" exit_code INTEGER, signal INTEGER);"
	"CREATE TABLE IF NOT EXISTS rusage(pid INTEGER PRIMARY KEY, user_s REAL, sys_s REAL,"
	" maxrss_bytes INTEGER, minflt INTEGER, majflt INTEGER, nvcsw INTEGER, nivcsw INTEGER,"
	" inblock INTEGER, oublock INTEGER);"
	"CREATE TABLE IF NOT EXISTS output_lines(t_ns INTEGER, pid INTEGER, stream INTEGER,"
	" line TEXT, truncated INTEGER);"
	"CREATE TABLE IF NOT EXISTS notes(t_ns INTEGER, probe TEXT, kind TEXT, text TEXT);"
	"CREATE TABLE IF NOT EXISTS probes(name TEXT PRIMARY KEY, status TEXT, reason TEXT);"
	"CREATE TABLE IF NOT EXISTS changelog(file TEXT, change TEXT, what TEXT, lines TEXT);"
	"CREATE TABLE IF NOT EXISTS execs(pid INTEGER, t_ns INTEGER, command TEXT);";

static void recorder_fail(struct recorder *rec, const char *what)
{
	if (rec->failed.len)
		return;
	strbuf_addf(&rec->failed, "%s: %s", what, rec->db ? sqlite3_errmsg(rec->db) : "no database");
	log_error("recording stopped: %s", rec->failed.buf);
}

static int recorder_exec(struct recorder *rec, const char *sql)
{
	if (rec->failed.len)
		return -1;
	char *msg = NULL;
	if (sqlite3_exec(rec->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		strbuf_addf(&rec->failed, "%s", msg ? msg : "unknown error");
		log_error("recording stopped: %s", rec->failed.buf);
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static void recorder_begin(struct recorder *rec)
{
	if (rec->in_txn || rec->failed.len)
		return;
	if (!recorder_exec(rec, "BEGIN")) {
		rec->in_txn = 1;
		rec->txn_start_ns = clock_mono_ns();
	}
}

static sqlite3_stmt *recorder_prepare(struct recorder *rec, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(rec->db, sql, -1, &st, NULL) != SQLITE_OK) {
		recorder_fail(rec, "prepare");
		return NULL;
	}
	return st;
}

int recorder_open(const char *path, struct recorder **out, struct strbuf *err)
{
	struct recorder *rec = xcalloc(1, sizeof(*rec));
	strbuf_init(&rec->failed);
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	/* NOFOLLOW: a link at (or on the way to) path is refused, never written through. */
	if (sqlite3_open_v2(path, &rec->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
			    NULL) != SQLITE_OK) {
		strbuf_addf(err, "cannot create %s: %s", path,
			    rec->db ? sqlite3_errmsg(rec->db) : "out of memory");
		goto fail;
	}
	/* A reader looking at the recording while it is made (a user's sqlite3, a
	 * script polling it) holds a shared lock for a moment: wait for it rather
	 * than fail the run with "database is locked". */
	sqlite3_busy_timeout(rec->db, RECORDER_BUSY_TIMEOUT_MS);
	/* WAL: a crash of sonde leaves every committed batch readable. */
	if (recorder_exec(rec, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;") ||
	    recorder_exec(rec, core_schema))
		goto fail_msg;
	rec->st_meta = recorder_prepare(rec, "INSERT OR REPLACE INTO meta VALUES(?,?)");
	rec->st_note = recorder_prepare(rec, "INSERT INTO notes VALUES(?,?,?,?)");
	rec->st_exec = recorder_prepare(rec, "INSERT INTO execs VALUES(?,?,?)");
	rec->st_line = recorder_prepare(rec, "INSERT INTO output_lines VALUES(?,?,?,?,?)");
	rec->st_probe = recorder_prepare(rec, "INSERT OR REPLACE INTO probes VALUES(?,?,?)");
	rec->st_change = recorder_prepare(rec, "INSERT INTO changelog VALUES(?,?,?,?)");
	rec->st_proc = recorder_prepare(
		rec, "INSERT INTO processes VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(pid) DO UPDATE SET"
		     " ppid=excluded.ppid, end_ns=coalesce(excluded.end_ns, end_ns),"
		     " command=CASE WHEN ?9 THEN excluded.command"
		     " WHEN excluded.command LIKE '[%' AND command IS NOT NULL"
		     " THEN command ELSE coalesce(excluded.command, command) END,"
		     " is_leader=max(is_leader, excluded.is_leader),"
		     " exit_code=coalesce(excluded.exit_code, exit_code),"
		     " signal=CASE WHEN excluded.signal != 0 THEN excluded.signal ELSE signal END");
	rec->st_rusage =
		recorder_prepare(rec, "INSERT OR REPLACE INTO rusage VALUES(?,?,?,?,?,?,?,?,?,?)");
	if (rec->failed.len)
		goto fail_msg;
	record_meta_int(rec, "schema", RECORDING_SCHEMA_VERSION);
	recorder_begin(rec);
	*out = rec;
	return 0;
fail_msg:
	strbuf_addf(err, "cannot create %s: %s", path, rec->failed.buf);
fail:
	recorder_close(rec);
	return -1;
}

int recorder_close(struct recorder *rec)
{
	if (!rec)
		return 0;
	int ret = 0;
	stack_writer_free(rec->stacks);
	if (rec->in_txn && !rec->failed.len)
		ret = recorder_exec(rec, "COMMIT");
	sqlite3_stmt *sts[] = { rec->st_meta,	rec->st_note, rec->st_line,  rec->st_probe,
				rec->st_change, rec->st_proc, rec->st_rusage, rec->st_exec };
	for (size_t i = 0; i < sizeof(sts) / sizeof(sts[0]); i++)
		sqlite3_finalize(sts[i]);
	if (rec->db && !rec->failed.len) {
		/* Back to one plain file: no -wal or -shm left beside profile.db. */
		sqlite3_exec(rec->db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
	}
	if (rec->failed.len)
		ret = -1;
	sqlite3_close(rec->db);
	strbuf_release(&rec->failed);
	pthread_mutex_destroy(&rec->lock);
	free(rec);
	return ret;
}

void recorder_lock(struct recorder *rec)
{
	pthread_mutex_lock(&rec->lock);
}

void recorder_unlock(struct recorder *rec)
{
	pthread_mutex_unlock(&rec->lock);
}

struct stack_writer *recorder_stacks(struct recorder *rec)
{
	recorder_lock(rec);
	if (!rec->stacks && !rec->failed.len)
		rec->stacks = stack_writer_new(rec);
	struct stack_writer *sw = rec->stacks;
	recorder_unlock(rec);
	return sw;
}

int recorder_schema(struct recorder *rec, const char *sql)
{
	recorder_lock(rec);
	int rc = recorder_exec(rec, sql);
	recorder_unlock(rec);
	return rc;
}

void recorder_tick(struct recorder *rec, int force)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	if (rec->in_txn && (force || clock_mono_ns() - rec->txn_start_ns >= RECORDER_FLUSH_NS)) {
		rec->in_txn = 0;
		if (recorder_exec(rec, "COMMIT"))
			goto out;
	}
	recorder_begin(rec);
out:
	recorder_unlock(rec);
}

sqlite3 *recorder_db(struct recorder *rec)
{
	return rec->failed.len ? NULL : rec->db;
}

const char *recorder_failed(const struct recorder *rec)
{
	return rec->failed.len ? rec->failed.buf : NULL;
}

int recorder_step(struct recorder *rec, sqlite3_stmt *st)
{
	if (!st)
		return -1;
	recorder_lock(rec);
	int rc = rec->failed.len ? SQLITE_DONE : sqlite3_step(st);
	if (rc != SQLITE_DONE)
		recorder_fail(rec, "write");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	int ret = rc == SQLITE_DONE && !rec->failed.len ? 0 : -1;
	recorder_unlock(rec);
	return ret;
}

/* Text is bound SQLITE_STATIC: every bind is followed by recorder_step(), which
 * clears the bindings, so the caller's string outlives its use. A TRANSIENT
 * bind copies, and a failed copy (out of memory) was ignored: the row went in
 * with NULL in place of the text while the recorder reported no error. */
static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

void record_meta(struct recorder *rec, const char *key, const char *value)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	bind_text(rec->st_meta, 1, key);
	bind_text(rec->st_meta, 2, value);
	recorder_step(rec, rec->st_meta);
out:
	recorder_unlock(rec);
}

void record_meta_int(struct recorder *rec, const char *key, int64_t value)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	bind_text(rec->st_meta, 1, key);
	sqlite3_bind_int64(rec->st_meta, 2, value);
	recorder_step(rec, rec->st_meta);
out:
	recorder_unlock(rec);
}

void record_note(struct recorder *rec, int64_t t_ns, const char *probe, const char *kind,
		 const char *text)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	sqlite3_bind_int64(rec->st_note, 1, t_ns);
	bind_text(rec->st_note, 2, probe);
	bind_text(rec->st_note, 3, kind);
	bind_text(rec->st_note, 4, text);
	recorder_step(rec, rec->st_note);
out:
	recorder_unlock(rec);
}

void record_exec(struct recorder *rec, int64_t t_ns, pid_t pid, const char *command)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	sqlite3_bind_int(rec->st_exec, 1, pid);
	sqlite3_bind_int64(rec->st_exec, 2, t_ns);
	bind_text(rec->st_exec, 3, command);
	recorder_step(rec, rec->st_exec);
out:
	recorder_unlock(rec);
}

void record_output_line(struct recorder *rec, int64_t t_ns, pid_t pid, int stream,
			const char *line, size_t len, int truncated)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	sqlite3_bind_int64(rec->st_line, 1, t_ns);
	sqlite3_bind_int(rec->st_line, 2, pid);
	sqlite3_bind_int(rec->st_line, 3, stream);
	/* Bytes as the target wrote them; a renderer escapes what it shows. */
	sqlite3_bind_text(rec->st_line, 4, line, (int)len, SQLITE_STATIC); /* see bind_text */
	sqlite3_bind_int(rec->st_line, 5, truncated);
	recorder_step(rec, rec->st_line);
out:
	recorder_unlock(rec);
}

void record_probe(struct recorder *rec, const char *name, const char *status, const char *reason)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	bind_text(rec->st_probe, 1, name);
	bind_text(rec->st_probe, 2, status);
	bind_text(rec->st_probe, 3, reason);
	recorder_step(rec, rec->st_probe);
out:
	recorder_unlock(rec);
}

void record_changelog(struct recorder *rec, const char *file, const char *change,
		      const char *what, const char *lines)
{
	recorder_lock(rec);
	if (rec->failed.len)
		goto out;
	bind_text(rec->st_change, 1, file);
	bind_text(rec->st_change, 2, change);
	bind_text(rec->st_change, 3, what);
	bind_text(rec->st_change, 4, lines);
	recorder_step(rec, rec->st_change);
out:
	recorder_unlock(rec);
}

void record_process(struct recorder *rec, const struct process_info *p)
{
	recorder_lock(rec);
	sqlite3_stmt *st = rec->st_proc;
	if (rec->failed.len)
		goto out;
	sqlite3_bind_int(st, 1, p->pid);
	sqlite3_bind_int(st, 2, p->ppid);
	sqlite3_bind_int64(st, 3, p->start_ns);
	if (p->end_ns >= 0)
		sqlite3_bind_int64(st, 4, p->end_ns);
	else
		sqlite3_bind_null(st, 4);
	bind_text(st, 5, p->command);
	sqlite3_bind_int(st, 6, p->is_leader);
	if (p->exit_code >= 0)
		sqlite3_bind_int(st, 7, p->exit_code);
	else
		sqlite3_bind_null(st, 7);
	sqlite3_bind_int(st, 8, p->signal);
	sqlite3_bind_int(st, 9, p->command_stale);
	recorder_step(rec, st);
out:
	recorder_unlock(rec);
}

void record_rusage(struct recorder *rec, const struct rusage_info *ru)
{
	recorder_lock(rec);
	sqlite3_stmt *st = rec->st_rusage;
	if (rec->failed.len)
		goto out;
	sqlite3_bind_int(st, 1, ru->pid);
	sqlite3_bind_double(st, 2, ru->user_s);
	sqlite3_bind_double(st, 3, ru->sys_s);
	sqlite3_bind_int64(st, 4, ru->maxrss_bytes);
	sqlite3_bind_int64(st, 5, ru->minflt);
	sqlite3_bind_int64(st, 6, ru->majflt);
	sqlite3_bind_int64(st, 7, ru->nvcsw);
	sqlite3_bind_int64(st, 8, ru->nivcsw);
	sqlite3_bind_int64(st, 9, ru->inblock);
	sqlite3_bind_int64(st, 10, ru->oublock);
	recorder_step(rec, st);
out:
	recorder_unlock(rec);
}

void recorder_live_samples_add(struct recorder *rec, int64_t n)
{
	atomic_fetch_add_explicit(&rec->live_samples, n, memory_order_relaxed);
}

void recorder_live_rss_set(struct recorder *rec, int64_t bytes)
{
	atomic_store_explicit(&rec->live_rss_bytes, bytes, memory_order_relaxed);
}

void recorder_live_read(struct recorder *rec, struct recorder_live *out)
{
	out->samples = atomic_load_explicit(&rec->live_samples, memory_order_relaxed);
	out->rss_bytes = atomic_load_explicit(&rec->live_rss_bytes, memory_order_relaxed);
}
