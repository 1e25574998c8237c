/* findings: storage, ranking and JSON form of findings. */
#include "findings.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <stdlib.h>
#include <string.h>

static const char *dup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

void findings_add(struct findings *fs, const struct finding *f)
{
	if (fs->n == fs->alloc) {
		fs->alloc = fs->alloc ? fs->alloc * 2 : 8;
		fs->v = xrealloc(fs->v, fs->alloc * sizeof(*fs->v));
	}
	struct finding *d = &fs->v[fs->n++];
	*d = *f;
	d->title = dup_or_empty(f->title);
	d->dimension = dup_or_empty(f->dimension);
	d->location = dup_or_empty(f->location);
	d->evidence = dup_or_empty(f->evidence);
	d->diagnosis = dup_or_empty(f->diagnosis);
	d->next_step = dup_or_empty(f->next_step);
	d->validation = dup_or_empty(f->validation);
}

static void finding_release(struct finding *f)
{
	free((char *)f->title);
	free((char *)f->dimension);
	free((char *)f->location);
	free((char *)f->evidence);
	free((char *)f->diagnosis);
	free((char *)f->next_step);
	free((char *)f->validation);
}

void findings_release(struct findings *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		finding_release(&fs->v[i]);
	free(fs->v);
	memset(fs, 0, sizeof(*fs));
}

static int by_impact(const void *a, const void *b)
{
	const struct finding *x = a, *y = b;
	if (x->impact_pct != y->impact_pct)
		return x->impact_pct < y->impact_pct ? 1 : -1;
	return strcmp(x->title, y->title);
}

void findings_rank(struct findings *fs, size_t keep)
{
	if (fs->n > 1)
		qsort(fs->v, fs->n, sizeof(*fs->v), by_impact);
	while (fs->n > keep)
		finding_release(&fs->v[--fs->n]);
}

/* Findings quote outside text (a command line, say): invalid UTF-8 would make
 * jansson refuse the string, and with it the whole finding. */
static json_t *text_json(const char *s)
{
	size_t n = strlen(s);
	if (utf8_valid(s, n))
		return json_stringn(s, n);
	struct strbuf sb = STRBUF_INIT;
	utf8_sanitize(s, n, &sb);
	json_t *j = json_stringn(strbuf_str(&sb), sb.len);
	strbuf_release(&sb);
	return j;
}

json_t *findings_to_json(const struct findings *fs)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < fs->n; i++) {
		const struct finding *f = &fs->v[i];
		json_t *impact = json_object();
		if (f->impact_s >= 0)
			json_object_set_new(impact, "seconds", json_real(f->impact_s));
		if (f->impact_bytes >= 0) /* past 2^63 only from a damaged recording */
			json_object_set_new(impact, "bytes",
					    f->impact_bytes < 0x1p63
						? json_integer((json_int_t)f->impact_bytes)
						: json_real(f->impact_bytes));
		json_object_set_new(impact, "share_pct", json_real(f->impact_pct));
		json_t *o = json_object();
		json_object_set_new(o, "rank", json_integer((json_int_t)i + 1));
		json_object_set_new(o, "title", text_json(f->title));
		json_object_set_new(o, "dimension", text_json(f->dimension));
		json_object_set_new(o, "location", text_json(f->location));
		json_object_set_new(o, "evidence", text_json(f->evidence));
		json_object_set_new(o, "diagnosis", text_json(f->diagnosis));
		json_object_set_new(o, "next_step", text_json(f->next_step));
		json_object_set_new(o, "validation", text_json(f->validation));
		json_object_set_new(o, "impact", impact);
		json_array_append_new(arr, o);
	}
	return arr;
}
