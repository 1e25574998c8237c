/* phase_text: reads the pieces of a log line that phase markers are made of
 * (words, event words, numbers and durations, names, timestamps), bounded by
 * the line whatever it holds. The contract is in phase_text.h. */
#include "phase_text.h"

#include <stdint.h>
#include <string.h>

#define PHASE_DIGITS_MAX 12 /* digits before a duration's point */

/* Blank or any other control byte (NUL included): never kept at a name's ends. */
static int ptext_is_space_like(int c)
{
	return c >= 0 && (c <= ' ' || c == 0x7f);
}

static int ptext_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

size_t ptext_skip_blanks(const struct ptext *t, size_t i)
{
	while (ptext_is_blank(ptext_at(t, i)))
		i++;
	return i;
}

size_t ptext_word(const struct ptext *t, size_t i, const char *w)
{
	for (; *w; w++, i++)
		if (ptext_lower(ptext_at(t, i)) != *w)
			return 0;
	return ptext_is_alpha(ptext_at(t, i)) ? 0 : i;
}

int ptext_word_of(const struct ptext *t, size_t i, const char *const *words, size_t *end)
{
	for (int k = 0; words[k]; k++) {
		size_t e = ptext_word(t, i, words[k]);
		if (e) {
			*end = e;
			return k;
		}
	}
	return -1;
}

int ptext_span_is(const struct ptext *t, size_t i, size_t j, const char *w, int fold)
{
	size_t n = strlen(w);
	if (j - i != n || j > t->n)
		return 0;
	for (size_t k = 0; k < n; k++) {
		int c = (unsigned char)t->s[i + k];
		if ((fold ? ptext_lower(c) : c) != w[k])
			return 0;
	}
	return 1;
}

/* ---- Events and durations ---- */

static const char *const phase_start_words[] = {
	"start", "started", "starting", "begin", "begins", "beginning", NULL,
};
static const char *const phase_end_words[] = {
	"done", "end", "ended", "finish", "finished", "complete", "completed", "stop", "stopped", NULL,
};

enum phase_event ptext_event_read(const struct ptext *t, size_t i, size_t *end)
{
	if (ptext_is_alpha(ptext_at(t, i - 1)))
		return PHASE_NONE;
	if (ptext_word_of(t, i, phase_start_words, end) >= 0)
		return PHASE_START;
	if (ptext_word_of(t, i, phase_end_words, end) >= 0)
		return PHASE_END;
	return PHASE_NONE;
}

/* A number at i ("12", "1.25"; no sign, at most PHASE_DIGITS_MAX digits
 * before the point, digits past the ninth after it ignored): its end and
 * *val, or 0. Read by hand: strtod needs a terminator and a C locale. */
static size_t number_read(const struct ptext *t, size_t i, double *val)
{
	double v = 0;
	size_t k = 0;
	for (; ptext_is_digit(ptext_at(t, i)); i++) {
		if (++k > PHASE_DIGITS_MAX)
			return 0;
		v = v * 10 + (ptext_at(t, i) - '0');
	}
	if (!k)
		return 0;
	if (ptext_at(t, i) == '.' && ptext_is_digit(ptext_at(t, i + 1))) {
		double scale = 1;
		for (i++, k = 0; ptext_is_digit(ptext_at(t, i)); i++, k++) {
			if (k < 9) {
				scale /= 10;
				v += (ptext_at(t, i) - '0') * scale;
			}
		}
	}
	*val = v;
	return i;
}

static const struct {
	const char *word;
	double s;
} phase_units[] = {
	{ "ms", 1e-3 },	 { "msec", 1e-3 }, { "msecs", 1e-3 }, { "millisecond", 1e-3 },
	{ "milliseconds", 1e-3 },	   { "us", 1e-6 },    { "usec", 1e-6 },
	{ "usecs", 1e-6 }, { "microsecond", 1e-6 },	      { "microseconds", 1e-6 },
	{ "s", 1 },	 { "sec", 1 },	   { "secs", 1 },     { "second", 1 },
	{ "seconds", 1 }, { "m", 60 },	   { "min", 60 },     { "mins", 60 },
	{ "minute", 60 }, { "minutes", 60 }, { "h", 3600 },   { "hr", 3600 },
	{ "hrs", 3600 }, { "hour", 3600 }, { "hours", 3600 },
};

