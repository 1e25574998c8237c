/* agent_reader: the side of a probe that stores what its in-process agent
 * writes (asyncio, cuda): the probe's tables and insert statements, the
 * shared agent directory (agent_dir.h), the per-process files followed
 * (agent_files.h), and a bound on the rows stored. The probe keeps the
 * format: it parses each line and binds the statements. */
#ifndef SONDE_AGENT_READER_H
#define SONDE_AGENT_READER_H

#include "agent_files.h"
#include "probe.h"
#include "../record/recorder.h"

/* What differs between agents; static, outlives the reader. */
struct agent_reader_spec {
	const char *probe;  /* the probe's name, for messages and notes */
	const char *agent;  /* how notes name the agent: "the asyncio agent" */
	const char *schema; /* CREATE TABLE IF NOT EXISTS ... */
	const char *const *sql; /* statements prepared into ins[] */
	int n_sql;
	const char *prefix; /* the files: PREFIX-PID.txt */
	size_t line_max;    /* bytes; longer lines are bad lines */
	size_t read_max;    /* bytes per file and poll; the rest waits a poll */
	size_t user_size;   /* each file's user: zeroed, made before its first line */
	int64_t rows_max;
	/* Each whole line, with the probe's state as arg; -1: not a record. */
	agent_line_fn line;
};

struct agent_reader {
	const struct agent_reader_spec *spec;
	const char *dir; /* agent_dir.h's, held from start to release */
	struct agent_files files;
	sqlite3_stmt **ins; /* spec->sql's, prepared */
	struct probe_ctx *ctx; /* during agent_reader_read(), for the line callback */
	void *arg;	       /* the probe's state, during agent_reader_read() */
	int64_t rows, rows_dropped;
};

/* Creates the tables, prepares the statements, takes the agent directory
 * and starts following the files. 0, or -1 with one line in why (release
 * anyway). */
int agent_reader_start(struct agent_reader *ar, struct probe_ctx *ctx,
		       const struct agent_reader_spec *spec, struct strbuf *why);

/* Under the recorder's lock: reads what the files gained (at most
 * spec->read_max bytes a file, or all of it when drain) and hands each
 * whole line to spec->line with arg. */
void agent_reader_read(struct agent_reader *ar, struct probe_ctx *ctx, int drain, void *arg);

/* 0 when one more row may be stored (counted), -1 once rows_max rows were
 * (the row is counted as dropped). */
int agent_reader_row(struct agent_reader *ar);

/* The warnings at the end of the run: rows over the bound, malformed lines. */
void agent_reader_notes(struct agent_reader *ar, struct probe_ctx *ctx);

/* Closes the files (each file's user with user_free), finalizes the
 * statements and drops the agent directory. */
void agent_reader_release(struct agent_reader *ar, void (*user_free)(void *));

#endif
