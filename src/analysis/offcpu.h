/* offcpu (analysis): where the target's threads wait, from the offcpu probe's
 * samples (weight = blocked ns) and its offcpu_threads/offcpu_states tables.
 *
 * A "wait" is the blocked time summed by (waiting frame, blocking call): the
 * waiting frame is the innermost user frame outside system libraries (the
 * program's own code that made the call), the blocking call the innermost
 * user-space frame (libc's wrapper), with the system call named from kernel
 * frames when they were sampled. Preemptions (state R) are CPU contention, not
 * waits, and are left out. */
#ifndef SONDE_ANALYSIS_OFFCPU_H
#define SONDE_ANALYSIS_OFFCPU_H

#include <sqlite3.h>
#include <stdint.h>

struct offcpu_wait {
	char *function, *file, *module; /* the waiting frame; file/module may be NULL */
	int line;			/* 0 when unknown */
	char *blocking;			/* the blocking call, e.g. "clock_nanosleep" */
	char *syscall;			/* e.g. "clock_nanosleep"; NULL without kernel frames */
	char state;			/* the state with most of its time: S, D, ... or '?' */
	double seconds;			/* blocked there, all threads */
	int64_t count;			/* how many times a thread blocked there */
	int64_t tid;			/* the thread that waited there most */
	char *thread_name;		/* NULL when unknown */
	double thread_wall_s, thread_off_s; /* that thread's life and blocked time; -1 unknown */
	int waits_for_others;		    /* a join or waitpid: the time is spent elsewhere */
	/* The Python line the waiting thread was at (offcpu_top_wait only, from
	 * the Python samples inside the wait); NULL when unknown. */
	char *py_function, *py_file;
	int py_line;
	/* The program's own Python frame that made that call: the first frame
	 * outward from it outside the standard library ("InventoryClient._get"
	 * for a wait in socket.py); NULL when the leaf is the program's own or
	 * no frame is. The location names it. */
	char *py_own_function, *py_own_file;
	int py_own_line;
};

/* A wait made this many times or more is one per item of a loop: advice
 * says to make it once for many items (an fsync per row: one transaction). */
#define OFFCPU_MANY_WAITS 100

/* 1 when fn joins threads or waits for children (pthread_join, waitpid, ...):
 * the time waited is spent elsewhere. */
int offcpu_waits_for_others(const char *fn);
/* The same for a Python frame (function, file): Thread.join, a pool's
 * futures; 0 when either is NULL. */
int offcpu_python_joins(const char *function, const char *file);

/* The heaviest wait that is not a join or waitpid (else the heaviest one).
 * 0 with *w filled (release it), -1 when the recording has no offcpu samples. */
int offcpu_top_wait(sqlite3 *db, struct offcpu_wait *w);
void offcpu_wait_release(struct offcpu_wait *w);

/* A one-line description: "nap_ms (offcpu_wait.c:40) in clock_nanosleep". */
struct strbuf;
void offcpu_wait_describe(const struct offcpu_wait *w, struct strbuf *sb);
/* The function a finding names for the wait: the program's own Python
 * frame, else the Python leaf, else the native waiting frame. */
const char *offcpu_wait_function(const struct offcpu_wait *w);
/* What to do about the wait, by its state and call, in the target's
 * language: "Make F wait less: ...". */
void offcpu_wait_advice(const struct offcpu_wait *w, struct strbuf *sb);
/* The location string findings use: file:function:line (or module:function). */
void offcpu_wait_location(const struct offcpu_wait *w, struct strbuf *sb);

#endif
