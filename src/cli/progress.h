/* progress: one status line on stderr while `sonde run` goes, when stderr
 * is a terminal: the elapsed time, the stack samples so far, the target's
 * RSS and the phase its output last started.
 *
 * Contract:
 * - Drawn only when the command's output passed through stands at a line
 *   start (the session's turn hook), at most once every PROGRESS_EVERY_NS,
 *   as "\r\033[K" and the text with no newline; erased before any of the
 *   command's output is passed through, before another hook prints, and at
 *   the end, so it never shares a line with the command's text or sonde's.
 * - It wraps inner (interim's hooks, or NULL): every hook is passed on.
 * - progress_new() returns NULL when stderr is not a terminal: nothing of
 *   it then, in a pipe, a file or CI. */
#ifndef SONDE_PROGRESS_H
#define SONDE_PROGRESS_H

#include "../session/session.h"

#define PROGRESS_EVERY_NS 1000000000LL
#define PROGRESS_COLUMNS_MAX 200 /* the line is cut to the terminal's width, at most this */

struct recorder;
struct progress;

/* pattern: the --phase pattern or NULL (the built-in markers). */
struct progress *progress_new(struct recorder *rec, const char *pattern,
			      const struct session_hooks *inner);
const struct session_hooks *progress_hooks(struct progress *p);
/* Erases the line when drawn, and frees. NULL is fine. */
void progress_free(struct progress *p);

#endif
