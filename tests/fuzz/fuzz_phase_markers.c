/* fuzz_phase_markers: a traced program writes every byte of its output, so
 * the phase-marker and line-kind readers must hold for any line: an event in
 * range, a name NUL-terminated within PHASE_NAME_MAX and non-empty on a
 * marker, a duration of -1 or a finite one >= 0, a timestamp of -1 or >= 0,
 * and a line past 4096 bytes judged as its first 4096.
 * sources: src/analysis/phase_markers.c src/analysis/phase_pattern.c src/analysis/phase_text.c src/util/strbuf.c
 * max_len: 8192 */
#include "analysis/phase_markers.h"
#include "util/strbuf.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void marker_check(int r, const struct phase_marker *m)
{
	if (r != 0 && r != 1)
		abort();
	if ((int)m->event < PHASE_NONE || m->event > PHASE_MARK || (r == 1) != (m->event != PHASE_NONE))
		abort();
	if (!memchr(m->name, '\0', PHASE_NAME_MAX) || (r == 1 && !m->name[0]) || (r == 0 && m->name[0]))
		abort();
	if (m->duration_s != -1 && !(m->duration_s >= 0 && isfinite(m->duration_s)))
		abort();
	if (r == 0 && m->duration_s != -1)
		abort();
	if (m->stamp_ns < -1 || (m->stamp_ns == -1 && m->stamp_has_date) ||
	    (m->stamp_has_date != 0 && m->stamp_has_date != 1) ||
	    (m->stamp_ns >= 0 && !m->stamp_has_date && m->stamp_ns >= 86401LL * 1000000000))
		abort();
}

static int marker_same(const struct phase_marker *a, const struct phase_marker *b)
{
	return a->event == b->event && !strcmp(a->name, b->name) &&
	       (a->duration_s == b->duration_s) && a->stamp_ns == b->stamp_ns &&
	       a->stamp_has_date == b->stamp_has_date;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* Compiled once, kept for the run: the fuzzer's own state, not sonde's. */
	static struct phase_pattern user;
	if (!user.compiled &&
	    phase_pattern_compile(&user, "^(.*[] ])?(?P<name>[^ ]+) +(?P<event>[A-Za-z]+)"
					 "( +(in|took) +(?P<duration>[0-9.]+ *[a-z]*))?",
				  NULL))
		abort();
	char *line = malloc(n ? n : 1); /* exactly n bytes: no terminator to lean on */
	memcpy(line, data, n);
	struct phase_marker m, cut;
	int r = phase_marker_parse(line, n, NULL, &m);
	marker_check(r, &m);
	if (n > 4096) {
		/* The built-in forms judge a line by its first 4096 bytes. */
		int rc = phase_marker_parse(line, 4096, NULL, &cut);
		if (rc != r || !marker_same(&m, &cut))
			abort();
		if (phase_line_kind(line, n) != phase_line_kind(line, 4096))
			abort();
	}
	r = phase_marker_parse(line, n, &user, &m);
	marker_check(r, &m);
	int kind = phase_line_kind(line, n);
	if (kind & ~(PHASE_LINE_WARNING | PHASE_LINE_ERROR | PHASE_LINE_RETRY))
		abort();
	/* The input's first line, when short, as a pattern of its own. */
	const char *nl = memchr(line, '\n', n);
	size_t plen = nl ? (size_t)(nl - line) : n;
	if (plen <= 64 && !memchr(line, '\0', plen)) {
		char pattern[65];
		struct phase_pattern p;
		struct strbuf err = STRBUF_INIT;
		memcpy(pattern, line, plen);
		pattern[plen] = '\0';
		int cr = phase_pattern_compile(&p, pattern, &err);
		if (cr == 0) {
			if (err.len || !p.compiled || !p.group_name)
				abort();
			r = phase_marker_parse(line, n, &p, &m);
			marker_check(r, &m);
		} else if (cr != -1 || !err.len || strchr(strbuf_str(&err), '\n') || p.compiled) {
			abort();
		}
		phase_pattern_release(&p);
		strbuf_release(&err);
	}
	free(line);
	return 0;
}
