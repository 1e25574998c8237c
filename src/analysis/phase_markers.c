/* phase_markers: the lines a program writes when a phase of its work starts
 * or ends (the built-in forms and the log prefix before them), and the lines
 * that count as warnings, errors and retries (the contract is in
 * phase_markers.h). */
#include "phase_markers.h"
#include "phase_pattern.h"
#include "phase_text.h"

#include <string.h>

#define PHASE_SCAN_MAX 4096 /* bytes of a line the built-in forms and kinds read */
#define PHASE_X_WORDS_MAX 6 /* words of X in "X done in 1.2s" */

/* ---- Built-in forms ---- */

static const char *const phase_key_words[] = { "phase", "stage", NULL };
static const char *const phase_event_keys[] = { "event", "status", "state", NULL };

static const struct {
	const char *key;
	double bare_s; /* what a number without a unit counts */
} phase_duration_keys[] = {
	{ "duration", 1 },	   { "duration_s", 1 },	   { "duration_sec", 1 },
	{ "duration_secs", 1 },	   { "duration_seconds", 1 }, { "duration_ms", 1e-3 },
	{ "duration_us", 1e-6 },   { "elapsed", 1 },	   { "elapsed_s", 1 },
	{ "elapsed_sec", 1 },	   { "elapsed_secs", 1 },    { "elapsed_seconds", 1 },
	{ "elapsed_ms", 1e-3 },	   { "elapsed_us", 1e-6 },   { "took", 1 },
	{ "took_ms", 1e-3 },
};

/* key ends at e (t[e] is '='), starting a word: "phase=", not "subphase=". */
static int key_before(const struct ptext *t, size_t e, const char *key)
{
	size_t n = strlen(key);
	return e >= n && ptext_span_is(t, e - n, e, key, 1) &&
	       !ptext_is_word(ptext_at(t, e - n - 1));
}

/* The first "key=" at or after from for one of keys: the value's start, or 0. */
static size_t key_find(const struct ptext *t, size_t from, const char *const *keys)
{
	for (size_t e = from; e < t->n; e++) {
		if (t->s[e] != '=')
			continue;
		for (int k = 0; keys[k]; k++)
			if (key_before(t, e, keys[k]))
				return e + 1;
	}
	return 0;
}

/* A value at i: quoted ("a b", 'a b'), else up to a blank, "," or ";".
 * Its span in [*vi, *ve) and the position after it. */
static size_t value_read(const struct ptext *t, size_t i, size_t *vi, size_t *ve)
{
	int q = ptext_at(t, i);
	if (ptext_is_quote(q)) {
		const char *close = memchr(t->s + i + 1, q, t->n - i - 1);
		if (close) {
			*vi = i + 1;
			*ve = (size_t)(close - t->s);
			return *ve + 1;
		}
	}
	size_t e = i;
	while (e < t->n && !ptext_is_blank(ptext_at(t, e)) && !ptext_is_in(ptext_at(t, e), ",;"))
		e++;
	*vi = i;
	*ve = e;
	return e;
}

/* The event of the first event=/status=/state= whose value names one. */
static enum phase_event event_key_find(const struct ptext *t)
{
	for (size_t v = key_find(t, 0, phase_event_keys); v; v = key_find(t, v, phase_event_keys)) {
		size_t i = v + ptext_is_quote(ptext_at(t, v)), e;
		enum phase_event ev = ptext_event_read(t, i, &e);
		if (ev != PHASE_NONE && !ptext_is_word(ptext_at(t, e)))
			return ev;
	}
	return PHASE_NONE;
}

/* The seconds of the first duration=/elapsed_s=/duration_ms=... key; -1. */
static double duration_key_find(const struct ptext *t)
{
	size_t nkeys = sizeof(phase_duration_keys) / sizeof(phase_duration_keys[0]);
	for (size_t e = 0; e < t->n; e++) {
		if (t->s[e] != '=')
			continue;
		for (size_t k = 0; k < nkeys; k++) {
			if (!key_before(t, e, phase_duration_keys[k].key))
				continue;
			size_t i = e + 1 + ptext_is_quote(ptext_at(t, e + 1));
			double secs;
			size_t d = ptext_duration_read(t, i, phase_duration_keys[k].bare_s, &secs);
			int c = ptext_at(t, d);
			if (d && (c < 0 || ptext_is_blank(c) || ptext_is_quote(c) ||
				  ptext_is_in(c, ",;})]")))
				return secs;
		}
	}
	return -1;
}

