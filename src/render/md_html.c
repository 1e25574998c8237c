/* md_html: report.md's Markdown as HTML (md_html.h). */
#include "md_html.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define LIST_DEPTH_MAX 16

void html_escape(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			fputc(s[i], out);
		}
	}
}

/* The length of an entity reference at s (&lt; &#60; &#x3c;), or 0. */
static size_t entity_len(const char *s, size_t n)
{
	size_t i = 1;
	if (n < 3 || s[0] != '&')
		return 0;
	if (s[1] == '#') {
		i = 2;
		int hex = i < n && (s[i] == 'x' || s[i] == 'X');
		i += (size_t)hex;
		size_t start = i;
		while (i < n && i - start < 8 &&
		       (hex ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i])))
			i++;
		if (i == start)
			return 0;
	} else {
		while (i < n && i < 32 && isalnum((unsigned char)s[i]))
			i++;
		if (i == 1)
			return 0;
	}
	return i < n && s[i] == ';' ? i + 1 : 0;
}

/* The backtick runs of a text: where the last run of each length starts,
 * so that an opening run with no closing run of its length is known at
 * once, and each scan for a closer ends at one (linear time on any line). */
struct tick_runs {
	size_t *last; /* last[L]: 1 + the start of the last run of L backticks; 0: none */
	size_t max;   /* the longest run */
};

static size_t run_at(const char *s, size_t i, size_t n)
{
	size_t run = 0;
	while (i + run < n && s[i + run] == '`')
		run++;
	return run;
}

static void tick_runs_init(struct tick_runs *r, const char *s, size_t n)
{
	r->max = 0;
	r->last = NULL;
	for (size_t i = 0; i < n;) {
		size_t run = s[i] == '`' ? run_at(s, i, n) : 0;
		if (run > r->max)
			r->max = run;
		i += run ? run : 1;
	}
	if (!r->max)
		return;
	r->last = xcalloc(r->max + 1, sizeof(*r->last));
	for (size_t i = 0; i < n;) {
		size_t run = s[i] == '`' ? run_at(s, i, n) : 0;
		if (run)
			r->last[run] = i + 1;
		i += run ? run : 1;
	}
}

/* Where the code span that ticks backticks open at i closes (the start of
 * its closing run), or 0 when none does. */
static size_t span_close(const struct tick_runs *r, const char *s, size_t i, size_t ticks,
			 size_t n)
{
	if (ticks > r->max || r->last[ticks] <= i + ticks)
		return 0;
	for (size_t j = i + ticks; j < n;) {
		size_t run = s[j] == '`' ? run_at(s, j, n) : 0;
		if (run == ticks)
			return j;
		j += run ? run : 1;
	}
	return 0;
}

/* A single * at i opens emphasis: text follows it at once, and a single *
 * after text closes it within EM_REACH bytes (so a long line of stars from
 * the target, a C++ name full of pointers, costs linear time). */
#define EM_REACH 256
static int em_opens(const char *s, size_t i, size_t n)
{
	if (i + 1 >= n || isspace((unsigned char)s[i + 1]) || s[i + 1] == '*')
		return 0;
	if (n > i + EM_REACH)
		n = i + EM_REACH;
	for (size_t j = i + 2; j < n; j++)
		if (s[j] == '*' && !isspace((unsigned char)s[j - 1]) &&
		    (j + 1 >= n || s[j + 1] != '*'))
			return 1;
	return 0;
}

/* Inline Markdown: code spans, **strong**, *emphasis*, escapes, entities;
 * the rest escaped. */
