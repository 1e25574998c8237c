/* procmatch: the running processes a name stands for (sonde attach NAME).
 * Reads /proc only; never signals or opens a process beyond its files there. */
#ifndef SONDE_PROCMATCH_H
#define SONDE_PROCMATCH_H

#include <stddef.h>
#include <sys/types.h>

#define PROCMATCH_CMDLINE_CHARS 256

struct procmatch {
	pid_t pid;
	char comm[64];
	char cmdline[PROCMATCH_CMDLINE_CHARS]; /* NULs as spaces, cut to fit */
};

/* The processes name stands for, by the first rule that matches any: its comm
 * (or argv[0]'s base name) is exactly name; else name is a substring of its
 * command line. Kernel threads and the pids in skip[0..n_skip) never match.
 * Writes up to cap matches in pid order to out and returns how many matched
 * (more than cap when some were left out), or -errno when /proc cannot be
 * listed. */
int procmatch_find(const char *name, const pid_t *skip, size_t n_skip, struct procmatch *out,
		   size_t cap);

/* pid and its ancestors up to init (not included), at most cap of them, in
 * out; returns how many. sonde passes its own to procmatch_find, so that
 * neither it nor the shell that started it is ever a match. */
size_t procmatch_ancestors(pid_t pid, pid_t *out, size_t cap);

#endif
