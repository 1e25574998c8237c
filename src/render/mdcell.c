/* mdcell: the pieces report.md's sections are written with: outside text
 * made safe for Markdown, and table cells for seconds, bytes and counts. */
#include "mdcell.h"
#include "render.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

/* Outside text with control characters and stray bytes escaped (\x1b):
 * report.md is read in terminals (cat, less -r) as much as in viewers. */
static const char *md_escaped(const char *s, struct strbuf *sb)
{
	if (s)
		utf8_escape(s, strlen(s), 0, sb);
	return strbuf_str(sb);
}

/* Table cells: no pipes, newlines or raw markup (HTML, links) from outside
 * text. A backslash before punctuation is escaped too: left alone, it would
 * turn the "\\|" that follows into a cell border; before anything else
 * (the \x1b of an escaped control character) it is literal already.
 * Emphasis characters stay as they are, so report.md reads well as plain text. */
void md_cell(FILE *out, const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *s = md_escaped(text, &sb); *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '\\':
			fputs(!s[1] || ispunct((unsigned char)s[1]) ? "\\\\" : "\\", out);
			break;
		case '|': case '`': case '[':
			fputc('\\', out);
			fputc(*s, out);
			break;
		default: fputc(*s, out);
		}
	}
	strbuf_release(&sb);
}

/* A code span holding outside text verbatim. Backslashes are literal inside
 * code spans, so instead of escaping, the fence is one backtick longer than
 * the longest run of backticks in s, and padded with spaces (which CommonMark
 * strips) so a leading or trailing backtick cannot merge with it. */
void md_code(FILE *out, const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s = md_escaped(text, &sb);
	size_t longest = 0, run = 0;
	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	for (size_t i = 0; i <= longest; i++)
		fputc('`', out);
	fprintf(out, " %s ", s);
	for (size_t i = 0; i <= longest; i++)
		fputc('`', out);
	strbuf_release(&sb);
}

/* Prose lines: code spans stay code, raw markup does not pass. */
void md_text(FILE *out, const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *s = md_escaped(text, &sb); *s; s++) {
		if (*s == '<')
			fputs("&lt;", out);
		else
			fputc(*s, out);
	}
	strbuf_release(&sb);
}

double md_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *md_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

void md_cell_s(FILE *out, double s)
{
	char buf[32];
	if (isnan(s)) {
		fputs("–", out);
		return;
	}
	fmt_seconds(buf, sizeof(buf), s);
	fputs(buf, out);
}

void md_cell_bytes(FILE *out, double b)
{
	char buf[32];
	if (isnan(b) || b < 0) {
		fputs("–", out);
		return;
	}
	fmt_bytes(buf, sizeof(buf), b);
	fputs(buf, out);
}

/* v * scale in fmt (one double conversion), or a dash when unknown. */
void md_cell_num(FILE *out, double v, const char *fmt, double scale)
{
	if (isnan(v))
		fputs("–", out);
	else
		fprintf(out, fmt, v * scale);
}

void md_cell_int(FILE *out, double v)
{
	if (isnan(v) || v < 0)
		fputs("–", out);
	else
		fprintf(out, "%.0f", v);
}

