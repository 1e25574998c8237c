/* slice: a filtered copy of a recording (a time window, one process, one
 * thread) that the unchanged analyses, views and exporters read as if it were
 * a whole run.
 *
 * Contract:
 * - slice_open() copies the rows of profile.db that fall in the filter into a
 *   private temporary database (sqlite's "" file: on disk, removed when closed)
 *   and returns it. The recording itself is only read.
 * - How each table is cut is declared once, in slice_tables (slice.c): every
 *   table any part of sonde creates has an entry (tests/unit/test_slice.c
 *   fails otherwise); a table of the recording without one is left out:
 *   created empty (queries that join it still run) and named in meta
 *   slice_left_out.
 * - Times in the slice count from the window's start: a row at t_ns T of the
 *   run is at T - from_ns in the slice; meta wall_ns is the window's length
 *   (from the launch when the window starts before it), start_mono_ns and
 *   start_unix_ns move with the window, so durations and shares come out
 *   right. Meta slice_from_ns, slice_to_ns (on the run's clock), slice_pid,
 *   slice_tid and slice_left_out say which slice it is.
 * - Whole-run totals (rusage, hardware counters, per-stack counter sums,
 *   off-CPU and allocation totals) cannot be cut by time: they are left out
 *   (empty) in a windowed slice and kept for the process (or thread) of a pid
 *   filter.
 */
#ifndef SONDE_SLICE_H
#define SONDE_SLICE_H

#include <sqlite3.h>
#include <stdint.h>

struct strbuf;

struct slice_filter {
	int64_t from_ns; /* on the run's clock (t_ns); 0: from the start */
	int64_t to_ns;	 /* < 0: to the end; past the end is the end */
	int64_t pid;	 /* 0: every process */
	int64_t tid;	 /* 0: every thread */
	/* The program's phase the window is (NULL: none), recorded as meta
	 * slice_phase; slice_open does not look it up (the CLI's
	 * filter_resolve sets from_ns and to_ns from it). */
	const char *phase;
};
#define SLICE_FILTER_INIT                                                                          \
	{                                                                                          \
		0, -1, 0, 0, NULL                                                                  \
	}

/* How a table's rows are cut. */
enum slice_rule {
	SLICE_WHOLE, /* descriptions (frames, meta, devices): kept, by pid/tid when it has them */
	SLICE_AT,    /* a row is a moment (time_col): kept in the window, shifted */
	SLICE_SPAN,  /* a row is an interval (time_col..end_col): kept when it overlaps, clamped */
	SLICE_LIFE,  /* a row sums a thread's whole life up to time_col: kept in the window
		      * only for processes that started within it */
	SLICE_TOTAL, /* a total over the whole run: left out of a window, kept by pid/tid */
};

struct slice_table {
	const char *name;
	enum slice_rule rule;
	const char *time_col; /* SLICE_AT, SLICE_LIFE: the moment; SLICE_SPAN: the start */
	const char *end_col;  /* SLICE_SPAN: the end (NULL in a row: still open) */
	const char *pid_col;  /* NULL: not per process (see mixed) */
	const char *tid_col;  /* NULL: not per thread */
	/* Without pid_col: 1 when rows mix every process (left out by a pid or tid
	 * filter), 0 when they describe the run itself (kept). */
	int mixed;
	/* SLICE_SPAN: 1 when an end past the window becomes NULL ("still running")
	 * with the end_nulls columns, instead of the window's end. */
	int open_end;
	const char *end_nulls; /* "a,b": columns that describe the end */
	/* "a,b": cumulative columns, made relative to the pid's last row at or before the
	 * window; "c": whole-life figures (a high-water mark), NULL in a window. */
	const char *levels;
	const char *lifetime;
};

extern const struct slice_table slice_tables[];

/* The entry of table name, or NULL. */
const struct slice_table *slice_table_find(const char *name);

/* When the run ended on its clock (launch + wall, else its last row's time);
 * -1 when the recording has no time at all. */
int64_t slice_run_end_ns(sqlite3 *db);

/* Opens the recording at path and makes the slice of it that filter selects.
 * 0 and *out (sqlite3_close it) on success; -1 with a one-line message in err
 * for a recording that cannot be read, a bad window (negative, empty,
 * starting at or past the run's end), or a pid or tid that was not recorded
 * (the message lists those that were). */
int slice_open(const char *path, const struct slice_filter *filter, sqlite3 **out,
	       struct strbuf *err);

#endif
