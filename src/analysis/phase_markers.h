/* phase_markers: recognises the lines a program writes when a phase of its
 * work starts or ends, and the lines that count as warnings, errors and
 * retries. Pure: one line in, one answer out; no allocation per line, any
 * bytes accepted (binary, megabyte lines, no terminator, NUL bytes read as
 * ordinary non-word bytes). A line is judged by its first 4096 bytes.
 *
 * Built-in forms (keywords case-insensitive, names kept as written):
 *   phase=X start, stage="X" done in 1.2, phase=X status=done duration_ms=350
 *       anywhere in the line; the event is the word after X or a later
 *       event=/status=/state= field; "phase=X took 2s" ends X. Start words:
 *       start started starting begin begins beginning; end words: done end
 *       ended finish finished complete completed stop stopped. A bare
 *       number after "in" is seconds here, and duration=, elapsed_s=,
 *       duration_ms= (and the like) fields count.
 *   Starting X, Started X, Beginning X / Finished X, Completed X, Done X,
 *   Ending X, also "Starting stage: X" (stage:, phase:, step: dropped)
 *       the keyword is the message's first word and X the rest of it, so
 *       "Starting server on port 8080" starts "server on port 8080"; a
 *       duration clause (" in D", " after D", " took D", "(D)") ends X.
 *   X done in 1.2s, X finished in 350ms, X completed in 2 s, X took 2.5 s
 *       an end with the logged duration (required: "X done" alone is too
 *       common); X is at most 6 words.
 *   === X ===
 *       a mark: X starts, and the previous mark's phase ends.
 *   [X] begin, [X] end, [X] done in 1.2s
 *       the event word last in the line.
 * A duration D is a number and a unit (ms, s, sec, seconds, m, min, h,
 * hours, ...) or several ("1m20.5s"). In the built-in forms only an end
 * carries one ("Starting backup in 5s" starts "backup", duration -1).
 * Names are trimmed of blanks, quotes and trailing punctuation (... . : , !),
 * control bytes become spaces, and a name with no letter, digit or non-ASCII
 * byte is no name: "Done.", "Finished: --" and "Done in 1.2s" are no markers.
 *
 * A log prefix before the message is not part of any name: a timestamp,
 * level words (INFO, [INFO], info:), [groups] with more text after them, a
 * logger name set off by ":" or " - " ("INFO:root:...", "2026-11-26
 * 06:31:33,123 - pipeline - INFO - ...", "... INFO pipeline: ...") and the
 * separators between them. A "name:" counts as a logger only after a
 * timestamp, level or group, so "fetch: done in 1.2s" ends "fetch".
 *
 * The prefix's own timestamp, when the line opens with one (after an
 * optional "["), is returned as written: YYYY-MM-DD (or YYYY/MM/DD), a "T"
 * or a space, HH:MM:SS, an optional "," or "." fraction of 1 to 9 digits and
 * an optional Z or +HH:MM that is read past, not applied; or HH:MM:SS[.frac]
 * alone. An impossible date or time (2026-02-30, 24:00:00) or a year outside
 * 1970-2261 is no timestamp.
 *
 * A user pattern (--phase REGEX) replaces the built-in forms: a POSIX
 * extended regex with named groups written (?P<name>...) or (?<name>...)
 * ((?:...) is accepted as a plain group):
 *   name      required: the phase's name; empty (after trimming) is no marker
 *   event     optional: a start word starts, an end word ends (the lists
 *             above), anything else, or no capture, is no marker; without
 *             the group every match is a mark
 *   duration  optional: a number with an optional unit (ms, s, m, ...; a
 *             bare number is seconds), kept whatever the event; a capture
 *             that is not one leaves -1
 * The pattern sees the line's first 4095 bytes (NUL bytes included where the
 * C library has REG_STARTEND, else up to the first NUL).
 */
#ifndef SONDE_PHASE_MARKERS_H
#define SONDE_PHASE_MARKERS_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

struct strbuf;

#define PHASE_NAME_MAX 96 /* bytes of a name kept, with its NUL */

enum phase_event {
	PHASE_NONE,
	PHASE_START, /* the named phase begins */
	PHASE_END,   /* the named phase ends */
	PHASE_MARK,  /* the named phase begins and the previous mark's phase ends */
};

struct phase_marker {
	enum phase_event event;
	char name[PHASE_NAME_MAX]; /* trimmed; cut at PHASE_NAME_MAX - 1 bytes */
	double duration_s;	   /* the duration the line states; -1 when none */
	/* The line's leading timestamp ("2026-11-26 06:31:33,123",
	 * "2026-11-26T06:31:33.123456", "06:31:33.123"), its fields read as
	 * UTC: seconds since the epoch, or since midnight when has_date is 0.
	 * stamp_ns is -1 when the line has none. */
	int64_t stamp_ns;
	int stamp_has_date;
};

struct phase_pattern {
	regex_t re;
	int compiled;
	int group_name, group_event, group_duration; /* subexpression numbers; 0: absent */
};

/* Compiles a --phase pattern (at most 4096 bytes). 0, or -1 with one line
 * appended to err (when not NULL) naming what is wrong: a bad regex (with
 * the regex library's words), no name group, an unknown or repeated group
 * name, an unsupported (?...) group, a pattern too long. On failure *p is
 * left released, so phase_pattern_release() is harmless either way. */
int phase_pattern_compile(struct phase_pattern *p, const char *pattern, struct strbuf *err);
void phase_pattern_release(struct phase_pattern *p);

/* Reads one line (len bytes, not NUL-terminated, any bytes; NULL with len
 * 0 is an empty line). With a compiled user pattern only it is tried; with
 * NULL (or a pattern not compiled) the built-in forms. Returns 1 and fills
 * *out when the line is a marker, else 0 (*out then holds only the
 * timestamp, or stamp_ns -1: event PHASE_NONE, name "", duration_s -1). */
int phase_marker_parse(const char *line, size_t len, const struct phase_pattern *user,
		       struct phase_marker *out);

enum {
	PHASE_LINE_WARNING = 1, /* WARNING, WARN (as a level word) */
	PHASE_LINE_ERROR = 2,	/* ERROR, CRITICAL, FATAL, Traceback, Exception */
	PHASE_LINE_RETRY = 4,	/* retry, retrying, retried, "attempt 2", ... */
};

/* What a line counts as: PHASE_LINE_* bits, 0 for none, from its first
 * 4096 bytes. Words are whole ([A-Za-z0-9_] runs):
 *   warning  WARNING or WARN in upper case; a word ending in "Warning"
 *            followed by ":" (UserWarning:), or "warning:"; level=warn(ing)
 *   error    ERROR, CRITICAL or FATAL in upper case; "Traceback (most
 *            recent call last)"; a word ending in "Error" or "Exception"
 *            followed by ":" (ValueError:), or "error:"; level=error/fatal/
 *            critical/panic (also "level": "error" in JSON)
 *   retry    retry, retrying, retried, retries in any case; "attempt N"
 *            (also "attempt #N", "attempt=N") with N >= 2 */
int phase_line_kind(const char *line, size_t len);

#endif
