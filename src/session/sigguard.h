/* sigguard: keeps sonde alive while it writes the report.
 *
 * Armed before the session starts (its handlers only run once the session has
 * stopped watching signals) and disarmed when the report is written. While
 * armed, the first SIGINT, SIGTERM, SIGHUP or SIGQUIT that reaches a handler is
 * ignored with a line on stderr; the next one aborts sonde (exit 128+N) with a
 * line saying that `sonde report DIR` rebuilds the report from the recording.
 * During the session itself signals are the session's (forwarded to the
 * target), so a user's Ctrl-C, Ctrl-C, Ctrl-C reads: stop the target, keep
 * writing, abort. */
#ifndef SONDE_SIGGUARD_H
#define SONDE_SIGGUARD_H

/* dir: the run directory, named in the abort message (copied, bounded). */
void sigguard_arm(const char *dir);

/* Back to the dispositions from before sigguard_arm (a signal ignored then,
 * as nohup's SIGHUP, was never guarded). Nothing when not armed. */
void sigguard_disarm(void);

#endif