/* Eight-level sparkline of one key of a timeline (RSS, live heap). */
void md_sparkline(FILE *out, json_t *timeline, const char *key, double peak)
{
	static const char *bars[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
	size_t n = json_array_size(timeline), step = n > 60 ? (n + 59) / 60 : 1;
	for (size_t i = 0; i < n && peak > 0; i += step) {
		double m = 0;
		for (size_t j = i; j < i + step && j < n; j++) {
			double v = md_num(json_array_get(timeline, j), key);
			m = v > m ? v : m;
		}
		double level = m / peak * 7.999; /* clamped before the cast: m may pass peak */
		int k = level > 0 ? (level < 7 ? (int)level : 7) : 0;
		fputs(bars[k], out);
	}
}

void md_sparkline_row(FILE *out, json_t *timeline, const char *label, const char *key,
		      double peak)
{
	if (!(peak > 0))
		return;
	fprintf(out, "| %s | ", label);
	md_sparkline(out, timeline, key, peak);
	fputs(" |\n", out);
}

double md_timeline_max(json_t *timeline, const char *key)
{
	double m = 0;
	size_t i;
	json_t *p;
	json_array_foreach(timeline, i, p) {
		if (md_num(p, key) > m)
			m = md_num(p, key);
	}
	return m;
}

/* "file:line", or the module when the file is unknown (a hotspot, a wait). */
void md_cell_location(FILE *out, json_t *o)
{
	const char *file = md_str(o, "file");
	if (!*file)
		file = md_str(o, "module");
	md_cell(out, *file ? file : "–");
	if (!isnan(md_num(o, "line")))
		fprintf(out, ":%.0f", md_num(o, "line"));
}

void md_cell_pct(FILE *out, double v)
{
	md_cell_num(out, v, "%.0f%%", 1);
}

/* " ±12%" after a sampled estimate (one standard deviation). */
void md_cell_sd(FILE *out, double sd, double value)
{
	if (!isnan(sd) && value > 0 && sd > 0)
		fprintf(out, " ±%.0f%%", 100.0 * sd / value);
}

/* md_fill's kinds of cell. */
enum md_kind {
	MD_TEXT,
	MD_CODE,
	MD_PROSE,
	MD_WHOLE,
	MD_SECONDS,
	MD_BYTES,
	MD_INT,
	MD_PCT,
	MD_TENTHS,
	MD_RATIO,
	MD_FRACTION,
	MD_FRACTION2,
	MD_LOCATION,
	MD_KINDS
};

static const char *const md_kind_names[MD_KINDS] = {
	[MD_TEXT] = "text",	    [MD_CODE] = "code",		[MD_PROSE] = "prose",
	[MD_WHOLE] = "whole",	    [MD_SECONDS] = "s",		[MD_BYTES] = "bytes",
	[MD_INT] = "int",	    [MD_PCT] = "pct",		[MD_TENTHS] = "tenths",
	[MD_RATIO] = "ratio",	    [MD_FRACTION] = "fraction", [MD_FRACTION2] = "fraction2",
	[MD_LOCATION] = "location",
};

static void md_cell_of(FILE *out, json_t *o, const char *key, enum md_kind kind)
{
	double v = md_num(o, key);
	switch (kind) {
	case MD_TEXT: md_cell(out, md_str(o, key)); break;
	case MD_CODE: md_code(out, md_str(o, key)); break;
	case MD_PROSE: md_text(out, md_str(o, key)); break;
	case MD_WHOLE: fprintf(out, "%.0f", v); break;
	case MD_SECONDS: md_cell_s(out, v); break;
	case MD_BYTES: md_cell_bytes(out, v); break;
	case MD_INT: md_cell_int(out, v); break;
	case MD_PCT: md_cell_pct(out, v); break;
	case MD_TENTHS: md_cell_num(out, v, "%.1f", 1); break;
	case MD_RATIO: md_cell_num(out, v, "%.2f", 1); break;
	case MD_FRACTION: md_cell_num(out, v, "%.1f%%", 100); break;
	case MD_FRACTION2: md_cell_num(out, v, "%.2f%%", 100); break;
	case MD_LOCATION: md_cell_location(out, o); break;
	case MD_KINDS: break;
	}
}

/* The kind named by s[0..len), or MD_KINDS. */
static enum md_kind md_kind_find(const char *s, size_t len)
{
	int k = 0;
	while (k < MD_KINDS &&
	       (strlen(md_kind_names[k]) != len || strncmp(s, md_kind_names[k], len)))
		k++;
	return (enum md_kind)k;
}

void md_fill(FILE *out, json_t *o, const char *tmpl)
{
	const char *p = tmpl, *open, *close;
	char key[64];
	while ((open = strchr(p, '{')) && (close = strchr(open, '}'))) {
		const char *colon = memchr(open, ':', (size_t)(close - open));
		enum md_kind kind =
		    colon ? md_kind_find(open + 1, (size_t)(colon - open - 1)) : MD_KINDS;
		size_t len = colon ? (size_t)(close - colon - 1) : 0;
		fwrite(p, 1, (size_t)(open - p), out);
		if (kind == MD_KINDS || len >= sizeof(key)) {
			fwrite(open, 1, (size_t)(close + 1 - open), out); /* not a cell: as it is */
		} else {
			memcpy(key, colon + 1, len);
			key[len] = '\0';
			md_cell_of(out, o, key, kind);
		}
		p = close + 1;
	}
	fputs(p, out);
}
