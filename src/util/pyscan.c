/* pyscan: Python definitions from source, through a statement-level
 * tokenizer (pyscan.h). */
#include "pyscan.h"
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

struct lexer {
	const char *t;
	size_t len, p;
	int line;
	int depth; /* f-string fields inside each other */
	struct strbuf *err;
};

/* A block a later statement may sit in: its indentation column, and for a
 * def or class its name (other blocks add nothing to a qualified name). */
struct block {
	int col;
	char kind;
	size_t name_off, name_len;
};

size_t pyscan_eol_len(const char *text, size_t len, size_t off)
{
	if (off >= len)
		return 0;
	if (text[off] == '\n')
		return 1;
	if (text[off] == '\r')
		return off + 1 < len && text[off + 1] == '\n' ? 2 : 1;
	return 0;
}

size_t pyscan_line_end(const char *text, size_t len, size_t off)
{
	while (off < len && text[off] != '\n' && text[off] != '\r')
		off++;
	return off;
}

/* Consumes a line end at the lexer's position, counting it. */
static int eol_take(struct lexer *lx)
{
	size_t n = pyscan_eol_len(lx->t, lx->len, lx->p);
	if (n) {
		lx->p += n;
		lx->line++;
	}
	return n != 0;
}

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || (unsigned char)c >= 0x80;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\f';
}

/* Whether s[0..n) is a string prefix (r, b, u, f, t in any case and order,
 * at most 3), and whether it makes an f-string (or 3.14's t-string). */
static int string_prefix(const char *s, size_t n, int *fstr)
{
	*fstr = 0;
	if (n > 3)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!strchr("rRbBuUfFtT", s[i]))
			return 0;
		if (strchr("fFtT", s[i]))
			*fstr = 1;
	}
	return 1;
}

static int string_skip(struct lexer *lx, int fstr);

/* One token in code at the lexer's position, line ends excepted: a name
 * (with a string it prefixes), a string, a comment (up to its line end), a
 * bracket (counted in *brackets) or any other byte. */
static int code_step(struct lexer *lx, int *brackets)
{
	const char *t = lx->t;
	char c = t[lx->p];
	if (is_ident(c) && !(c >= '0' && c <= '9')) {
		size_t s = lx->p;
		int fstr;
		while (lx->p < lx->len && is_ident(t[lx->p]))
			lx->p++;
		if (lx->p < lx->len && (t[lx->p] == '\'' || t[lx->p] == '"') &&
		    string_prefix(t + s, lx->p - s, &fstr))
			return string_skip(lx, fstr);
		return 0;
	}
	if (c == '\'' || c == '"')
		return string_skip(lx, 0);
	if (c == '#') {
		lx->p = pyscan_line_end(t, lx->len, lx->p);
		return 0;
	}
	if (c == '(' || c == '[' || c == '{')
		(*brackets)++;
	else if ((c == ')' || c == ']' || c == '}') && *brackets > 0)
		(*brackets)--;
	lx->p++;
	return 0;
}

/* A replacement field of an f-string, from after its `{` to after its `}`:
 * an expression (strings with any quotes inside, as 3.12 allows), then an
 * optional format spec, itself holding fields. */
static int field_skip(struct lexer *lx)
{
	int brackets = 0, start = lx->line;
	if (++lx->depth > PYSCAN_DEPTH_MAX) {
		strbuf_addf(lx->err, "f-strings nested too deeply at line %d", lx->line);
		return -1;
	}
	while (lx->p < lx->len) {
		char c = lx->t[lx->p];
		if (eol_take(lx))
			continue;
		if (!brackets && c == '}') {
			lx->p++;
			lx->depth--;
			return 0;
		}
		if (!brackets && c == ':') { /* the format spec: text and fields */
			lx->p++;
			while (lx->p < lx->len) {
				c = lx->t[lx->p];
				if (eol_take(lx))
					continue;
				lx->p++;
				if (c == '}') {
					lx->depth--;
					return 0;
				}
				if (c == '{' && field_skip(lx))
					return -1;
			}
			break;
		}
		if (code_step(lx, &brackets))
			return -1;
	}
	if (!lx->err->len)
		strbuf_addf(lx->err, "an unterminated f-string field at line %d", start);
	return -1;
}