static void inline_write(FILE *out, const char *s, size_t n)
{
	int strong = 0, em = 0;
	struct tick_runs runs;
	tick_runs_init(&runs, s, n);
	for (size_t i = 0; i < n;) {
		if (s[i] == '`') {
			size_t ticks = run_at(s, i, n);
			/* the closing run of exactly as many backticks */
			size_t end = span_close(&runs, s, i, ticks, n);
			if (!end) { /* no closing run: literal backticks */
				html_escape(out, s + i, ticks);
				i += ticks;
				continue;
			}
			const char *c = s + i + ticks;
			size_t len = end - (i + ticks);
			if (len >= 2 && c[0] == ' ' && c[len - 1] == ' ') {
				c++;
				len -= 2;
			}
			fputs("<code>", out);
			html_escape(out, c, len);
			fputs("</code>", out);
			i = end + ticks;
		} else if (s[i] == '\\' && i + 1 < n && ispunct((unsigned char)s[i + 1])) {
			html_escape(out, s + i + 1, 1);
			i += 2;
		} else if (s[i] == '*' && i + 1 < n && s[i + 1] == '*') {
			fputs(strong ? "</strong>" : "<strong>", out);
			strong = !strong;
			i += 2;
		} else if (s[i] == '*' && (em || em_opens(s, i, n))) {
			fputs(em ? "</em>" : "<em>", out);
			em = !em;
			i++;
		} else if (s[i] == '&' && entity_len(s + i, n - i)) {
			size_t e = entity_len(s + i, n - i);
			fwrite(s + i, 1, e, out);
			i += e;
		} else {
			html_escape(out, s + i, 1);
			i++;
		}
	}
	if (em)
		fputs("</em>", out);
	if (strong)
		fputs("</strong>", out);
	free(runs.last);
}

/* A cell reads as a number: digits, with a sign, separators, a unit. */
static int cell_is_number(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	return n && (isdigit((unsigned char)s[0]) ||
		     ((s[0] == '-' || s[0] == '+') && n > 1 && isdigit((unsigned char)s[1])));
}

/* One table row: its cells between unescaped pipes. */
static void row_write(FILE *out, const char *line, size_t n, const char *tag)
{
	size_t i = 0;
	while (i < n && isspace((unsigned char)line[i]))
		i++;
	if (i < n && line[i] == '|')
		i++;
	while (n > i && isspace((unsigned char)line[n - 1]))
		n--;
	if (n > i && line[n - 1] == '|' && !(n >= 2 && line[n - 2] == '\\'))
		n--;
	struct tick_runs runs;
	tick_runs_init(&runs, line, n);
	fputs("<tr>", out);
	while (i <= n) {
		size_t j = i;
		/* pipes inside a code span (the same spans inline_write finds)
		 * are the cell's */
		while (j < n && line[j] != '|') {
			if (line[j] == '\\' && j + 1 < n) {
				j += 2;
			} else if (line[j] == '`') {
				size_t ticks = run_at(line, j, n);
				size_t end = span_close(&runs, line, j, ticks, n);
				j = end ? end + ticks : j + ticks;
			} else {
				j++;
			}
		}
		const char *c = line + i;
		size_t len = j - i;
		while (len && isspace((unsigned char)*c)) {
			c++;
			len--;
		}
		while (len && isspace((unsigned char)c[len - 1]))
			len--;
		fprintf(out, "<%s%s>", tag, cell_is_number(c, len) ? " class=\"n\"" : "");
		inline_write(out, c, len);
		fprintf(out, "</%s>", tag);
		i = j + 1;
	}
	fputs("</tr>\n", out);
	free(runs.last);
}

struct md_state {
	FILE *out;
	int para, quote, table, code;
	int list_depth;
	int headings;
};

static void blocks_close(struct md_state *st)
{
	if (st->para)
		fputs("</p>\n", st->out);
	if (st->quote)
		fputs("</blockquote>\n", st->out);
	if (st->table)
		fputs("</tbody></table></div>\n", st->out);
	while (st->list_depth > 0) {
		fputs("</li></ul>\n", st->out);
		st->list_depth--;
	}
	st->para = st->quote = st->table = 0;
}

