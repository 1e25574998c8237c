/* pyedit: timing lines into Python source and out again (pyedit.h). */
#include "pyedit.h"
#include "pyscan.h"
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

#define BOM "\xef\xbb\xbf"

/* A line to insert before the line starting at off (line number line). */
struct insertion {
	size_t off;
	int line;
	int order;	    /* at one offset: the import block (0) before a decorator (1) */
	struct strbuf text; /* without its line end */
	const char *eol;
};

void pyedit_lines_add(struct pyedit_lines *lines, int line, const char *text, size_t len)
{
	if (lines->n == lines->cap) {
		lines->cap = lines->cap ? lines->cap * 2 : 16;
		lines->v = xrealloc(lines->v, lines->cap * sizeof(*lines->v));
	}
	lines->v[lines->n++] = (struct pyedit_line){ line, xstrndup(text, len) };
}

void pyedit_lines_release(struct pyedit_lines *lines)
{
	for (size_t i = 0; i < lines->n; i++)
		free(lines->v[i].text);
	free(lines->v);
	*lines = (struct pyedit_lines)PYEDIT_LINES_INIT;
}

static size_t bom_len(const char *text, size_t len)
{
	return len >= 3 && !memcmp(text, BOM, 3) ? 3 : 0;
}

/* Whether a def's qualified name is q, with or without its "<locals>." parts. */
static int qualname_matches(const char *qualname, const char *q)
{
	if (!strcmp(qualname, q))
		return 1;
	while (*qualname) {
		if (!strncmp(qualname, "<locals>.", 9)) {
			qualname += 9;
			continue;
		}
		if (*qualname++ != *q++)
			return 0;
	}
	return !*q;
}

/* name as a Python string literal in ASCII: UTF-8 as \u escapes, any other
 * byte outside printable ASCII as \x (a code point below 256). */
static void literal_add(struct strbuf *sb, const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	strbuf_addch(sb, '"');
	while (*p) {
		unsigned cp = 0, n = 0;
		if (*p >= 0xc2 && *p <= 0xdf)
			cp = *p & 0x1f, n = 1;
		else if (*p >= 0xe0 && *p <= 0xef)
			cp = *p & 0x0f, n = 2;
		else if (*p >= 0xf0 && *p <= 0xf4)
			cp = *p & 0x07, n = 3;
		unsigned k = 1;
		for (; n && k <= n && (p[k] & 0xc0) == 0x80; k++)
			cp = cp << 6 | (p[k] & 0x3f);
		if (n && k == n + 1 &&
		    cp >= (n == 2   ? 0x800u
			   : n == 3 ? 0x10000u
				    : 0x80u) &&
		    cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff)) {
			strbuf_addf(sb, cp > 0xffff ? "\\U%08x" : "\\u%04x", cp);
			p += n + 1;
			continue;
		}
		if (*p == '"' || *p == '\\')
			strbuf_addf(sb, "\\%c", *p);
		else if (*p >= 0x20 && *p < 0x7f)
			strbuf_addch(sb, (char)*p);
		else
			strbuf_addf(sb, "\\x%02x", *p);
		p++;
	}
	strbuf_addch(sb, '"');
}

static void insertion_add(struct insertion **v, size_t *n, size_t off, int line, int order,
			  const char *eol)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n] = (struct insertion){ off, line, order, STRBUF_INIT, eol };
	(*n)++;
}

static int insertion_cmp(const void *a, const void *b)
{
	const struct insertion *x = a, *y = b;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->order - y->order;
}

/* The import block's four lines, one insertion each, before the line at off. */
static void import_block_add(struct insertion **v, size_t *n, const char *text,
			     const struct pyscan *scan, size_t off, int line, const char *eol)
{
	static const char *const block[] = { "try:", "\tfrom sonde import region as _sonde_region",
					     "except ImportError:",
					     "\tdef _sonde_region(name): return lambda fn: fn" };
	for (size_t i = 0; i < sizeof(block) / sizeof(block[0]); i++) {
		insertion_add(v, n, off, line, 0, eol);
		struct strbuf *sb = &(*v)[*n - 1].text;
		const char *s = block[i];
		if (*s == '\t') {
			if (scan->indent_len)
				strbuf_add(sb, text + scan->indent_off, scan->indent_len);
			else
				strbuf_addstr(sb, "    ");
			s++;
		}
		strbuf_addf(sb, "%s  " PYEDIT_MARK, s);
	}
}

/* The line end for a line inserted above the line at off: that line's own,
 * else the file's first, else "\n". */
static const char *eol_for(const char *text, size_t len, size_t off, const struct pyscan *scan,
			   char buf[3])
{
	size_t e = pyscan_line_end(text, len, off);
	size_t n = pyscan_eol_len(text, len, e);
	memset(buf, 0, 3);
	memcpy(buf, text + e, n);
	return n ? buf : *scan->eol ? scan->eol : "\n";
}

