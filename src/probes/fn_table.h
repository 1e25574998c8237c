/* fn_table: the tables of the functions `--function` names, written by the
 * function probe (native: uprobes) and the pyfunction probe (Python: the
 * agent's wrapper), read by the functions analysis (docs/recording.md).
 *
 * - fn_targets: one row per SPEC given, in the order given (id is its place,
 *   from 1): what it resolved to, whether it was measured (status, and note
 *   saying why not), calls (every call counted) and calls_timed (those with
 *   a row in fn_calls), overhead_ns (what timing one call cost, when measured).
 * - fn_calls: one row per timed call: its process and thread, when it began
 *   (t_ns, on the run's clock) and how long it took (wall_ns; cpu_ns the
 *   thread's CPU time, NULL when not measured), and who called it (caller:
 *   an id of fn_callers, NULL when unknown).
 * - fn_callers: (target, id) -> the calling function, its file and line.
 * - fn_lines: a Python function's lines (pyfunction only): hits and the time
 *   from the line's start to the next event of the function, per process.
 *
 * Contract: the schema is created by fn_table_open(); callers own nothing
 * here but the statements they prepare themselves. */
#ifndef SONDE_FN_TABLE_H
#define SONDE_FN_TABLE_H

#include <stdint.h>

struct recorder;

/* CREATE TABLE IF NOT EXISTS of the four tables (fn_table.c). */
extern const char fn_table_schema[];

#define FN_CALLS_INSERT "INSERT INTO fn_calls VALUES(?,?,?,?,?,?,?)"
#define FN_CALLERS_INSERT "INSERT OR REPLACE INTO fn_callers VALUES(?,?,?,?,?)"
#define FN_LINES_INSERT "INSERT INTO fn_lines VALUES(?,?,?,?,?,?)"

/* Calls past this many are counted in fn_targets.calls, not timed one by one. */
#define FN_TABLE_ROWS_MAX 2000000LL

/* What a probe knows of one target at the end of the run. */
struct fn_target_row {
	int id;
	const char *spec, *kind; /* kind: "native" or "python" */
	const char *function, *file;
	int line;		    /* 0: unknown */
	const char *status;	    /* "measured", "not_found", "never_called", "not_measured" */
	const char *note;	    /* NULL, or one line */
	int64_t calls, calls_timed; /* -1: unknown */
	double overhead_ns;	    /* < 0: not measured */
};

/* Creates the tables. 0, or -1 (the recorder noted why). */
int fn_table_open(struct recorder *rec);
/* Writes (or replaces) one fn_targets row. */
void fn_table_target(struct recorder *rec, const struct fn_target_row *t);

#endif