static void list_item(struct md_state *st, int depth, const char *text, size_t n)
{
	if (st->para || st->quote || st->table) {
		int keep = st->list_depth;
		st->list_depth = 0;
		blocks_close(st);
		st->list_depth = keep;
	}
	if (depth >= LIST_DEPTH_MAX)
		depth = LIST_DEPTH_MAX - 1;
	if (depth + 1 > st->list_depth) {
		while (st->list_depth < depth + 1) {
			fputs(st->list_depth ? "\n<ul>" : "<ul>", st->out);
			st->list_depth++;
			if (st->list_depth < depth + 1)
				fputs("<li>", st->out);
		}
	} else {
		while (st->list_depth > depth + 1) {
			fputs("</li></ul>", st->out);
			st->list_depth--;
		}
		fputs("</li>\n", st->out);
	}
	fputs("<li>", st->out);
	inline_write(st->out, text, n);
}

void md_html_write(FILE *out, const char *md, size_t len, md_heading_fn *at_heading, void *arg)
{
	struct md_state st = {.out = out};
	struct strbuf heading = STRBUF_INIT;
	const char *end = md + len;
	for (const char *line = md; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		const char *next = nl ? nl + 1 : end;
		if (n && line[n - 1] == '\r')
			n--;
		if (st.code) {
			if (n >= 3 && !strncmp(line, "```", 3)) {
				fputs("</code></pre>\n", out);
				st.code = 0;
			} else {
				html_escape(out, line, n);
				fputc('\n', out);
			}
			line = next;
			continue;
		}
		size_t indent = 0;
		while (indent < n && line[indent] == ' ')
			indent++;
		const char *t = line + indent;
		size_t tn = n - indent;
		int level = 0;
		while (level < (int)tn && level < 7 && t[level] == '#')
			level++;
		if (!tn) {
			blocks_close(&st);
		} else if (tn >= 3 && !strncmp(t, "```", 3)) {
			blocks_close(&st);
			fputs("<pre><code>", out);
			st.code = 1;
		} else if (level >= 1 && level <= 6 && (int)tn > level && t[level] == ' ' &&
			   !indent) {
			blocks_close(&st);
			strbuf_reset(&heading);
			strbuf_add(&heading, t + level + 1, tn - (size_t)level - 1);
			if (at_heading)
				at_heading(arg, level, heading.buf);
			fprintf(out, "<h%d id=\"h-%d\">", level, ++st.headings);
			inline_write(out, heading.buf, heading.len);
			fprintf(out, "</h%d>\n", level);
		} else if (tn >= 2 && t[0] == '-' && t[1] == ' ') {
			list_item(&st, (int)(indent / 2), t + 2, tn - 2);
		} else if (t[0] == '|') {
			const char *nt = next;
			if (!st.table) {
				/* a table: this row, then the |---| row */
				const char *nl2 = memchr(nt, '\n', (size_t)(end - nt));
				size_t n2 = nl2 ? (size_t)(nl2 - nt) : (size_t)(end - nt);
				if (n2 && nt[n2 - 1] == '\r')
					n2--;
				size_t k = 0;
				while (k < n2 && nt[k] && strchr("|-: ", nt[k]))
					k++;
				int sep = n2 >= 3 && nt[0] == '|' && k == n2;
				blocks_close(&st);
				fputs("<div class=\"t\"><table><thead>", out);
				row_write(out, t, tn, "th");
				fputs("</thead><tbody>\n", out);
				st.table = 1;
				if (sep)
					next = nl2 ? nl2 + 1 : end;
			} else {
				row_write(out, t, tn, "td");
			}
		} else if (tn >= 1 && t[0] == '>') {
			if (!st.quote) {
				blocks_close(&st);
				fputs("<blockquote>", out);
				st.quote = 1;
			} else {
				fputs("<br>\n", out);
			}
			size_t skip = tn >= 2 && t[1] == ' ' ? 2 : 1;
			inline_write(out, t + skip, tn - skip);
		} else if (st.list_depth && indent) {
			fputc(' ', out); /* a list item's continued line */
			inline_write(out, t, tn);
		} else {
			if (!st.para) {
				blocks_close(&st);
				fputs("<p>", out);
				st.para = 1;
			} else {
				fputc('\n', out);
			}
			inline_write(out, t, tn);
		}
		line = next;
	}
	if (st.code)
		fputs("</code></pre>\n", out);
	blocks_close(&st);
	if (at_heading)
		at_heading(arg, 0, NULL);
	strbuf_release(&heading);
}
