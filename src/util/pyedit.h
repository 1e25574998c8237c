/* pyedit: timing code inserted into a Python source text as whole lines,
 * each ending in PYEDIT_MARK, and taken out again byte for byte.
 *
 * For each function named, one decorator line goes right above its `def`
 * (below the decorators it already had, so it times the function itself,
 * under @staticmethod, @property or @lru_cache alike), indented with the
 * def line's own blanks:
 *
 *     @_sonde_region("json/decoder.py:JSONDecoder.decode")  # [PROFILE]
 *
 * and once per file, right above the module-level statement holding the
 * first of them (its first decorator; so after the module docstring, any
 * `from __future__` import and the coding line), a block that defines it,
 * indented with one level of the file's own style (a tab, or its spaces):
 *
 *     try:  # [PROFILE]
 *         from sonde import region as _sonde_region  # [PROFILE]
 *     except ImportError:  # [PROFILE]
 *         def _sonde_region(name): return lambda fn: fn  # [PROFILE]
 *
 * Without the sonde module the decorator returns the function itself;
 * with it but not under `sonde run`, sonde.region() does the same: a call
 * costs nothing more either way. Inserted lines end as the line below them
 * does (CRLF in a CRLF file); a UTF-8 byte order mark stays first. Every
 * inserted line is ASCII (the region's name is written with escapes), so
 * the file's coding declaration applies unchanged. No existing byte is
 * changed: removing the inserted lines gives the text back exactly. */
#ifndef SONDE_PYEDIT_H
#define SONDE_PYEDIT_H

#include <stddef.h>

struct strbuf;

#define PYEDIT_MARK "# [PROFILE]"

enum pyedit_status {
	PYEDIT_OK = 0,
	PYEDIT_SYNTAX = -1,	  /* the text could not be tokenized (err says where) */
	PYEDIT_NOT_FOUND = -2,	  /* no def has that qualified name */
	PYEDIT_NOT_FUNCTION = -3, /* the name is a class's */
	PYEDIT_MISMATCH = -4,	  /* a line to remove is not the line recorded */
};

struct pyedit_target {
	const char *qualname; /* Class.method, func, outer.inner or outer.<locals>.inner */
	const char *region;   /* the region's name (any bytes; escaped when written) */
};

/* A line sonde inserted: its number in the text holding it, and its bytes
 * without the line end. */
struct pyedit_line {
	int line;
	char *text; /* owned */
};

struct pyedit_lines {
	struct pyedit_line *v; /* by line number */
	size_t n, cap;
};

#define PYEDIT_LINES_INIT { NULL, 0, 0 }

void pyedit_lines_add(struct pyedit_lines *lines, int line, const char *text, size_t len);
void pyedit_lines_release(struct pyedit_lines *lines);

/* Inserts the timing lines for targets[0..n) into text[0..len): the new
 * text is appended to out and the inserted lines to inserted (numbered in
 * the new text). A name matching several defs (an `if`/`else` pair)
 * instruments each; the same def named twice is instrumented once.
 * PYEDIT_OK, or a status with a one-line reason in err and *bad the index
 * of the target at fault (PYEDIT_NOT_FOUND, PYEDIT_NOT_FUNCTION); out and
 * inserted are then unchanged. */
int pyedit_instrument(const char *text, size_t len, const struct pyedit_target *targets, size_t n,
		      struct strbuf *out, struct pyedit_lines *inserted, size_t *bad,
		      struct strbuf *err);

/* Removes exactly lines[0..n) (as pyedit_instrument recorded them, with
 * their line ends) from text, appending the rest to out. PYEDIT_MISMATCH
 * with the first line at fault in err when a line is not there as
 * recorded; out is then unchanged. */
int pyedit_strip(const char *text, size_t len, const struct pyedit_line *lines, size_t n,
		 struct strbuf *out, struct strbuf *err);

/* Removes every line whose bytes equal one of lines[0..n)'s (wherever it
 * moved since), appending the rest to out. Returns how many were removed;
 * *left_marked counts the lines still ending in PYEDIT_MARK. */
size_t pyedit_strip_marked(const char *text, size_t len, const struct pyedit_line *lines, size_t n,
			   struct strbuf *out, size_t *left_marked);

#endif
