/* phase_table: phases from a time-ordered sequence of markers.
 *
 * A start opens a phase; an end closes the latest open phase of that name
 * (else of a name that begins with its words, or whose words begin it: "crawl
 * of 400 sources" is ended by "crawl done in 1.2s") (or,
 * when none is open and the line states a duration, makes the phase that ended
 * then); a mark closes the previous mark's phase and opens its own. Whatever
 * is still open at the end closes there. finish() orders the phases by start
 * (an enclosing phase before the ones inside it) and gives each its parent:
 * the innermost phase that contains it. Bounded: at most PHASE_TABLE_MAX
 * phases; later ones are counted in dropped. */
#ifndef SONDE_PHASE_TABLE_H
#define SONDE_PHASE_TABLE_H

#include "phase_markers.h"

#include <stddef.h>
#include <stdint.h>

#define PHASE_TABLE_MAX 20000

enum phase_ended_by {
	PHASE_ENDED_MARKER,    /* its end marker */
	PHASE_ENDED_LOGGED,    /* an end marker without a start: start = end - logged duration */
	PHASE_ENDED_NEXT_MARK, /* the next mark */
	PHASE_ENDED_RUN_END,   /* still open when the run ended */
};

struct phase {
	char name[PHASE_NAME_MAX];
	int64_t start_ns, end_ns; /* since the run's start; start <= end */
	double logged_s;	  /* the duration the end marker states; -1 when none */
	enum phase_ended_by ended_by;
	int mark;	/* opened by a mark */
	int open;	/* not closed yet (before finish) */
	long parent;	/* index of the innermost phase containing it, -1 for none */
	int depth;	/* 0 at the top */
	int64_t start_line, end_line; /* the caller's ids of its marker lines; -1: none */
	int64_t tid; /* the thread whose samples are the phase's (NVTX push ranges); 0: all */
};

struct phase_table {
	struct phase *v;
	size_t n, alloc;
	uint64_t dropped;	 /* phases past PHASE_TABLE_MAX */
	uint64_t unmatched_ends; /* ends with no open phase and no duration */
};

#define PHASE_TABLE_INIT { NULL, 0, 0, 0, 0 }

/* Applies one marker seen at t_ns, on the line the caller calls line_id;
 * markers must come in time order. */
void phase_table_add(struct phase_table *t, int64_t t_ns, const struct phase_marker *m,
		     int64_t line_id);
/* Adds a phase known whole (an NVTX range), closed, ended by; its samples
 * are tid's (0: every thread's). 0, or -1 when the table is full (counted in
 * dropped). */
int phase_table_add_span(struct phase_table *t, const char *name, int64_t start_ns, int64_t end_ns,
			 int64_t tid, enum phase_ended_by by);
/* Closes what is open at end_ns, orders the phases and sets parents. */
void phase_table_finish(struct phase_table *t, int64_t end_ns);
void phase_table_release(struct phase_table *t);

const char *phase_ended_by_name(enum phase_ended_by e); /* "marker", "logged duration", ... */

#endif
