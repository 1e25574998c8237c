/* pyscan: the functions and classes a Python source text defines, found by
 * tokenizing it as far as statements go: string literals (prefixes, triple
 * quotes, f-strings with nested quotes as in 3.12), comments, brackets and
 * backslash continuations are understood, so a `def` inside a docstring or a
 * bracketed expression is never taken for one.
 *
 * Works on bytes of any ASCII-compatible encoding (the source's coding line
 * is not needed). Lines end with "\n", "\r\n" or a lone "\r", as CPython
 * reads them; line numbers are 1-based, as in tracebacks. A UTF-8 byte order
 * mark is skipped. Indentation counts a tab to the next multiple of 8 and a
 * form feed resets it, as CPython's tokenizer does.
 *
 * Qualified names follow CPython's __qualname__: Class.method,
 * outer.<locals>.inner; an if, for, while, try, with or match block adds
 * nothing. */
#ifndef SONDE_PYSCAN_H
#define SONDE_PYSCAN_H

#include <stddef.h>

struct strbuf;

#define PYSCAN_DEPTH_MAX 64 /* nested blocks and f-string fields */

struct pyscan_def {
	char *qualname;	   /* owned */
	char kind;	   /* 'd': def or async def; 'c': class */
	int line;	   /* the `def`/`class` line (after its decorators) */
	size_t line_off;   /* byte offset where that line starts */
	size_t indent_len; /* bytes of blanks before `def` on that line */
	char eol[3];	   /* that line's end ("" on a last line without one) */
	int top_line;	   /* first line of the module-level statement holding it:
			      its first decorator, or the `if`/`class`/`def` line */
	size_t top_off;	   /* byte offset where top_line starts (after a BOM) */
};

struct pyscan {
	struct pyscan_def *defs; /* in source order */
	size_t n, cap;
	size_t indent_off, indent_len; /* the first indented statement's blanks:
					  one level of the file's own style (0
					  when nothing is indented) */
	char eol[3];		       /* the first line end in the text, "" when none */
};

#define PYSCAN_INIT { NULL, 0, 0, 0, 0, "" }

/* Fills scan (initialised, empty) with text[0..len)'s definitions. 0, or -1
 * with a one-line reason in err ("an unterminated string at line 12"), scan
 * then holding what came before. */
int pyscan_defs(const char *text, size_t len, struct pyscan *scan, struct strbuf *err);

void pyscan_release(struct pyscan *scan);

/* The length of the line end at text[off] (2 for "\r\n", 1 for "\n" or "\r"),
 * 0 when there is none. */
size_t pyscan_eol_len(const char *text, size_t len, size_t off);

/* The offset of the end of the line starting at off (at its line end, or
 * len). */
size_t pyscan_line_end(const char *text, size_t len, size_t off);

#endif