/* A string literal from its opening quote to after its closing one. A
 * backslash always keeps the next byte from ending it (raw strings too). */
static int string_skip(struct lexer *lx, int fstr)
{
	const char *t = lx->t;
	char q = t[lx->p];
	int triple = lx->p + 2 < lx->len && t[lx->p + 1] == q && t[lx->p + 2] == q;
	int start = lx->line;
	lx->p += triple ? 3 : 1;
	while (lx->p < lx->len) {
		char c = t[lx->p];
		if (c == '\\') {
			lx->p++;
			if (lx->p < lx->len && !eol_take(lx))
				lx->p++;
			continue;
		}
		if (eol_take(lx)) {
			if (!triple)
				break;
			continue;
		}
		if (fstr && c == '{') {
			if (lx->p + 1 < lx->len && t[lx->p + 1] == '{') {
				lx->p += 2;
				continue;
			}
			lx->p++;
			if (field_skip(lx))
				return -1;
			continue;
		}
		lx->p++;
		if (c != q)
			continue;
		if (!triple)
			return 0;
		if (lx->p + 1 < lx->len && t[lx->p] == q && t[lx->p + 1] == q) {
			lx->p += 2;
			return 0;
		}
	}
	if (!lx->err->len)
		strbuf_addf(lx->err, "an unterminated string at line %d", start);
	return -1;
}

/* The word at p (a keyword or name) and its length. */
static size_t word_at(const char *t, size_t len, size_t p)
{
	size_t q = p;
	while (q < len && is_ident(t[q]))
		q++;
	return q - p;
}

static int word_is(const char *t, size_t len, size_t p, const char *w)
{
	size_t n = strlen(w);
	return word_at(t, len, p) == n && !memcmp(t + p, w, n);
}

static size_t blanks_skip(const char *t, size_t len, size_t p)
{
	while (p < len && is_blank(t[p]))
		p++;
	return p;
}

/* What a statement starting at p opens: 'd' (def, async def) or 'c' (class)
 * with its name's place; '@' a decorator; 'k' a clause that continues the
 * statement before (else, elif, except, finally); 0 anything else. */
static char statement_kind(const char *t, size_t len, size_t p, size_t *name_off, size_t *name_len)
{
	if (t[p] == '@')
		return '@';
	static const char *const clauses[] = { "else", "elif", "except", "finally" };
	for (size_t i = 0; i < sizeof(clauses) / sizeof(clauses[0]); i++)
		if (word_is(t, len, p, clauses[i]))
			return 'k';
	if (word_is(t, len, p, "async"))
		p = blanks_skip(t, len, p + 5);
	char kind = word_is(t, len, p, "def") ? 'd' : word_is(t, len, p, "class") ? 'c' : 0;
	if (!kind)
		return 0;
	*name_off = blanks_skip(t, len, p + (kind == 'd' ? 3 : 5));
	*name_len = word_at(t, len, *name_off);
	return *name_len ? kind : 0;
}

static void def_add(struct pyscan *scan, const struct pyscan_def *d)
{
	if (scan->n == scan->cap) {
		scan->cap = scan->cap ? scan->cap * 2 : 32;
		scan->defs = xrealloc(scan->defs, scan->cap * sizeof(*scan->defs));
	}
	scan->defs[scan->n++] = *d;
}

struct scan_state {
	struct block blocks[PYSCAN_DEPTH_MAX];
	int nblocks;
	int top_line, after_decorator;
	size_t top_off;
};

/* A statement starting at column col of the line at ls, its first token at
 * p: closes the blocks it is not inside, and records it when it is a def or
 * a class. */
