/* findings: storage, ranking and JSON form of findings. */
#include "findings.h"
#include "../util/strbuf.h"

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

json_t *findings_to_json(const struct findings *fs)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < fs->n; i++) {
		const struct finding *f = &fs->v[i];
		json_t *impact = json_object();
		if (f->impact_s >= 0)
			json_object_set_new(impact, "seconds", json_real(f->impact_s));
		if (f->impact_bytes >= 0)
			json_object_set_new(impact, "bytes", json_integer((json_int_t)f->impact_bytes));
		json_object_set_new(impact, "share_pct", json_real(f->impact_pct));
		json_array_append_new(
			arr, json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "rank",
				       (int)i + 1, "title", f->title, "dimension", f->dimension,
				       "location", f->location, "evidence", f->evidence, "diagnosis",
				       f->diagnosis, "next_step", f->next_step, "validation",
				       f->validation, "impact", impact));
	}
	return arr;
}
