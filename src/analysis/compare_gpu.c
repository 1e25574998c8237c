/* compare_gpu: kernels and copies of two sides, matched by demangled name
 * (see compare_gpu.h). */
#include "compare_gpu.h"
#include "../record/reader.h"
#include "../util/demangle.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The entry of the kernel named plain, added when new. */
static struct compare_kernel *kernel_of(struct compare_gpu *g, struct hashmap *index,
					const struct strbuf *plain)
{
	int64_t *at = hashmap_get(index, plain->buf, plain->len);
	if (at)
		return &g->v[*at];
	hashmap_put(index, plain->buf, plain->len, (int64_t)g->n);
	g->v = xrealloc(g->v, (g->n + 1) * sizeof(*g->v));
	g->v[g->n] = (struct compare_kernel){.name = xstrdup(plain->buf)};
	return &g->v[g->n++];
}

/* Adds one recording's kernels to side r, each weighted by 1 / runs. */
static void kernels_add(struct compare_gpu *g, struct hashmap *index, sqlite3 *db, int r,
			double weight)
{
	sqlite3_stmt *st;
	if (!recording_has_table(db, "gpu_kernels") ||
	    sqlite3_prepare_v2(db,
			       "SELECT name, COUNT(*), SUM(end_ns - start_ns) FROM gpu_kernels"
			       " WHERE end_ns >= start_ns GROUP BY name",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	struct strbuf plain = STRBUF_INIT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		double count = (double)sqlite3_column_int64(st, 1),
		       total_s = (double)sqlite3_column_int64(st, 2) / 1e9;
		strbuf_reset(&plain);
		if (!name || demangle_name(name, &plain))
			strbuf_addstr(&plain, name ? name : "?");
		struct compare_kernel *k = kernel_of(g, index, &plain);
		k->count[r] += count * weight;
		k->total_s[r] += total_s * weight;
		g->kernels[r] += count * weight;
		g->kernel_s[r] += total_s * weight;
		g->present[r] = 1;
	}
	strbuf_release(&plain);
	sqlite3_finalize(st);
}

static void copies_add(struct compare_gpu *g, sqlite3 *db, int r, double weight)
{
	sqlite3_stmt *st;
	if (!recording_has_table(db, "gpu_copies") ||
	    sqlite3_prepare_v2(db,
			       "SELECT COUNT(*), TOTAL(end_ns - start_ns) FROM gpu_copies"
			       " WHERE end_ns >= start_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(st) == SQLITE_ROW) {
		g->copies[r] += (double)sqlite3_column_int64(st, 0) * weight;
		g->copy_s[r] += sqlite3_column_double(st, 1) / 1e9 * weight;
	}
	sqlite3_finalize(st);
}

static int kernel_cmp(const void *pa, const void *pb)
{
	const struct compare_kernel *a = pa, *b = pb;
	double da = fabs(a->total_s[1] - a->total_s[0]), db = fabs(b->total_s[1] - b->total_s[0]);
	if (da != db)
		return da > db ? -1 : 1;
	return strcmp(a->name, b->name);
}

void compare_gpu_build(sqlite3 *const *const dbs[2], const size_t n[2], struct compare_gpu *g)
{
	struct hashmap index = HASHMAP_INIT;
	*g = (struct compare_gpu)COMPARE_GPU_INIT;
	for (int r = 0; r < 2; r++)
		for (size_t k = 0; k < n[r]; k++) {
			kernels_add(g, &index, dbs[r][k], r, 1.0 / (double)n[r]);
			copies_add(g, dbs[r][k], r, 1.0 / (double)n[r]);
		}
	if (g->n)
		qsort(g->v, g->n, sizeof(*g->v), kernel_cmp);
	hashmap_release(&index);
}

void compare_gpu_release(struct compare_gpu *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].name);
	free(g->v);
	*g = (struct compare_gpu)COMPARE_GPU_INIT;
}