/* The unit word at i: its end and its length in seconds, or 0. */
static size_t unit_read(const struct ptext *t, size_t i, double *s)
{
	for (size_t k = 0; k < sizeof(phase_units) / sizeof(phase_units[0]); k++) {
		size_t e = ptext_word(t, i, phase_units[k].word);
		if (e) {
			*s = phase_units[k].s;
			return e;
		}
	}
	return 0;
}

size_t ptext_duration_read(const struct ptext *t, size_t i, double bare_s, double *secs)
{
	double total = 0;
	size_t end = 0;
	for (size_t at = i;;) {
		double v, unit;
		size_t e = number_read(t, at, &v);
		if (!e)
			break;
		size_t u = e;
		while (ptext_at(t, u) == ' ')
			u++;
		size_t ue = unit_read(t, u, &unit);
		if (!ue) {
			if (!end && bare_s > 0) {
				total = v * bare_s;
				end = e;
			}
			break;
		}
		total += v * unit;
		end = ue;
		for (at = ue; ptext_at(t, at) == ' ';)
			at++;
	}
	if (end)
		*secs = total;
	return end;
}

/* What may follow a duration clause: nothing, closing punctuation, or a
 * separator before more text ("in 1.2s, 300 rows", "in 1.2s (3 files)",
 * "in 1.2s - ok"). Any other word means the clause was part of the text
 * ("Starting job in 2 s intervals"). */
static int tail_ok(const struct ptext *t, size_t i)
{
	i = ptext_skip_blanks(t, i);
	int c = ptext_at(t, i), next = ptext_at(t, i + 1);
	if (c < 0 || ptext_is_in(c, ".!,;:)]("))
		return 1;
	return (c == '-' || c == '|') && (next < 0 || ptext_is_blank(next));
}

int ptext_rest_is_end(const struct ptext *t, size_t i)
{
	while (ptext_is_blank(ptext_at(t, i)) || ptext_is_in(ptext_at(t, i), ".!,;:"))
		i++;
	return i >= t->n;
}

static const char *const phase_clause_words[] = { "in", "after", "took", NULL };

int ptext_clause_read(const struct ptext *t, size_t i, double bare_s, double *secs)
{
	size_t j = ptext_skip_blanks(t, i), e;
	int paren = ptext_at(t, j) == '(';
	if (paren)
		j = ptext_skip_blanks(t, j + 1);
	else if (j == i)
		return 0; /* "in" must be a word of its own */
	if (ptext_word_of(t, j, phase_clause_words, &e) >= 0) {
		if (!ptext_is_blank(ptext_at(t, e)))
			return 0;
		j = ptext_skip_blanks(t, e);
	} else if (!paren) {
		return 0;
	}
	double v;
	size_t d = ptext_duration_read(t, j, bare_s, &v);
	if (!d)
		return 0;
	if (paren) {
		d = ptext_skip_blanks(t, d);
		if (ptext_at(t, d) != ')')
			return 0;
		d++;
	}
	if (!tail_ok(t, d))
		return 0;
	*secs = v;
	return 1;
}

/* ---- Names ---- */

