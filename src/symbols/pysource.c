/* pysource: qualified names of Python functions from their source (pysource.h). */
#include "pysource.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One line of the text: [start, end), end at its newline or the text's end. */
struct src_line {
	const char *start, *end;
};

/* The line numbered n (1-based); 0 when the text has fewer. */
static int line_at(const char *text, size_t len, int n, struct src_line *out)
{
	const char *p = text, *end = text + len;
	for (int k = 1; k < n; k++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return 0;
		p = nl + 1;
	}
	if (p >= end && n > 1)
		return 0;
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	*out = (struct src_line){ p, nl ? nl : end };
	return 1;
}

/* The line before l (0 at the first). */
static int line_before(const char *text, struct src_line l, struct src_line *out)
{
	if (l.start == text)
		return 0;
	const char *end = l.start - 1; /* its newline */
	const char *p = end;
	while (p > text && p[-1] != '\n')
		p--;
	*out = (struct src_line){ p, end };
	return 1;
}

/* Columns of leading blanks (a tab to the next multiple of 8); -1 for a
 * blank line or a comment, which do not end a block. */
static int indent_of(struct src_line l, const char **body)
{
	int col = 0;
	const char *p = l.start;
	for (; p < l.end && (*p == ' ' || *p == '\t' || *p == '\f'); p++)
		col = *p == '\t' ? (col / 8 + 1) * 8 : *p == ' ' ? col + 1 : 0;
	*body = p;
	if (p == l.end || *p == '#' || *p == '\r')
		return -1;
	return col;
}

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || (unsigned char)c >= 0x80;
}

/* The name a `def`, `async def` or `class` line opens: *kind 'd' or 'c',
 * the name in [*name, *name + return). 0 when the line opens neither. */
static size_t opens(const char *p, const char *end, char *kind, const char **name)
{
	static const struct {
		const char *word;
		char kind;
	} heads[] = { { "def", 'd' }, { "async def", 'd' }, { "class", 'c' } };
	for (size_t h = 0; h < sizeof(heads) / sizeof(heads[0]); h++) {
		size_t n = strlen(heads[h].word);
		if ((size_t)(end - p) <= n || memcmp(p, heads[h].word, n) ||
		    (p[n] != ' ' && p[n] != '\t'))
			continue;
		const char *q = p + n;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		const char *start = q;
		while (q < end && is_ident(*q))
			q++;
		if (q == start)
			return 0;
		*kind = heads[h].kind;
		*name = start;
		return (size_t)(q - start);
	}
	return 0;
}

int pysource_qualname(const char *text, size_t len, int firstlineno, const char *name,
		      struct strbuf *out)
{
	struct src_line l;
	size_t name_len = strlen(name);
	if (!text || !name_len || name[0] == '<' || firstlineno < 1 ||
	    !line_at(text, len, firstlineno, &l))
		return -1;
	/* The def itself: after the decorators (a decorator's arguments may
	 * span lines). */
	int ind = -1;
	for (int k = 0; k < PYSOURCE_DECORATORS_MAX; k++) {
		const char *body, *found;
		char kind;
		int i = indent_of(l, &body);
		size_t n = i >= 0 ? opens(body, l.end, &kind, &found) : 0;
		if (n && kind == 'd' && n == name_len && !memcmp(found, name, n)) {
			ind = i;
			break;
		}
		if (n || l.end >= text + len)
			return -1; /* another def or class first, or the text ends */
		l = (struct src_line){ l.end + 1, NULL };
		const char *nl = memchr(l.start, '\n', (size_t)(text + len - l.start));
		l.end = nl ? nl : text + len;
	}
	if (ind < 0)
		return -1;
	/* The blocks around it, innermost first, kept as "X." and "f.<locals>.". */
	struct strbuf prefix = STRBUF_INIT, part = STRBUF_INIT;
	while (ind > 0 && line_before(text, l, &l)) {
		const char *body, *found;
		char kind;
		int i = indent_of(l, &body);
		if (i < 0 || i >= ind)
			continue;
		ind = i;
		size_t n = opens(body, l.end, &kind, &found);
		if (!n)
			continue; /* if, for, with, try: no name */
		strbuf_reset(&part);
		strbuf_add(&part, found, n);
		strbuf_addstr(&part, kind == 'c' ? "." : ".<locals>.");
		strbuf_addstr(&part, strbuf_str(&prefix));
		strbuf_reset(&prefix);
		strbuf_addstr(&prefix, strbuf_str(&part));
	}
	strbuf_addstr(out, strbuf_str(&prefix));
	strbuf_addstr(out, name);
	strbuf_release(&prefix);
	strbuf_release(&part);
	return 0;
}

int pysource_read(pid_t pid, const char *file, struct strbuf *out)
{
	char path[4096];
	if (!file || !*file || file[0] == '<')
		return -ENOENT;
	int n = file[0] == '/' ? snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, file)
			       : snprintf(path, sizeof(path), "/proc/%d/cwd/%s", (int)pid, file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	int fd = file_open_regular(path, 0);
	if (fd < 0)
		return fd;
	ssize_t got = file_read_fd_strbuf(fd, out, PYSOURCE_FILE_MAX + 1);
	close(fd);
	if (got < 0)
		return (int)got;
	if ((size_t)got > PYSOURCE_FILE_MAX)
		return -EFBIG;
	return 0;
}