static int statement_seen(struct lexer *lx, struct scan_state *s, struct pyscan *scan, size_t ls,
			  int col)
{
	const char *t = lx->t;
	size_t name_off = 0, name_len = 0;
	char kind = statement_kind(t, lx->len, lx->p, &name_off, &name_len);
	while (s->nblocks && s->blocks[s->nblocks - 1].col >= col)
		s->nblocks--;
	if (col == 0) {
		if (kind != 'k' && !s->after_decorator) {
			s->top_line = lx->line;
			s->top_off = ls;
		}
		s->after_decorator = kind == '@';
	}
	if (kind != 'd' && kind != 'c')
		return 0;
	if (s->nblocks == PYSCAN_DEPTH_MAX) {
		strbuf_addf(lx->err, "blocks nested too deeply at line %d", lx->line);
		return -1;
	}
	struct strbuf q = STRBUF_INIT;
	for (int i = 0; i < s->nblocks; i++) {
		const struct block *b = &s->blocks[i];
		strbuf_add(&q, t + b->name_off, b->name_len);
		strbuf_addstr(&q, b->kind == 'c' ? "." : ".<locals>.");
	}
	strbuf_add(&q, t + name_off, name_len);
	struct pyscan_def d = { .kind = kind,
				.line = lx->line,
				.line_off = ls,
				.indent_len = lx->p - ls,
				.top_line = s->top_line,
				.top_off = s->top_off };
	size_t e = pyscan_line_end(t, lx->len, lx->p);
	memcpy(d.eol, t + e, pyscan_eol_len(t, lx->len, e));
	d.qualname = strbuf_detach(&q);
	def_add(scan, &d);
	s->blocks[s->nblocks++] = (struct block){ col, kind, name_off, name_len };
	return 0;
}

/* The rest of a logical line from the lexer's position to after its end:
 * brackets and backslashes carry it over line ends. */
static int logical_line_skip(struct lexer *lx)
{
	int brackets = 0;
	while (lx->p < lx->len) {
		size_t n;
		if (lx->t[lx->p] == '\\' && (n = pyscan_eol_len(lx->t, lx->len, lx->p + 1))) {
			lx->p += 1 + n;
			lx->line++;
			continue;
		}
		if (eol_take(lx)) {
			if (!brackets)
				return 0;
			continue;
		}
		if (code_step(lx, &brackets))
			return -1;
	}
	return 0;
}

int pyscan_defs(const char *text, size_t len, struct pyscan *scan, struct strbuf *err)
{
	struct lexer lx = { text, len, 0, 1, 0, err };
	struct scan_state s = { .top_line = 1 };
	size_t first_eol = pyscan_line_end(text, len, 0);
	memcpy(scan->eol, text + first_eol, pyscan_eol_len(text, len, first_eol));
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		lx.p = 3;
	s.top_off = lx.p;
	while (lx.p < len) {
		size_t ls = lx.p;
		int col = 0;
		for (; lx.p < len && is_blank(text[lx.p]); lx.p++)
			col = text[lx.p] == '\t'  ? (col / 8 + 1) * 8
			      : text[lx.p] == ' ' ? col + 1
						  : 0;
		if (lx.p == len)
			break;
		if (text[lx.p] == '#')
			lx.p = pyscan_line_end(text, len, lx.p);
		if (lx.p == len)
			break; /* a comment last, without a line end */
		if (eol_take(&lx))
			continue; /* a blank line or a comment */
		if (col > 0 && !scan->indent_len) {
			scan->indent_off = ls;
			scan->indent_len = lx.p - ls;
		}
		if (statement_seen(&lx, &s, scan, ls, col) || logical_line_skip(&lx))
			return -1;
	}
	return 0;
}

void pyscan_release(struct pyscan *scan)
{
	for (size_t i = 0; i < scan->n; i++)
		free(scan->defs[i].qualname);
	free(scan->defs);
	*scan = (struct pyscan)PYSCAN_INIT;
}
