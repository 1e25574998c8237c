/* folded renderer: stacks.folded, the collapsed-stack format of flamegraph.pl
 * and most flame graph tools: one line per distinct stack,
 * `outer;...;leaf COUNT`, outermost frame first, lines sorted. Reads the
 * on-CPU samples ("mixed", else "cpu", else "python"). */
#include "render.h"
#include "stackview.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <stdlib.h>
#include <string.h>

/* One frame's name: a `;` would split the frame, so it becomes `:`; control
 * characters (a line break would split the line, ESC would reach whoever
 * cats the file) are escaped as \xNN; kernel and inlined frames get the
 * usual suffix. */
void folded_frame_name(struct strbuf *sb, const struct stack_func *f)
{
	size_t from = sb->len;
	utf8_escape(f->function, strlen(f->function), 0, sb);
	for (size_t i = from; i < sb->len; i++)
		if (sb->buf[i] == ';')
			sb->buf[i] = ':';
	if (f->kind && !strcmp(f->kind, "kernel"))
		strbuf_addstr(sb, "_[k]");
	else if (f->kind && !strcmp(f->kind, "inlined"))
		strbuf_addstr(sb, "_[i]");
}

struct folded_line {
	char *stack;
	int64_t count;
};

struct folded {
	const struct stack_set *ss;
	const struct stack_tree *t;
	struct strbuf path;
	struct folded_line *v;
	size_t n, alloc;
};

/* Depth first over the call tree: one line per node where stacks end. */
static void folded_walk(struct folded *fo, size_t i)
{
	const struct stack_tree_node *nd = &fo->t->v[i];
	size_t mark = fo->path.len;
	if (i) {
		if (nd->depth > 1)
			strbuf_addch(&fo->path, ';');
		folded_frame_name(&fo->path, &fo->ss->funcs[nd->func]);
		if (nd->self > 0) {
			if (fo->n == fo->alloc) {
				fo->alloc = fo->alloc ? 2 * fo->alloc : 64;
				fo->v = xrealloc(fo->v, fo->alloc * sizeof(*fo->v));
			}
			fo->v[fo->n++] = (struct folded_line){ xstrdup(fo->path.buf), nd->self };
		}
	}
	for (size_t c = nd->first_child; c; c = fo->t->v[c - 1].next_sibling)
		folded_walk(fo, c - 1);
	fo->path.len = mark;
	fo->path.buf[mark] = '\0';
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack,
		      ((const struct folded_line *)b)->stack);
}

int folded_write(const struct stack_set *ss, int by_weight, FILE *out)
{
	struct stack_tree t = STACK_TREE_INIT;
	stack_tree_build(ss, by_weight, &t);
	struct folded fo = { .ss = ss, .t = &t, .path = STRBUF_INIT };
	strbuf_grow(&fo.path, 256);
	folded_walk(&fo, 0);
	/* Functions that differ only by file fold to the same text: merge them. */
	if (fo.n)
		qsort(fo.v, fo.n, sizeof(*fo.v), line_cmp);
	for (size_t i = 0; i < fo.n; i++) {
		int64_t count = fo.v[i].count;
		while (i + 1 < fo.n && !strcmp(fo.v[i].stack, fo.v[i + 1].stack)) {
			free(fo.v[i].stack);
			count += fo.v[++i].count;
		}
		fprintf(out, "%s %lld\n", fo.v[i].stack, (long long)count);
		free(fo.v[i].stack);
	}
	int rc = fo.n ? 0 : 1;
	free(fo.v);
	strbuf_release(&fo.path);
	stack_tree_release(&t);
	return rc;
}

static int folded_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct stack_set ss;
	if (stack_set_load_mode(ctx->db, stack_mode_of(ctx->db), &ss, NULL, err) < 0)
		return -1;
	int rc = ss.total_samples ? folded_write(&ss, 0, out) : 1;
	stack_set_release(&ss);
	return rc;
}

const struct renderer render_folded = { .name = "folded",
					.file = "stacks.folded",
					.render = folded_render };

const struct exporter export_folded = {
	.name = "folded",
	.description = "folded stacks (flamegraph.pl, speedscope, inferno): one line a call path",
	.renderer = &render_folded,
};