/* phase=X start, stage="X" done in 1.2, phase=X took 2s, phase=X status=done
 * duration_ms=350: anywhere in the line. */
static int phase_form(const struct ptext *t, struct phase_marker *m)
{
	size_t v = key_find(t, 0, phase_key_words);
	if (!v)
		return 0;
	size_t vi, ve, e, j = ptext_skip_blanks(t, value_read(t, v, &vi, &ve));
	if (ptext_is_in(ptext_at(t, j), ":-|,"))
		j = ptext_skip_blanks(t, j + 1);
	double secs = -1;
	enum phase_event ev = ptext_event_read(t, j, &e);
	if (ev != PHASE_NONE)
		ptext_clause_read(t, e, 1, &secs);
	else if (ptext_word(t, j, "took") && j && ptext_clause_read(t, j - 1, 1, &secs))
		ev = PHASE_END;
	else
		ev = event_key_find(t);
	if (ev == PHASE_NONE)
		return 0;
	if (ev == PHASE_END && secs < 0)
		secs = duration_key_find(t);
	if (!ptext_name_set(m->name, t, vi, ve))
		return 0;
	m->event = ev;
	m->duration_s = ev == PHASE_END ? secs : -1;
	return 1;
}

/* [X] begin, [X] done in 1.2s: X in the brackets, the event word last. */
static int bracket_form(const struct ptext *t, size_t i, struct phase_marker *m)
{
	if (ptext_at(t, i) != '[')
		return 0;
	const char *close = memchr(t->s + i + 1, ']', t->n - i - 1);
	if (!close)
		return 0;
	size_t ce = (size_t)(close - t->s), e;
	enum phase_event ev = ptext_event_read(t, ptext_skip_blanks(t, ce + 1), &e);
	double secs = -1;
	if (ev == PHASE_NONE || (!ptext_clause_read(t, e, 0, &secs) && !ptext_rest_is_end(t, e)))
		return 0;
	if (!ptext_name_set(m->name, t, i + 1, ce))
		return 0;
	m->event = ev;
	m->duration_s = ev == PHASE_END ? secs : -1;
	return 1;
}

/* === X ===: three or more "=" each side, nothing after. */
static int rule_form(const struct ptext *t, size_t i, struct phase_marker *m)
{
	size_t a = i;
	while (ptext_at(t, a) == '=')
		a++;
	if (a - i < 3)
		return 0;
	size_t b = t->n;
	while (b > a && ptext_is_blank(ptext_at(t, b - 1)))
		b--;
	size_t z = b;
	while (z > a && ptext_at(t, z - 1) == '=')
		z--;
	if (b - z < 3 || !ptext_name_set(m->name, t, a, z))
		return 0;
	m->event = PHASE_MARK;
	return 1;
}

static const struct {
	const char *word;
	enum phase_event event;
} phase_lead_words[] = {
	{ "starting", PHASE_START }, { "started", PHASE_START }, { "beginning", PHASE_START },
	{ "finished", PHASE_END },   { "completed", PHASE_END }, { "done", PHASE_END },
	{ "ending", PHASE_END },
};
static const char *const phase_lead_labels[] = { "stage", "phase", "step", NULL };

/* The keyword of the keyword-first forms at i: its event and end, or PHASE_NONE. */
static enum phase_event lead_read(const struct ptext *t, size_t i, size_t *end)
{
	for (size_t k = 0; k < sizeof(phase_lead_words) / sizeof(phase_lead_words[0]); k++) {
		size_t e = ptext_word(t, i, phase_lead_words[k].word);
		if (e) {
			*end = e;
			return phase_lead_words[k].event;
		}
	}
	return PHASE_NONE;
}

