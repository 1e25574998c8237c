/* pysource: a Python function's qualified name (Class.method,
 * outer.<locals>.inner) from its source, for interpreters whose code objects
 * have no co_qualname (CPython 3.8-3.10).
 *
 * From the code's first line (co_firstlineno: its first decorator, or its
 * `def`), the `def NAME(` or `async def NAME(` line within the next
 * PYSOURCE_DECORATORS_MAX lines gives the function's indentation; each line
 * above with less indentation that opens a `class X` or a `def f` adds `X.`
 * or `f.<locals>.` in front, up to the module level (an `if`, `try`, `with`
 * or `for` block adds nothing, as for CPython). Tabs advance to the next
 * multiple of 8, as CPython's tokenizer counts them. Anything that does not
 * check out (no such def, a name in <>: a lambda, a comprehension, the
 * module) gives no name, and the caller keeps co_name.
 *
 * The heuristic reads lines, not tokens: a string literal spanning lines at
 * a smaller indentation can end the climb early (the name is then shorter
 * than CPython's, never another function's). */
#ifndef SONDE_PYSOURCE_H
#define SONDE_PYSOURCE_H

#include <stddef.h>
#include <sys/types.h>

struct strbuf;

#define PYSOURCE_DECORATORS_MAX 40 /* lines from co_firstlineno to the def */
#define PYSOURCE_FILE_MAX (4 * 1024 * 1024)

/* The qualified name of the function `name` whose code starts at line
 * firstlineno of text[0..len), appended to out. 0, or -1 (out unchanged). */
int pysource_qualname(const char *text, size_t len, int firstlineno, const char *name,
		      struct strbuf *out);

/* Reads a source file as process pid sees it (a relative path from its
 * working directory, an absolute one through its root: a container's files)
 * into out, a regular file of at most PYSOURCE_FILE_MAX bytes. 0 or -errno. */
int pysource_read(pid_t pid, const char *file, struct strbuf *out);

#endif
