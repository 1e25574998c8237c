/* phase_table: pairs start and end markers into phases. */
#include "phase_table.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

static struct phase *phase_new(struct phase_table *t, const char *name, int64_t start_ns,
			       int64_t line_id)
{
	if (t->n >= PHASE_TABLE_MAX) {
		t->dropped++;
		return NULL;
	}
	if (t->n == t->alloc) {
		t->alloc = t->alloc ? 2 * t->alloc : 32;
		t->v = xrealloc(t->v, t->alloc * sizeof(*t->v));
	}
	struct phase *p = &t->v[t->n++];
	*p = (struct phase){ .start_ns = start_ns, .end_ns = start_ns, .logged_s = -1,
			     .open = 1, .parent = -1, .start_line = line_id, .end_line = -1 };
	memcpy(p->name, name, PHASE_NAME_MAX);
	p->name[PHASE_NAME_MAX - 1] = '\0';
	return p;
}

static void phase_close(struct phase *p, int64_t end_ns, enum phase_ended_by by,
			int64_t line_id)
{
	p->end_line = line_id;
	p->end_ns = end_ns > p->start_ns ? end_ns : p->start_ns;
	p->ended_by = by;
	p->open = 0;
}

/* The latest open phase of that name; a mark's too ("=== load ===" then
 * "load took 0.3s" is one phase). */
/* 1 when one name is the other's first words ("crawl" and "crawl of 400
 * sources": "Starting crawl of %d sources" ... "crawl done in 1.2s"). */
static int name_prefix(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	if (na > nb)
		return name_prefix(b, a);
	return na && !strncmp(a, b, na) && b[na] == ' ';
}

static struct phase *open_named(struct phase_table *t, const char *name)
{
	for (size_t i = t->n; i-- > 0;)
		if (t->v[i].open && !strcmp(t->v[i].name, name))
			return &t->v[i];
	for (size_t i = t->n; i-- > 0;)
		if (t->v[i].open && name_prefix(t->v[i].name, name))
			return &t->v[i];
	return NULL;
}

static struct phase *open_mark(struct phase_table *t)
{
	for (size_t i = t->n; i-- > 0;)
		if (t->v[i].open && t->v[i].mark)
			return &t->v[i];
	return NULL;
}

void phase_table_add(struct phase_table *t, int64_t t_ns, const struct phase_marker *m,
		     int64_t line_id)
{
	struct phase *p;
	switch (m->event) {
	case PHASE_START:
		phase_new(t, m->name, t_ns, line_id);
		break;
	case PHASE_END:
		p = open_named(t, m->name);
		if (p) {
			phase_close(p, t_ns, PHASE_ENDED_MARKER, line_id);
			p->logged_s = m->duration_s;
		} else if (m->duration_s >= 0) {
			int64_t start = t_ns - (int64_t)(m->duration_s * 1e9);
			p = phase_new(t, m->name, start > 0 ? start : 0, -1);
			if (p) {
				phase_close(p, t_ns, PHASE_ENDED_LOGGED, line_id);
				p->logged_s = m->duration_s;
			}
		} else {
			t->unmatched_ends++;
		}
		break;
	case PHASE_MARK:
		p = open_mark(t);
		if (p)
			phase_close(p, t_ns, PHASE_ENDED_NEXT_MARK, -1);
		p = phase_new(t, m->name, t_ns, line_id);
		if (p)
			p->mark = 1;
		break;
	case PHASE_NONE:
		break;
	}
}

int phase_table_add_span(struct phase_table *t, const char *name, int64_t start_ns, int64_t end_ns,
			 int64_t tid, enum phase_ended_by by)
{
	char copy[PHASE_NAME_MAX] = "";
	strncpy(copy, name, PHASE_NAME_MAX - 1);
	struct phase *p = phase_new(t, copy, start_ns > 0 ? start_ns : 0, -1);
	if (!p)
		return -1;
	phase_close(p, end_ns, by, -1);
	p->tid = tid;
	return 0;
}

/* Earlier start first; of two starting together, the longer (it encloses). */
static int phase_cmp(const void *a, const void *b)
{
	const struct phase *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns > y->end_ns ? -1 : 1;
	return 0;
}

void phase_table_finish(struct phase_table *t, int64_t end_ns)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].open)
			phase_close(&t->v[i], end_ns, PHASE_ENDED_RUN_END, -1);
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), phase_cmp);
	/* The enclosing phases of the current one, outermost first. */
	long *stack = xmalloc((t->n ? t->n : 1) * sizeof(*stack));
	size_t depth = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct phase *p = &t->v[i];
		while (depth && t->v[stack[depth - 1]].end_ns < p->end_ns)
			depth--;
		p->parent = depth ? stack[depth - 1] : -1;
		p->depth = (int)depth;
		stack[depth++] = (long)i;
	}
	free(stack);
}

void phase_table_release(struct phase_table *t)
{
	free(t->v);
	*t = (struct phase_table)PHASE_TABLE_INIT;
}

const char *phase_ended_by_name(enum phase_ended_by e)
{
	switch (e) {
	case PHASE_ENDED_MARKER: return "marker";
	case PHASE_ENDED_LOGGED: return "logged duration";
	case PHASE_ENDED_NEXT_MARK: return "next mark";
	case PHASE_ENDED_RUN_END: return "run end";
	}
	return "marker";
}