/* Starting X, Finished stage: X in 1.2s: the keyword first in the message. */
static int lead_form(const struct ptext *t, size_t i, struct phase_marker *m)
{
	size_t e, le;
	enum phase_event ev = lead_read(t, i, &e);
	if (ev == PHASE_NONE ||
	    (ptext_at(t, e) >= 0 && !ptext_is_blank(ptext_at(t, e)) && ptext_at(t, e) != ':'))
		return 0;
	size_t j = ptext_skip_blanks(t, e);
	if (ptext_is_in(ptext_at(t, j), ":-"))
		j = ptext_skip_blanks(t, j + 1);
	if (ptext_word_of(t, j, phase_lead_labels, &le) >= 0 && ptext_is_in(ptext_at(t, le), ":="))
		j = ptext_skip_blanks(t, le + 1);
	/* The name runs to the first duration clause, or to the end. */
	size_t end = t->n;
	double secs = -1;
	for (size_t p = e; p < t->n; p++) {
		int c = ptext_at(t, p);
		if (c != '(' && !(ptext_is_blank(c) && !ptext_is_blank(ptext_at(t, p - 1))))
			continue;
		if (ptext_clause_read(t, p, 0, &secs)) {
			end = p;
			break;
		}
	}
	if (end <= j)
		return 0;
	/* "starting: mode=fast workers=4" lists a run's settings, not a stage */
	for (size_t p = j; p < end; p++)
		if (ptext_at(t, p) == '=')
			return 0;
	if (!ptext_name_set(m->name, t, j, end))
		return 0;
	m->event = ev;
	m->duration_s = ev == PHASE_END ? secs : -1;
	return 1;
}

static const char *const phase_done_words[] = { "done", "finished", "completed", NULL };

/* X done in 1.2s, X finished in 350ms, X took 2.5 s: X is the message's
 * first words (at most PHASE_X_WORDS_MAX), and the duration is required. */
static int done_form(const struct ptext *t, size_t i, struct phase_marker *m)
{
	size_t p = ptext_skip_blanks(t, i);
	for (int w = 0; w <= PHASE_X_WORDS_MAX && p < t->n; w++) {
		size_t e;
		double secs = -1;
		int ok = 0;
		if (w > 0 && ptext_word_of(t, p, phase_done_words, &e) >= 0)
			ok = ptext_clause_read(t, e, 0, &secs);
		else if (w > 0 && ptext_word(t, p, "took"))
			ok = ptext_clause_read(t, p - 1, 0, &secs);
		if (ok && ptext_name_set(m->name, t, i, p)) {
			m->event = PHASE_END;
			m->duration_s = secs;
			return 1;
		}
		while (p < t->n && !ptext_is_blank(ptext_at(t, p)))
			p++;
		p = ptext_skip_blanks(t, p);
	}
	return 0;
}

/* ---- The log prefix ---- */

static const char *const phase_level_words[] = {
	"debug", "info", "warning", "warn", "error", "critical", "fatal", "trace", "notice", NULL,
};

/* A logger name's bytes; "/" for a caller's file ("pipeline/main.go:42"). */
static int ch_logger(int c)
{
	return ptext_is_word(c) || c == '.' || c == '-' || c == '/';
}

/* The end of the logger-name token at i ("pipeline", "app.db", "a::b"). */
static size_t logger_end(const struct ptext *t, size_t i)
{
	for (;;) {
		int c = ptext_at(t, i);
		if (ch_logger(c))
			i++;
		else if (c == ':' && ptext_at(t, i + 1) == ':' && ch_logger(ptext_at(t, i + 2)))
			i += 2; /* Rust's module paths */
		else
			return i;
	}
}

/* t[i, e) is all upper case. */
static int span_upper(const struct ptext *t, size_t i, size_t e)
{
	for (; i < e; i++)
		if (ptext_at(t, i) >= 'a' && ptext_at(t, i) <= 'z')
			return 0;
	return 1;
}

/* A logger name ending at e is set off: "name:", "name - ", "name | ", or
 * "name]" inside the bracket a timestamp opened. */
