/* torch_model: torch operators and OpenMP frames by name, and the scans of a
 * Python source the PyTorch findings use. */
#include "torch_model.h"
#include "frames.h"
#include "../util/strbuf.h"
#include "../util/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int torch_op_name(const char *function, struct strbuf *out)
{
	static const char ops[] = "at::_ops::", grad[] = "torch::autograd::generated::";
	if (!function)
		return 0;
	if (!strncmp(function, ops, sizeof(ops) - 1)) {
		const char *name = function + sizeof(ops) - 1, *end = strstr(name, "::");
		if (!end || end == name ||
		    (strncmp(end, "::call(", 7) && strncmp(end, "::redispatch(", 13)))
			return 0;
		strbuf_addstr(out, "aten::");
		strbuf_add(out, name, (size_t)(end - name));
		return 1;
	}
	if (!strncmp(function, grad, sizeof(grad) - 1)) {
		const char *name = function + sizeof(grad) - 1, *end = strstr(name, "::apply(");
		if (!end || end == name || memchr(name, ':', (size_t)(end - name)))
			return 0;
		strbuf_add(out, name, (size_t)(end - name));
		return 1;
	}
	return 0;
}

int torch_module_is_openmp(const char *module)
{
	if (!module)
		return 0;
	const char *b = path_base(module);
	return !strncmp(b, "libgomp", 7) || !strncmp(b, "libomp.", 7) || !strncmp(b, "libiomp", 7);
}

int torch_module_is_torch(const char *module)
{
	if (!module)
		return 0;
	const char *b = path_base(module);
	return !strncmp(b, "libtorch", 8) || !strncmp(b, "libc10", 6);
}

int torch_file_is_own(const char *file)
{
	return frame_python_is_own(file);
}

/* One line of the text: [s, s + n), its indentation, and whether it holds
 * code (not blank, not only a comment). */
struct src_line {
	const char *s;
	size_t n;
	size_t indent;
	int code;
};

/* The text's lines, split once (v[0] is line 1). */
struct src_lines {
	struct src_line *v;
	size_t n;
};

static void lines_split(const char *text, size_t len, struct src_lines *ls)
{
	size_t alloc = 0;
	ls->v = NULL;
	ls->n = 0;
	for (const char *p = text, *end = text + len; text && p <= end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		if (ls->n == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			ls->v = xrealloc(ls->v, alloc * sizeof(*ls->v));
		}
		struct src_line *l = &ls->v[ls->n++];
		l->s = p;
		l->n = (size_t)(e - p);
		l->indent = 0;
		while (l->indent < l->n && (p[l->indent] == ' ' || p[l->indent] == '\t'))
			l->indent++;
		l->code = l->indent < l->n && p[l->indent] != '#' && p[l->indent] != '\r';
		if (!nl)
			break;
		p = nl + 1;
	}
}

/* Line number `line` (from 1), NULL past the end. */
static const struct src_line *line_at(const struct src_lines *ls, int line)
{
	return line >= 1 && (size_t)line <= ls->n ? &ls->v[line - 1] : NULL;
}

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Skips spaces in [*p, end). */
static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* Matches the literal word at *p, advancing past it. */
static int eat(const char **p, const char *end, const char *word)
{
	size_t k = strlen(word);
	if ((size_t)(end - *p) < k || memcmp(*p, word, k))
		return 0;
	*p += k;
	return 1;
}

/* An identifier (dots allowed when dotted) into out (cap bytes with NUL). */
static int eat_name(const char **p, const char *end, int dotted, char *out, size_t cap)
{
	const char *s = *p;
	while (*p < end && (ident_char(**p) || (dotted && **p == '.')))
		(*p)++;
	size_t n = (size_t)(*p - s);
	if (!n || n >= cap || (*s >= '0' && *s <= '9'))
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return 1;
}

/* "for V in range(X.shape[0]):" and its kin; fills loop->var and tensor. */
static int row_loop_header(const struct src_line *l, struct torch_row_loop *loop)
{
	const char *p = l->s + l->indent, *end = l->s + l->n;
	if (!eat(&p, end, "for "))
		return 0;
	skip_spaces(&p, end);
	if (!eat_name(&p, end, 0, loop->var, sizeof(loop->var)))
		return 0;
	skip_spaces(&p, end);
	if (!eat(&p, end, "in "))
		return 0;
	skip_spaces(&p, end);
	if (!eat(&p, end, "range("))
		return 0;
	skip_spaces(&p, end);
	if (eat(&p, end, "len(")) {
		skip_spaces(&p, end);
		if (!eat_name(&p, end, 1, loop->tensor, sizeof(loop->tensor)))
			return 0;
		skip_spaces(&p, end);
		return eat(&p, end, ")");
	}
	if (!eat_name(&p, end, 1, loop->tensor, sizeof(loop->tensor)))
		return 0;
	/* eat_name took ".shape" or ".size" along: split it off */
	char *dot = strrchr(loop->tensor, '.');
	if (!dot)
		return 0;
	int ok = (!strcmp(dot, ".shape") && eat(&p, end, "[0]")) ||
		 (!strcmp(dot, ".size") && eat(&p, end, "(0)"));
	*dot = '\0';
	return ok && loop->tensor[0];
}

