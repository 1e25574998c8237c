/* phase_text: the lexical pieces of a log line that the built-in phase forms
 * and the --phase user patterns share. Internal to the phase_* modules
 * (phase_markers.c, phase_pattern.c); the public contract is phase_markers.h. */
#ifndef SONDE_PHASE_TEXT_H
#define SONDE_PHASE_TEXT_H

#include "phase_markers.h"

#include <stddef.h>
#include <string.h>

/* A view of the line being read (not owned, not NUL-terminated, any bytes).
 * Every look goes through ptext_at, which answers -1 past the end (and for
 * i - 1 at 0, which wraps), so no form can read outside the line whatever
 * positions it computes. Positions are byte offsets; a function that finds
 * nothing answers 0 for an end, since a match always ends past 0. */
struct ptext {
	const char *s;
	size_t n;
};

static inline int ptext_at(const struct ptext *t, size_t i)
{
	return i < t->n ? (unsigned char)t->s[i] : -1;
}

/* Character classes over ptext_at's answers (a byte, or -1 past the end,
 * which is in no class). ASCII only: bytes >= 0x80 are in none. */
static inline int ptext_is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static inline int ptext_is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline int ptext_is_word(int c)
{
	return ptext_is_alpha(c) || ptext_is_digit(c) || c == '_';
}

static inline int ptext_is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static inline int ptext_is_quote(int c)
{
	return c == '"' || c == '\'' || c == '`';
}

/* c is one of set's bytes (never the NUL that ends set). */
static inline int ptext_is_in(int c, const char *set)
{
	return c > 0 && strchr(set, c) != NULL;
}

/* The first position at or after i that is not a blank. */
size_t ptext_skip_blanks(const struct ptext *t, size_t i);

/* The end of w (lower case) at i, ignoring ASCII case, when no letter
 * follows it; else 0. */
size_t ptext_word(const struct ptext *t, size_t i, const char *w);

/* Which of words (lower case, NULL-ended) is at i, as ptext_word reads
 * them, with its end in *end; -1 (*end untouched) for none. */
int ptext_word_of(const struct ptext *t, size_t i, const char *const *words, size_t *end);

/* t[i, j) is w exactly, or ignoring ASCII case when fold (w lower case). */
int ptext_span_is(const struct ptext *t, size_t i, size_t j, const char *w, int fold);

/* The event the word at i names (a start or end word, phase_markers.h
 * lists them; no letter may come just before it), its end in *end;
 * PHASE_NONE for another word. */
enum phase_event ptext_event_read(const struct ptext *t, size_t i, size_t *end);

/* A duration at i: a number and its unit ("1.2s", "350 ms", "2 seconds"), or
 * several ("1m20s", "1h 2m"). A lone number without a unit counts bare_s
 * seconds a unit; bare_s 0 requires a unit. Its end and *secs, or 0 (*secs
 * untouched). */
size_t ptext_duration_read(const struct ptext *t, size_t i, double bare_s, double *secs);

/* Only blanks and closing punctuation from i to the end. */
int ptext_rest_is_end(const struct ptext *t, size_t i);

/* A duration clause at i that ends a name: " in 1.2s", " after 2 min",
 * " took 350ms", "(1.2 s)", " (took 1.2s)", followed by nothing, closing
 * punctuation, or a separator before more text (", 300 rows", " - ok"),
 * never another word. bare_s as for ptext_duration_read. 1 and *secs, or 0
 * (then *secs is untouched). */
int ptext_clause_read(const struct ptext *t, size_t i, double bare_s, double *secs);

/* Copies t[i, j) into name (PHASE_NAME_MAX bytes), trimmed of blanks, quotes
 * and trailing punctuation, control bytes turned to spaces, cut at
 * PHASE_NAME_MAX - 1 bytes on a UTF-8 character's boundary. 0 (and an empty
 * name) when nothing worth a name is left: no letter, digit or non-ASCII
 * byte. */
int ptext_name_set(char *name, const struct ptext *t, size_t i, size_t j);

/* The timestamp that opens a line, after an optional "[": its end, with
 * m->stamp_ns and m->stamp_has_date set; 0 (m untouched) when there is none
 * or its fields name no real time. Years run 1970 to 2261, which keeps
 * stamp_ns >= 0 and within int64_t. */
size_t ptext_stamp_read(const struct ptext *t, struct phase_marker *m);

#endif