static int logger_set_off(const struct ptext *t, size_t e, int in_bracket)
{
	size_t k = ptext_skip_blanks(t, e);
	int c = ptext_at(t, k), next = ptext_at(t, k + 1);
	if (ptext_at(t, e) == ':')
		return 1;
	if (in_bracket && c == ']')
		return 1;
	return k > e && (c == '-' || c == '|') && (next < 0 || ptext_is_blank(next));
}

/* Where the message starts: past the timestamp (which ends at i), levels,
 * [groups], a logger name and the separators between them. A "name:" counts
 * as a logger only after a timestamp, level or group, so that "fetch: done
 * in 1.2s" keeps its name; a [group] only when more text follows it and it
 * is not itself the [X] begin form. */
static size_t prefix_skip(const struct ptext *t, size_t i, int in_bracket)
{
	int seen = i > 0;
	struct phase_marker scratch;
	for (;;) {
		i = ptext_skip_blanks(t, i);
		int c = ptext_at(t, i), next = ptext_at(t, i + 1);
		if (c < 0)
			return i;
		if (in_bracket && c == ']') {
			in_bracket = 0;
			i++;
			continue;
		}
		/* "2026-... - app - INFO - msg", "app | msg", "2026-...:INFO:app:msg" */
		if (ptext_is_in(c, "-|:") &&
		    (next < 0 || ptext_is_blank(next) || (c == ':' && seen))) {
			i++;
			continue;
		}
		if (c == '[') {
			const char *close = memchr(t->s + i + 1, ']', t->n - i - 1);
			size_t ce, le;
			if (!close)
				return i;
			ce = (size_t)(close - t->s);
			if (ptext_word_of(t, i + 1, phase_level_words, &le) >= 0 && le == ce) {
				i = ce + 1;
				seen = 1;
				continue;
			}
			if (bracket_form(t, i, &scratch) || ptext_skip_blanks(t, ce + 1) >= t->n)
				return i;
			i = ce + 1;
			seen = 1;
			continue;
		}
		size_t e = logger_end(t, i), le;
		if (e == i)
			return i;
		if (ptext_word_of(t, i, phase_level_words, &le) >= 0 && le == e &&
		    (span_upper(t, i, e) || ptext_at(t, e) == ':')) {
			i = e + (ptext_at(t, e) == ':');
			seen = 1;
			continue;
		}
		if (!seen || !logger_set_off(t, e, in_bracket) || lead_read(t, i, &le) != PHASE_NONE)
			return i;
		i = e;
		if (ptext_at(t, i) == ':') {
			size_t d = i + 1;
			while (ptext_is_digit(ptext_at(t, d)))
				d++;
			/* a caller's line: "main.go:42" */
			if (d > i + 1 && (ptext_at(t, d) < 0 || ptext_is_blank(ptext_at(t, d)) ||
					  ptext_at(t, d) == ':'))
				i = d;
			else
				i++;
		}
	}
}

static int builtin_parse(const struct ptext *t, size_t stamp_end, struct phase_marker *m)
{
	if (phase_form(t, m))
		return 1;
	size_t i = prefix_skip(t, stamp_end, stamp_end && ptext_at(t, 0) == '[');
	return bracket_form(t, i, m) || rule_form(t, i, m) || lead_form(t, i, m) ||
	       done_form(t, i, m);
}

int phase_marker_parse(const char *line, size_t len, const struct phase_pattern *user,
		       struct phase_marker *out)
{
	struct phase_marker m = { .event = PHASE_NONE, .duration_s = -1, .stamp_ns = -1 };
	struct ptext t = { line, line ? (len < PHASE_SCAN_MAX ? len : PHASE_SCAN_MAX) : 0 };
	size_t stamp_end = ptext_stamp_read(&t, &m);
	int found;
	if (user && user->compiled)
		found = phase_pattern_match(user, line, line ? len : 0, &m);
	else
		found = builtin_parse(&t, stamp_end, &m);
	if (!found) {
		m.event = PHASE_NONE;
		m.name[0] = '\0';
		m.duration_s = -1;
	}
	*out = m;
	return found;
}

/* ---- Line kinds ---- */

/* t[i, j) ends with w (case as written). */
static int span_ends_with(const struct ptext *t, size_t i, size_t j, const char *w)
{
	size_t n = strlen(w);
	return j - i >= n && !memcmp(t->s + j - n, w, n);
}