int ptext_name_set(char *name, const struct ptext *t, size_t i, size_t j)
{
	const unsigned char *s = (const unsigned char *)t->s;
	name[0] = '\0';
	if (j > t->n)
		j = t->n;
	for (;;) {
		size_t i0 = i, j0 = j;
		while (i < j && (ptext_is_space_like(s[i]) || ptext_is_quote(s[i])))
			i++;
		while (j > i && (ptext_is_space_like(s[j - 1]) || ptext_is_quote(s[j - 1]) ||
				 ptext_is_in(s[j - 1], ".:,!;")))
			j--;
		if (j - i >= 2 && (s[j - 1] == '-' || s[j - 1] == '|') &&
		    ptext_is_space_like(s[j - 2]))
			j--;
		if (j - i >= 3 && s[j - 3] == 0xe2 && s[j - 2] == 0x80 && s[j - 1] == 0xa6)
			j -= 3; /* U+2026, "…" */
		if (i == i0 && j == j0)
			break;
	}
	size_t len = j - i;
	if (len > PHASE_NAME_MAX - 1) {
		len = PHASE_NAME_MAX - 1;
		while (len && (s[i + len] & 0xc0) == 0x80)
			len--;
	}
	int worth = 0;
	for (size_t k = 0; k < len; k++) {
		int c = s[i + k];
		name[k] = ptext_is_space_like(c) ? ' ' : (char)c;
		worth |= ptext_is_alpha(c) || ptext_is_digit(c) || c >= 0x80;
	}
	while (len && name[len - 1] == ' ')
		len--;
	name[len] = '\0';
	if (!worth) {
		name[0] = '\0';
		return 0;
	}
	return 1;
}

/* ---- Timestamps ---- */

/* n digits at i as a number; -1 when any is not a digit. */
static int digits_read(const struct ptext *t, size_t i, int n)
{
	int v = 0;
	for (int k = 0; k < n; k++) {
		int c = ptext_at(t, i + k);
		if (!ptext_is_digit(c))
			return -1;
		v = v * 10 + c - '0';
	}
	return v;
}

static int days_in_month(int y, int m)
{
	static const unsigned char days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return days[m - 1] + (m == 2 && leap);
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil; y >= 0 here). */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int era = y / 400;
	int yoe = y - era * 400;
	int doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return (int64_t)era * 146097 + doe - 719468;
}

size_t ptext_stamp_read(const struct ptext *t, struct phase_marker *m)
{
	size_t i = ptext_at(t, 0) == '[';
	int64_t days = 0;
	int has_date = 0;
	int sep = ptext_at(t, i + 4);
	if (digits_read(t, i, 4) >= 0 && (sep == '-' || sep == '/')) {
		int y = digits_read(t, i, 4), mo = digits_read(t, i + 5, 2);
		int d = digits_read(t, i + 8, 2), tsep = ptext_at(t, i + 10);
		if (mo < 0 || d < 0 || ptext_at(t, i + 7) != sep || (tsep != 'T' && tsep != ' '))
			return 0;
		if (y < 1970 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
			return 0;
		days = days_from_civil(y, mo, d);
		has_date = 1;
		i += 11;
	}
	int h = digits_read(t, i, 2), mi = digits_read(t, i + 3, 2), s = digits_read(t, i + 6, 2);
	if (h < 0 || mi < 0 || s < 0 || ptext_at(t, i + 2) != ':' || ptext_at(t, i + 5) != ':')
		return 0;
	if (h > 23 || mi > 59 || s > 60)
		return 0;
	i += 8;
	int64_t frac_ns = 0;
	if (ptext_is_in(ptext_at(t, i), ".,") && ptext_is_digit(ptext_at(t, i + 1))) {
		int64_t scale = 100000000;
		for (i++; ptext_is_digit(ptext_at(t, i)); i++, scale /= 10) {
			if (!scale)
				return 0; /* more than 9 digits */
			frac_ns += (ptext_at(t, i) - '0') * scale;
		}
	}
	/* A zone is read past, not applied: the fields are taken as written. */
	int c = ptext_at(t, i);
	if (c == 'Z') {
		i++;
	} else if ((c == '+' || c == '-') && digits_read(t, i + 1, 2) >= 0) {
		i += 3;
		if (ptext_at(t, i) == ':' && digits_read(t, i + 1, 2) >= 0)
			i += 3;
		else if (digits_read(t, i, 2) >= 0)
			i += 2;
	}
	if (ptext_is_word(ptext_at(t, i)))
		return 0;
	m->stamp_ns = ((days * 86400 + h * 3600 + mi * 60 + s) * 1000000000) + frac_ns;
	m->stamp_has_date = has_date;
	return i;
}