/* 1 when [s, s + n) holds X[V] (or X[V, / X[V:). */
static int indexes(const char *s, size_t n, const struct torch_row_loop *loop)
{
	char pat[136];
	int k = snprintf(pat, sizeof(pat), "%s[%s", loop->tensor, loop->var);
	if (k <= 0 || (size_t)k >= sizeof(pat))
		return 0;
	for (size_t i = 0; i + (size_t)k < n; i++) {
		if (memcmp(s + i, pat, (size_t)k) ||
		    (i && (ident_char(s[i - 1]) || s[i - 1] == '.')))
			continue;
		char c = s[i + (size_t)k];
		if (c == ']' || c == ',' || c == ':')
			return 1;
	}
	return 0;
}

int torch_row_loop_at(const char *text, size_t len, int line, struct torch_row_loop *loop)
{
	struct src_lines ls;
	lines_split(text, len, &ls);
	const struct src_line *l = line_at(&ls, line), *h, *b;
	int found = 0;
	size_t indent = l && l->code ? l->indent : 0;
	for (int k = line - 1; k >= 1 && indent > 0 && !found; k--) {
		h = line_at(&ls, k);
		if (!h->code || h->indent >= indent)
			continue;
		indent = h->indent;
		struct torch_row_loop cand = { .line = k };
		if (!row_loop_header(h, &cand))
			continue;
		/* the body: the lines after the header indented deeper */
		for (int j = k + 1; (b = line_at(&ls, j)) != NULL; j++) {
			if (b->code && b->indent <= h->indent)
				break;
			if (b->code && indexes(b->s, b->n, &cand)) {
				*loop = cand;
				found = 1;
				break;
			}
		}
	}
	free(ls.v);
	return found;
}

int torch_set_threads_find(const char *text, size_t len, int from, int *line, char arg[64])
{
	static const char call[] = "set_num_threads(";
	struct src_lines ls;
	int found = 0;
	lines_split(text, len, &ls);
	int in_doc = 0; /* inside a triple-quoted string */
	for (int k = 1; !found && k <= (int)ls.n; k++) {
		const struct src_line l = ls.v[k - 1];
		for (size_t i = l.indent; !found && i < l.n; i++) {
			if (i + 3 <= l.n &&
			    (!memcmp(l.s + i, "\"\"\"", 3) || !memcmp(l.s + i, "'''", 3))) {
				in_doc = !in_doc;
				i += 2;
				continue;
			}
			if (in_doc || k < from)
				continue;
			if (l.s[i] == '#')
				break;
			if (i + sizeof(call) - 1 > l.n)
				break;
			if (memcmp(l.s + i, call, sizeof(call) - 1) ||
			    (i && ident_char(l.s[i - 1])))
				continue;
			const char *a = l.s + i + sizeof(call) - 1, *end = l.s + l.n;
			size_t n = 0;
			int depth = 0;
			while (a + n < end && (depth || a[n] != ')') && n < 63) {
				depth += a[n] == '(';
				depth -= a[n] == ')';
				n++;
			}
			memcpy(arg, a, n);
			arg[n] = '\0';
			*line = k;
			found = 1;
			break;
		}
	}
	free(ls.v);
	return found;
}

int torch_enclosing_def(const char *text, size_t len, int line, struct strbuf *out)
{
	struct src_lines ls;
	lines_split(text, len, &ls);
	const struct src_line *l = line_at(&ls, line);
	size_t indent = !l ? 0 : l->code ? l->indent : (size_t)-1;
	int found = 0;
	for (int k = line - 1; k >= 1 && indent > 0 && !found; k--) {
		const struct src_line *h = line_at(&ls, k);
		if (!h->code || h->indent >= indent)
			continue;
		indent = h->indent;
		const char *p = h->s + h->indent, *end = h->s + h->n;
		char name[128];
		eat(&p, end, "async ");
		if (!eat(&p, end, "def "))
			continue;
		skip_spaces(&p, end);
		if (eat_name(&p, end, 0, name, sizeof(name))) {
			strbuf_addstr(out, name);
			found = 1;
		}
	}
	free(ls.v);
	return found;
}