/* level=warn, "level": "error": a structured log's level field at the word
 * "level" ending at j. */
static int level_field_kind(const struct ptext *t, size_t j)
{
	size_t k = j + (ptext_at(t, j) == '"'), e;
	if (!ptext_is_in(ptext_at(t, k), "=:"))
		return 0;
	k = ptext_skip_blanks(t, k + 1);
	k += ptext_is_quote(ptext_at(t, k));
	static const char *const warn[] = { "warning", "warn", NULL };
	static const char *const error[] = { "error", "fatal", "critical", "panic", NULL };
	if (ptext_word_of(t, k, warn, &e) >= 0 && !ptext_is_word(ptext_at(t, e)))
		return PHASE_LINE_WARNING;
	if (ptext_word_of(t, k, error, &e) >= 0 && !ptext_is_word(ptext_at(t, e)))
		return PHASE_LINE_ERROR;
	return 0;
}

/* "attempt 2", "Attempt #3", "attempt=4": the word "attempt" ends at j. */
static int attempt_is_retry(const struct ptext *t, size_t j)
{
	size_t k = j;
	while (ptext_at(t, k) == ' ')
		k++;
	if (ptext_is_in(ptext_at(t, k), "#=:"))
		k++;
	while (ptext_at(t, k) == ' ')
		k++;
	if (!ptext_is_digit(ptext_at(t, k)))
		return 0;
	while (ptext_at(t, k) == '0')
		k++;
	size_t d = k;
	long v = 0;
	while (ptext_is_digit(ptext_at(t, d)) && d - k < 9)
		v = v * 10 + (ptext_at(t, d++) - '0');
	return v >= 2 || ptext_is_digit(ptext_at(t, d));
}

/* What the word t[i, j) makes of its line (PHASE_LINE_* bits). */
static int word_kind(const struct ptext *t, size_t i, size_t j)
{
	int colon = ptext_at(t, j) == ':';
	static const char *const retry[] = { "retry", "retrying", "retried", "retries", NULL };
	static const char trace[] = " (most recent call last)";
	if (ptext_span_is(t, i, j, "WARNING", 0) || ptext_span_is(t, i, j, "WARN", 0))
		return PHASE_LINE_WARNING;
	if (ptext_span_is(t, i, j, "ERROR", 0) || ptext_span_is(t, i, j, "CRITICAL", 0) ||
	    ptext_span_is(t, i, j, "FATAL", 0))
		return PHASE_LINE_ERROR;
	if (colon && (span_ends_with(t, i, j, "Error") || span_ends_with(t, i, j, "Exception") ||
		      ptext_span_is(t, i, j, "error", 0)))
		return PHASE_LINE_ERROR;
	if (colon && (span_ends_with(t, i, j, "Warning") || ptext_span_is(t, i, j, "warning", 0)))
		return PHASE_LINE_WARNING;
	if (ptext_span_is(t, i, j, "Traceback", 0) && t->n - j >= sizeof(trace) - 1 &&
	    !memcmp(t->s + j, trace, sizeof(trace) - 1))
		return PHASE_LINE_ERROR;
	for (int k = 0; retry[k]; k++)
		if (ptext_span_is(t, i, j, retry[k], 1))
			return PHASE_LINE_RETRY;
	if (ptext_span_is(t, i, j, "attempt", 1) && attempt_is_retry(t, j))
		return PHASE_LINE_RETRY;
	if (ptext_span_is(t, i, j, "level", 1))
		return level_field_kind(t, j);
	return 0;
}

int phase_line_kind(const char *line, size_t len)
{
	struct ptext t = { line, line ? (len < PHASE_SCAN_MAX ? len : PHASE_SCAN_MAX) : 0 };
	int kind = 0;
	for (size_t i = 0; i < t.n;) {
		if (!ptext_is_word(ptext_at(&t, i))) {
			i++;
			continue;
		}
		size_t j = i;
		while (ptext_is_word(ptext_at(&t, j)))
			j++;
		kind |= word_kind(&t, i, j);
		i = j;
	}
	return kind;
}
