/* program: which process of the target did the work when the launched one was
 * a wrapper (a shell script, a pyenv shim) that exec'd the program or started
 * it as a child and waited, and what the wrapper cost on its own. */
#ifndef SONDE_PROGRAM_H
#define SONDE_PROGRAM_H

#include "procstats.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct program {
	int64_t pid;
	int64_t from_ns; /* the program runs in pid from here (its exec); 0: all its life */
	char *command;	 /* the program's command line (owned) */
	char *launcher;	 /* the command sonde launched, the wrapper's (owned) */
	size_t wrapper_processes; /* the wrapper's processes, the launched one included */
	int64_t wrapper_cpu_ns;	  /* their own CPU time; -1 when never read */
};

#define PROGRAM_INIT                                                                               \
	{                                                                                          \
		0, 0, NULL, NULL, 0, -1                                                            \
	}

/* Finds the program behind the launched process: the last command its chain
 * of execs (table execs) ran, or, when that is a shell, the one descendant
 * that holds most of the tree's CPU time. 1 with *out filled when the launched
 * command was a wrapper; 0 (out untouched) when it is the program itself or
 * the recording cannot tell. */
int program_find(sqlite3 *db, const struct procstats *ps, struct program *out);
void program_release(struct program *p);

/* Whether sample (pid, t_ns) belongs to the wrapper, not the program. */
int program_is_wrapper(const struct program *p, const struct procstats *ps, int64_t pid,
		       int64_t t_ns);

/* Fills the temporary table wrapper_spans(pid, from_ns, to_ns) of db's
 * connection with the wrapper's spans, which the stack reader leaves out
 * (record/stackread.h); p NULL: drops it (the launched process is the
 * program; an earlier report on the connection may have made one). 0, or -1
 * when db refused it. */
int program_mark_wrapper(sqlite3 *db, const struct program *p, const struct procstats *ps);

#endif