int pyedit_instrument(const char *text, size_t len, const struct pyedit_target *targets, size_t n,
		      struct strbuf *out, struct pyedit_lines *inserted, size_t *bad,
		      struct strbuf *err)
{
	struct pyscan scan = PYSCAN_INIT;
	struct insertion *ins = NULL;
	size_t nins = 0;
	char *chosen = NULL; /* per def: instrumented already */
	char top_eol[3];
	int ret = PYEDIT_SYNTAX;
	if (pyscan_defs(text, len, &scan, err))
		goto out;
	chosen = xcalloc(scan.n + 1, 1);
	const struct pyscan_def *first = NULL;
	for (size_t t = 0; t < n; t++) {
		int found = 0, classes = 0;
		for (size_t i = 0; i < scan.n; i++) {
			const struct pyscan_def *d = &scan.defs[i];
			if (!qualname_matches(d->qualname, targets[t].qualname))
				continue;
			if (d->kind == 'c') {
				classes++;
				continue;
			}
			found++;
			if (chosen[i])
				continue;
			chosen[i] = 1;
			if (!first || d->top_off < first->top_off)
				first = d;
			insertion_add(&ins, &nins, d->line_off, d->line, 1, d->eol);
			struct strbuf *sb = &ins[nins - 1].text;
			strbuf_add(sb, text + d->line_off, d->indent_len);
			strbuf_addstr(sb, "@_sonde_region(");
			literal_add(sb, targets[t].region);
			strbuf_addstr(sb, ")  " PYEDIT_MARK);
			if (!*d->eol)
				ins[nins - 1].eol = *scan.eol ? scan.eol : "\n";
		}
		if (!found) {
			ret = classes ? PYEDIT_NOT_FUNCTION : PYEDIT_NOT_FOUND;
			*bad = t;
			if (classes)
				strbuf_addf(err, "%s is a class: name one of its methods (%s.NAME)",
					    targets[t].qualname, targets[t].qualname);
			else
				strbuf_addf(err, "no function %s", targets[t].qualname);
			goto out;
		}
	}
	if (first)
		import_block_add(&ins, &nins, text, &scan, first->top_off, first->top_line,
				 eol_for(text, len, first->top_off, &scan, top_eol));
	qsort(ins, nins, sizeof(*ins), insertion_cmp);
	size_t at = 0;
	for (size_t i = 0; i < nins; i++) {
		strbuf_add(out, text + at, ins[i].off - at);
		at = ins[i].off;
		strbuf_addstr(out, ins[i].text.buf);
		strbuf_addstr(out, ins[i].eol);
		pyedit_lines_add(inserted, ins[i].line + (int)i, ins[i].text.buf, ins[i].text.len);
	}
	strbuf_add(out, text + at, len - at);
	ret = PYEDIT_OK;
out:
	for (size_t i = 0; i < nins; i++)
		strbuf_release(&ins[i].text);
	free(ins);
	free(chosen);
	pyscan_release(&scan);
	return ret;
}

/* One line of a text (a byte order mark is before the first): its number,
 * its bytes [start, start + len) and the offset after its line end. */
struct line_view {
	int line;
	size_t start, len, next;
};

/* The line after l (the first for a zeroed l); 0 at the text's end. */
static int line_next(const char *text, size_t len, struct line_view *l)
{
	size_t s = l->line ? l->next : bom_len(text, len);
	if (s >= len)
		return 0;
	size_t e = pyscan_line_end(text, len, s);
	*l = (struct line_view){ l->line + 1, s, e - s, e + pyscan_eol_len(text, len, e) };
	return 1;
}

static int line_equals(const char *text, const struct line_view *l, const char *want)
{
	return strlen(want) == l->len && !memcmp(text + l->start, want, l->len);
}

static int line_cmp(const void *a, const void *b)
{
	const struct pyedit_line *x = a, *y = b;
	return (x->line > y->line) - (x->line < y->line);
}

int pyedit_strip(const char *text, size_t len, const struct pyedit_line *lines, size_t n,
		 struct strbuf *out, struct strbuf *err)
{
	struct pyedit_line *sorted = xmalloc((n + 1) * sizeof(*sorted));
	struct strbuf kept = STRBUF_INIT;
	struct line_view l = { 0 };
	size_t k = 0;
	int ret = PYEDIT_MISMATCH;
	memcpy(sorted, lines, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), line_cmp);
	strbuf_add(&kept, text, bom_len(text, len));
	while (line_next(text, len, &l)) {
		if (k < n && sorted[k].line == l.line) {
			if (!line_equals(text, &l, sorted[k].text)) {
				strbuf_addf(err, "line %d is not the line sonde inserted there",
					    l.line);
				goto out;
			}
			k++;
			continue;
		}
		strbuf_add(&kept, text + l.start, l.next - l.start);
	}
	if (k < n) {
		strbuf_addf(err,
			    "line %d is not the line sonde inserted there (the file is shorter)",
			    sorted[k].line);
		goto out;
	}
	strbuf_add(out, kept.buf, kept.len);
	ret = PYEDIT_OK;
out:
	strbuf_release(&kept);
	free(sorted);
	return ret;
}

size_t pyedit_strip_marked(const char *text, size_t len, const struct pyedit_line *lines, size_t n,
			   struct strbuf *out, size_t *left_marked)
{
	struct line_view l = { 0 };
	size_t removed = 0, mark_len = strlen(PYEDIT_MARK);
	*left_marked = 0;
	strbuf_add(out, text, bom_len(text, len));
	while (line_next(text, len, &l)) {
		size_t i = 0;
		while (i < n && !line_equals(text, &l, lines[i].text))
			i++;
		if (i < n) {
			removed++;
			continue;
		}
		if (memmem(text + l.start, l.len, PYEDIT_MARK, mark_len))
			(*left_marked)++;
		strbuf_add(out, text + l.start, l.next - l.start);
	}
	return removed;
}
