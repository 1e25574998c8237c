/* alloc_python: Python call sites for allocations, from the python probe's samples. */
#include "alloc_python.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

void alloc_pyticks_init(struct alloc_pyticks *pt, int64_t max_gap_ns)
{
	memset(pt, 0, sizeof(*pt));
	pt->max_gap_ns = max_gap_ns;
	pt->by_tid = (struct hashmap)HASHMAP_INIT;
}

void alloc_pyticks_release(struct alloc_pyticks *pt)
{
	for (size_t i = 0; i < pt->nthreads; i++) {
		free(pt->threads[i].t_ns);
		free(pt->threads[i].node);
	}
	free(pt->threads);
	hashmap_release(&pt->by_tid);
	memset(pt, 0, sizeof(*pt));
}

void alloc_pyticks_add(struct alloc_pyticks *pt, uint32_t tid, int64_t t_ns, int64_t node)
{
	if (node <= 0)
		return;
	int64_t *idx = hashmap_get(&pt->by_tid, &tid, sizeof(tid));
	if (!idx) {
		if (pt->nthreads == pt->athreads) {
			pt->athreads = pt->athreads ? pt->athreads * 2 : 8;
			pt->threads = xrealloc(pt->threads, pt->athreads * sizeof(*pt->threads));
		}
		memset(&pt->threads[pt->nthreads], 0, sizeof(*pt->threads));
		idx = hashmap_put(&pt->by_tid, &tid, sizeof(tid), (int64_t)pt->nthreads++);
	}
	struct alloc_pyticks_thread *th = &pt->threads[*idx];
	if (th->n == th->alloc) {
		th->alloc = th->alloc ? th->alloc * 2 : 256;
		th->t_ns = xrealloc(th->t_ns, th->alloc * sizeof(*th->t_ns));
		th->node = xrealloc(th->node, th->alloc * sizeof(*th->node));
	}
	/* Samples of one thread come in time order; keep it sorted if not. */
	size_t k = th->n++;
	while (k > 0 && th->t_ns[k - 1] > t_ns) {
		th->t_ns[k] = th->t_ns[k - 1];
		th->node[k] = th->node[k - 1];
		k--;
	}
	th->t_ns[k] = t_ns;
	th->node[k] = node;
}

void alloc_pyticks_load(struct alloc_pyticks *pt, sqlite3 *db)
{
	sqlite3_stmt *st;
	if (!db || sqlite3_prepare_v2(db,
				      "SELECT rowid, t_ns, tid, node FROM samples WHERE rowid > ?"
				      " AND source = 'python' ORDER BY rowid",
				      -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, pt->last_rowid);
	while (sqlite3_step(st) == SQLITE_ROW) {
		pt->last_rowid = sqlite3_column_int64(st, 0);
		int64_t tid = sqlite3_column_int64(st, 2);
		if (tid > 0 && tid <= UINT32_MAX)
			alloc_pyticks_add(pt, (uint32_t)tid, sqlite3_column_int64(st, 1),
					  sqlite3_column_int64(st, 3));
	}
	sqlite3_finalize(st);
}

int64_t alloc_pyticks_nearest(struct alloc_pyticks *pt, uint32_t tid, int64_t t_ns)
{
	if (!pt->nthreads)
		return 0;
	int64_t *idx = hashmap_get(&pt->by_tid, &tid, sizeof(tid));
	if (!idx)
		return 0;
	const struct alloc_pyticks_thread *th = &pt->threads[*idx];
	/* First sample at or after t_ns. */
	size_t lo = 0, hi = th->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (th->t_ns[mid] < t_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t best = 0, best_gap = pt->max_gap_ns + 1;
	for (size_t k = lo > 0 ? lo - 1 : 0; k <= lo && k < th->n; k++) {
		int64_t gap = th->t_ns[k] > t_ns ? th->t_ns[k] - t_ns : t_ns - th->t_ns[k];
		if (gap < best_gap) {
			best_gap = gap;
			best = th->node[k];
		}
	}
	if (best)
		pt->matched++;
	else
		pt->unmatched++;
	return best;
}

size_t alloc_python_path(sqlite3 *db, int64_t py_node, int64_t *out, size_t cap)
{
	sqlite3_stmt *st;
	size_t n = 0;
	if (!db || sqlite3_prepare_v2(db, "SELECT parent, frame FROM stack_nodes WHERE id = ?", -1,
				      &st, NULL) != SQLITE_OK)
		return 0;
	for (int64_t id = py_node; id > 0 && n < cap;) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		id = sqlite3_column_int64(st, 0);
		out[n++] = sqlite3_column_int64(st, 1);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < n / 2; i++) {
		int64_t t = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = t;
	}
	return n;
}
