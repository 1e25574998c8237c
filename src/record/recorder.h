/* recorder: the write side of profile.db, the run's SQLite recording.
 *
 * Contract:
 * - recorder_open() creates the database and the core tables (meta, processes,
 *   rusage, output_lines, notes, probes, changelog). Probes add their own tables
 *   with recorder_schema().
 * - All writes go into an open transaction; recorder_tick() commits it when
 *   RECORDER_FLUSH_NS has passed, so a crash loses at most about a second.
 * - Write errors (a full disk, say) never stop the run: the recorder notes the
 *   first error, stops writing, and recorder_failed() tells the caller why.
 * - Times are nanoseconds since the run's start (CLOCK_MONOTONIC).
 */
#ifndef SONDE_RECORDER_H
#define SONDE_RECORDER_H

#include <sqlite3.h>
#include <stdint.h>
#include <sys/types.h>

#define RECORDING_SCHEMA_VERSION 1
#define RECORDER_FLUSH_NS 1000000000LL
/* How long an open, a commit or a reader waits for another's lock before failing. */
#define RECORDER_BUSY_TIMEOUT_MS 5000

struct recorder;
struct strbuf;

int recorder_open(const char *path, struct recorder **out, struct strbuf *err);
/* Commits, compacts the journal back into the one file, and frees rec. */
int recorder_close(struct recorder *rec);

/* Runs DDL (CREATE TABLE IF NOT EXISTS ...). Returns 0 or -1 (error noted). */
int recorder_schema(struct recorder *rec, const char *sql);
/* Commits the open transaction if it is older than RECORDER_FLUSH_NS (or force). */
void recorder_tick(struct recorder *rec, int force);

/* For probes that keep prepared statements of their own. NULL once failed. */
sqlite3 *recorder_db(struct recorder *rec);
/* A probe may sample on a thread of its own beside the session loop: every
 * record_*() and stack_*() call takes the recorder's lock (recursive) for
 * its own length, so calls from several threads never mix their rows. Code
 * stepping statements of its own on recorder_db() from another thread than
 * the session loop's holds it around them. */
void recorder_lock(struct recorder *rec);
void recorder_unlock(struct recorder *rec);
/* Steps and resets a prepared statement; notes the first error. Returns 0 or -1. */
int recorder_step(struct recorder *rec, sqlite3_stmt *st);
/* Non-NULL message once a write failed; later writes are dropped. */
const char *recorder_failed(const struct recorder *rec);

/* Core tables. */
/* What a live view shows while the run goes (progress.h): the stack samples
 * written so far, and the target's RSS at the proc probe's last reading (its
 * processes together; 0 before the first). Set and read from any thread. */
struct recorder_live {
	int64_t samples, rss_bytes;
};
void recorder_live_samples_add(struct recorder *rec, int64_t n);
void recorder_live_rss_set(struct recorder *rec, int64_t bytes);
void recorder_live_read(struct recorder *rec, struct recorder_live *out);

void record_meta(struct recorder *rec, const char *key, const char *value);
void record_meta_int(struct recorder *rec, const char *key, int64_t value);
/* kind: "info", "warning", "event". probe: who says it. */
void record_note(struct recorder *rec, int64_t t_ns, const char *probe, const char *kind,
		 const char *text);
void record_output_line(struct recorder *rec, int64_t t_ns, pid_t pid, int stream,
			const char *line, size_t len, int truncated);
/* A process seen running a new command line (it exec'd) at t_ns of the run:
 * the launched process's chain of execs, a wrapper's (a shell script, a pyenv
 * shim) handing over to the program. */
void record_exec(struct recorder *rec, int64_t t_ns, pid_t pid, const char *command);
void record_probe(struct recorder *rec, const char *name, const char *status, const char *reason);
void record_changelog(struct recorder *rec, const char *file, const char *change,
		      const char *what, const char *lines);

struct process_info {
	pid_t pid, ppid;
	int64_t start_ns, end_ns; /* end_ns < 0: still running when the run ended */
	const char *command;
	int is_leader;
	int exit_code; /* -1 when unknown */
	int signal;    /* 0 when not killed by a signal */
	int command_stale; /* the row's command was read before an exec: command replaces it */
};
/* Inserts or updates the row for info->pid. What is unknown in info (end_ns < 0,
 * exit_code < 0, signal 0, command NULL) keeps what the row already says, and a
 * command in brackets ("[comm]", what a zombie shows) never replaces a real
 * command line, unless command_stale says the row's was read before an exec. */
void record_process(struct recorder *rec, const struct process_info *info);

struct rusage_info {
	pid_t pid; /* 0: sum over every reaped process */
	double user_s, sys_s;
	int64_t maxrss_bytes, minflt, majflt, nvcsw, nivcsw, inblock, oublock;
};
void record_rusage(struct recorder *rec, const struct rusage_info *ru);

#endif
