/* phase_pattern: the user's --phase patterns: checks and compiles one (named
 * groups, bounded cost) and reads a log line with it. The contract is in
 * phase_markers.h (compile, release) and phase_pattern.h (match). */
#include "phase_pattern.h"
#include "phase_text.h"
#include "../util/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#define PHASE_USER_LINE_MAX 4096 /* a user pattern's copy of the line, with its NUL */
#define PHASE_PATTERN_MAX 4096	 /* bytes of a --phase pattern */
#define PHASE_GROUPS_MAX 64	 /* a named group must be among the first 63 groups */
#define PHASE_PATTERN_DEPTH_MAX 32	/* groups within groups in a pattern */
#define PHASE_PATTERN_NODES_MAX 16384	/* regcomp's copies of repeated groups, roughly */

static void pattern_error(struct strbuf *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void pattern_error(struct strbuf *err, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return;
	va_start(ap, fmt);
	strbuf_vaddf(err, fmt, ap);
	va_end(ap);
}

/* The end of the bracket expression that opens at i ("[a-z]", "[]x]",
 * "[[:alpha:]_]"): past its "]", or len when it is not closed. */
static size_t bracket_end(const char *p, size_t len, size_t i)
{
	size_t j = i + 1;
	if (j < len && p[j] == '^')
		j++;
	if (j < len && p[j] == ']')
		j++;
	while (j < len && p[j] != ']') {
		if (p[j] == '[' && j + 1 < len && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
			char kind = p[j + 1];
			size_t k = j + 2;
			while (k + 1 < len && !(p[k] == kind && p[k + 1] == ']'))
				k++;
			if (k + 1 >= len)
				return len;
			j = k + 2;
		} else {
			j++;
		}
	}
	return j < len ? j + 1 : len;
}

/* A rough count of the nodes regcomp will build. glibc copies a group once
 * per repeat (x+ is xx*, x{2,5} is five x's), so nested repeats grow it
 * exponentially: 20 levels of ((a)+)+ take gigabytes and seconds. */
struct pattern_cost {
	uint64_t total, last; /* the group being read so far; its last atom */
	uint64_t outer[PHASE_PATTERN_DEPTH_MAX]; /* the enclosing groups' totals */
	int depth;
	int repeated; /* the last token was a repeat */
};

static uint64_t cost_cap(uint64_t v)
{
	return v > PHASE_PATTERN_NODES_MAX ? PHASE_PATTERN_NODES_MAX + 1 : v;
}

static void cost_atom(struct pattern_cost *c)
{
	c->last = 1;
	c->total = cost_cap(c->total + 1);
	c->repeated = 0;
}

/* A repeat of the last atom or group, copied times times. -1 for a repeat
 * of a repeat (a++, a*{2}: POSIX leaves them undefined). */
static int cost_repeat(struct pattern_cost *c, uint64_t times)
{
	if (c->repeated)
		return -1;
	c->total = cost_cap(c->total + c->last * (times - 1));
	c->last = cost_cap(c->last * times);
	c->repeated = 1;
	return 0;
}

/* "{n}", "{n,}", "{,m}", "{n,m}" at i: its end and how many copies glibc
 * makes; 0 when it is no bound (then "{" is read as a plain byte). */
static size_t bound_read(const char *p, size_t len, size_t i, uint64_t *times)
{
	uint64_t n = 0, m;
	size_t j = i + 1, d = j;
	for (; j < len && ptext_is_digit((unsigned char)p[j]); j++)
		n = n < PHASE_PATTERN_NODES_MAX ? n * 10 + (uint64_t)(p[j] - '0') : n;
	int digits = j > d;
	m = n;
	if (j < len && p[j] == ',') {
		d = ++j;
		for (m = 0; j < len && ptext_is_digit((unsigned char)p[j]); j++)
			m = m < PHASE_PATTERN_NODES_MAX ? m * 10 + (uint64_t)(p[j] - '0') : m;
		if (j == d)
			m = n + 1; /* x{n,} is n x's and x* */
		digits |= j > d;
	}
	if (!digits || j >= len || p[j] != '}')
		return 0;
	*times = m > n ? m : n;
	*times += !*times;
	return j + 1;
}

/* The (?P<name> group at i (pattern[i] is "("), numbered number: records it
 * in p. Returns the position of its ">", or 0 with err filled. */
static size_t group_name_read(struct phase_pattern *p, const char *pattern, size_t len,
			      size_t i, int number, struct strbuf *err)
{
	size_t k = i + 2;
	int *slot;
	k += k < len && pattern[k] == 'P';
	if (k >= len || pattern[k] != '<') {
		pattern_error(err, "the phase pattern has an unsupported group at byte %zu: "
				   "use (?P<name>...), (?<name>...) or (?:...)", i + 1);
		return 0;
	}
	size_t ns = ++k;
	while (k < len && ptext_is_word((unsigned char)pattern[k]))
		k++;
	int nlen = (int)(k - ns);
	if (k >= len || pattern[k] != '>' || !nlen) {
		pattern_error(err, "the phase pattern has a bad group name at byte %zu: "
				   "letters, digits and _ closed by '>'", i + 1);
		return 0;
	}
	if (nlen == 4 && !memcmp(pattern + ns, "name", 4)) {
		slot = &p->group_name;
	} else if (nlen == 5 && !memcmp(pattern + ns, "event", 5)) {
		slot = &p->group_event;
	} else if (nlen == 8 && !memcmp(pattern + ns, "duration", 8)) {
		slot = &p->group_duration;
	} else {
		pattern_error(err, "the phase pattern has an unknown group name '%.*s' "
				   "(use name, event or duration)", nlen > 32 ? 32 : nlen, pattern + ns);
		return 0;
	}
	if (*slot) {
		pattern_error(err, "the phase pattern names the group '%.*s' twice", nlen,
			      pattern + ns);
		return 0;
	}
	if (number >= PHASE_GROUPS_MAX) {
		pattern_error(err, "the phase pattern's named groups must be among its first %d groups",
			      PHASE_GROUPS_MAX - 1);
		return 0;
	}
	*slot = number;
	return k;
}

/* Writes pattern as a plain extended regex into ere (no longer than
 * pattern): named groups become plain ones, and every group is counted so
 * the named ones' numbers are known. 0, or -1 with err filled. */
static int pattern_translate(struct phase_pattern *p, const char *pattern, size_t len, char *ere,
			     struct strbuf *err)
{
	struct pattern_cost cost = { 0 };
	size_t o = 0;
	int groups = 0;
	for (size_t i = 0; i < len; i++) {
		char c = pattern[i];
		size_t e;
		uint64_t times;
		int bad_repeat = 0;
		if (c == '\\' && i + 1 < len && pattern[i + 1] >= '1' && pattern[i + 1] <= '9') {
			pattern_error(err, "the phase pattern has a back-reference at byte %zu "
					   "(they can make matching a line take exponential time)", i + 1);
			return -1;
		} else if (c == '\\' && i + 1 < len) {
			ere[o++] = c;
			ere[o++] = pattern[++i];
			cost_atom(&cost);
		} else if (c == '[') {
			e = bracket_end(pattern, len, i);
			memcpy(ere + o, pattern + i, e - i);
			o += e - i;
			i = e - 1;
			cost_atom(&cost);
		} else if (c == '(') {
			ere[o++] = c;
			if (cost.depth == PHASE_PATTERN_DEPTH_MAX) {
				pattern_error(err, "the phase pattern nests groups deeper than %d",
					      PHASE_PATTERN_DEPTH_MAX);
				return -1;
			}
			cost.outer[cost.depth++] = cost.total;
			cost.total = cost.last = 0;
			cost.repeated = 0;
			groups++;
			if (i + 2 < len && pattern[i + 1] == '?' && pattern[i + 2] == ':')
				i += 2; /* (?:...) is a group like any other here */
			else if (i + 1 < len && pattern[i + 1] == '?' &&
				 !(i = group_name_read(p, pattern, len, i, groups, err)))
				return -1;
		} else if (c == ')' && cost.depth) {
			ere[o++] = c;
			cost.last = cost_cap(cost.total + 1);
			cost.total = cost_cap(cost.outer[--cost.depth] + cost.last);
			cost.repeated = 0;
		} else if (c == '*' || c == '?') {
			ere[o++] = c;
			bad_repeat = cost_repeat(&cost, 1);
		} else if (c == '+') {
			ere[o++] = c;
			bad_repeat = cost_repeat(&cost, 2);
		} else if (c == '{' && (e = bound_read(pattern, len, i, &times))) {
			memcpy(ere + o, pattern + i, e - i);
			o += e - i;
			i = e - 1;
			bad_repeat = cost_repeat(&cost, times);
		} else {
			ere[o++] = c;
			if (c == '|' || c == '^') {
				cost.last = 0;
				cost.repeated = 0;
			} else {
				cost_atom(&cost);
			}
		}
		if (bad_repeat) {
			pattern_error(err, "the phase pattern repeats a repeat at byte %zu "
					   "(a++, .*? and the like are not POSIX extended regex)", i + 1);
			return -1;
		}
	}
	while (cost.depth)
		cost.total = cost_cap(cost.outer[--cost.depth] + cost.total);
	if (cost.total > PHASE_PATTERN_NODES_MAX) {
		pattern_error(err, "the phase pattern's nested repeats would build a regex of "
				   "over %d nodes", PHASE_PATTERN_NODES_MAX);
		return -1;
	}
	ere[o] = '\0';
	return 0;
}

int phase_pattern_compile(struct phase_pattern *p, const char *pattern, struct strbuf *err)
{
	char ere[PHASE_PATTERN_MAX + 1];
	size_t len = strnlen(pattern, PHASE_PATTERN_MAX + 1);
	int rc, most;
	memset(p, 0, sizeof(*p));
	if (len > PHASE_PATTERN_MAX) {
		pattern_error(err, "the phase pattern is longer than %d bytes", PHASE_PATTERN_MAX);
		return -1;
	}
	if (pattern_translate(p, pattern, len, ere, err))
		goto out;
	if (!p->group_name) {
		pattern_error(err, "the phase pattern has no (?P<name>...) group");
		goto out;
	}
	rc = regcomp(&p->re, ere, REG_EXTENDED);
	if (rc) {
		char msg[256];
		regerror(rc, &p->re, msg, sizeof(msg));
		pattern_error(err, "the phase pattern is not a valid extended regex: %s", msg);
		goto out;
	}
	most = p->group_name > p->group_event ? p->group_name : p->group_event;
	most = most > p->group_duration ? most : p->group_duration;
	if ((size_t)most > p->re.re_nsub) {
		pattern_error(err, "the phase pattern's groups could not be numbered");
		regfree(&p->re);
		goto out;
	}
	p->compiled = 1;
	return 0;
out:
	memset(p, 0, sizeof(*p));
	return -1;
}

void phase_pattern_release(struct phase_pattern *p)
{
	if (p->compiled)
		regfree(&p->re);
	memset(p, 0, sizeof(*p));
}

/* A capture's span, when the group took part in the match. */
static int capture_span(const regmatch_t *g, size_t n, size_t *i, size_t *j)
{
	if (g->rm_so < 0 || g->rm_eo < g->rm_so || (size_t)g->rm_eo > n)
		return 0;
	*i = (size_t)g->rm_so;
	*j = (size_t)g->rm_eo;
	return 1;
}

int phase_pattern_match(const struct phase_pattern *p, const char *line, size_t len,
			struct phase_marker *m)
{
	char buf[PHASE_USER_LINE_MAX];
	regmatch_t g[PHASE_GROUPS_MAX];
	size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1, i, j, e;
	int flags = 0;
	if (n)
		memcpy(buf, line, n);
	buf[n] = '\0';
	int most = p->group_name > p->group_event ? p->group_name : p->group_event;
	most = most > p->group_duration ? most : p->group_duration;
#ifdef REG_STARTEND
	/* NUL bytes are then ordinary bytes; without it the line ends at one. */
	g[0].rm_so = 0;
	g[0].rm_eo = (regoff_t)n;
	flags = REG_STARTEND;
#endif
	if (regexec(&p->re, buf, (size_t)most + 1, g, flags))
		return 0;
	/* Each capture is read on its own, as if it were the whole text. */
	struct ptext cap;
	enum phase_event ev = PHASE_MARK;
	if (p->group_event) {
		if (!capture_span(&g[p->group_event], n, &i, &j))
			return 0;
		cap = (struct ptext){ buf + i, j - i };
		ev = ptext_event_read(&cap, ptext_skip_blanks(&cap, 0), &e);
		if (ev == PHASE_NONE || !ptext_rest_is_end(&cap, e))
			return 0;
	}
	if (!capture_span(&g[p->group_name], n, &i, &j))
		return 0;
	cap = (struct ptext){ buf + i, j - i };
	if (!ptext_name_set(m->name, &cap, 0, cap.n))
		return 0;
	m->event = ev;
	m->duration_s = -1;
	if (p->group_duration && capture_span(&g[p->group_duration], n, &i, &j)) {
		double secs;
		cap = (struct ptext){ buf + i, j - i };
		size_t d = ptext_duration_read(&cap, ptext_skip_blanks(&cap, 0), 1, &secs);
		if (d && ptext_skip_blanks(&cap, d) == cap.n)
			m->duration_s = secs;
	}
	return 1;
}
