/* folded renderer: stacks.folded, the collapsed-stack format of flamegraph.pl
 * and most flame graph tools: one line per distinct stack,
 * `outer;...;leaf COUNT`, outermost frame first, lines sorted. Reads the
 * on-CPU samples ("cpu", else "python"). */
#include "render.h"
#include "stackview.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* One frame's name: a `;` would split the frame and a line break the line,
 * so both become harmless; kernel and inlined frames get the usual suffix. */
void folded_frame_name(struct strbuf *sb, const struct stack_frame_rec *f)
{
	for (const char *s = f->function; *s; s++) {
		if (*s == ';')
			strbuf_addch(sb, ':');
		else if (*s == '\n' || *s == '\r' || *s == '\t')
			strbuf_addch(sb, ' ');
		else
			strbuf_addch(sb, *s);
	}
	if (f->kind && !strcmp(f->kind, "kernel"))
		strbuf_addstr(sb, "_[k]");
	else if (f->kind && !strcmp(f->kind, "inlined"))
		strbuf_addstr(sb, "_[i]");
}

struct folded_line {
	char *stack;
	int64_t count;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack, ((const struct folded_line *)b)->stack);
}

int folded_write(const struct stack_set *ss, int by_weight, FILE *out)
{
	struct folded_line *lines = xcalloc(ss->nleaves ? ss->nleaves : 1, sizeof(*lines));
	size_t *path = xmalloc(STACK_DEPTH_MAX * sizeof(*path)), n = 0;
	struct strbuf sb = STRBUF_INIT;
	for (size_t l = 0; l < ss->nleaves; l++) {
		size_t depth = stack_set_path(ss, ss->leaves[l].node, path, STACK_DEPTH_MAX);
		if (!depth)
			continue;
		strbuf_reset(&sb);
		for (size_t k = 0; k < depth; k++) {
			if (k)
				strbuf_addch(&sb, ';');
			folded_frame_name(&sb, &ss->frames[path[k]]);
		}
		lines[n].stack = xstrdup(sb.buf);
		lines[n++].count = by_weight ? ss->leaves[l].weight : ss->leaves[l].samples;
	}
	/* Frames that differ only by line fold to the same text: merge them. */
	qsort(lines, n, sizeof(*lines), line_cmp);
	for (size_t i = 0; i < n; i++) {
		int64_t count = lines[i].count;
		while (i + 1 < n && !strcmp(lines[i].stack, lines[i + 1].stack)) {
			free(lines[i].stack);
			count += lines[++i].count;
		}
		fprintf(out, "%s %lld\n", lines[i].stack, (long long)count);
		free(lines[i].stack);
	}
	free(lines);
	free(path);
	strbuf_release(&sb);
	return n ? 0 : 1;
}

static int folded_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct stack_set ss;
	if (stackview_load_on_cpu(ctx->db, &ss, NULL, err) < 0)
		return -1;
	int rc = ss.total_samples ? folded_write(&ss, 0, out) : 1;
	stack_set_release(&ss);
	return rc;
}

const struct renderer render_folded = { .name = "folded", .file = "stacks.folded",
					.render = folded_render };
