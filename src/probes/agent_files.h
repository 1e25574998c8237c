/* agent_files: following the files in-process agents write into the run's
 * agent directory (agent_dir.h), one per process, named PREFIX-PID.txt, as
 * they grow, and handing their whole lines to the probe that reads them.
 *
 * The target writes these files, so a line longer than line_max is skipped
 * (counted in bad_lines, never buffered whole), and only regular files are
 * opened (a FIFO or a link planted there is refused). */
#ifndef SONDE_AGENT_FILES_H
#define SONDE_AGENT_FILES_H

#include "../util/strbuf.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct agent_file {
	pid_t pid;
	int fd;
	struct strbuf pending; /* bytes read, not yet a whole line */
	int skipping;	       /* inside a line longer than line_max */
	int64_t bad_lines;     /* too long, or refused by the line callback */
	void *user;	       /* the probe's, freed by agent_files_release() */
};

struct agent_files {
	const char *dir;    /* not owned */
	const char *prefix; /* "aio-", "cuda-" */
	size_t line_max;    /* bytes, without the newline */
	struct agent_file *f;
	size_t n, alloc;
};
#define AGENT_FILES_INIT(dir, prefix, line_max) { (dir), (prefix), (line_max), NULL, 0, 0 }

/* Called with each whole line (without its newline) of file f; returns 0, or
 * -1 when the line is not a record (f->bad_lines counts it). */
typedef int (*agent_line_fn)(void *arg, struct agent_file *f, const char *line, size_t len);

/* Opens the files of processes seen for the first time, then reads what each
 * file gained, at most max_bytes per file (0: everything), and hands every
 * whole line to fn. A partial line waits for the next call. */
void agent_files_poll(struct agent_files *af, size_t max_bytes, agent_line_fn fn, void *arg);

/* Closes the files and frees them, each f->user with user_free (may be NULL). */
void agent_files_release(struct agent_files *af, void (*user_free)(void *));

#endif
