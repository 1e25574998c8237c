/* alloc_python: Python call sites for allocations, from the python probe's samples. */
#include "alloc_python.h"
#include "../record/stacks.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

void alloc_pyticks_init(struct alloc_pyticks *pt, int64_t max_gap_ns)
{
	memset(pt, 0, sizeof(*pt));
	pt->max_gap_ns = max_gap_ns;
	pt->by_tid = (struct hashmap)HASHMAP_INIT;
	pt->merged = (struct hashmap)HASHMAP_INIT;
	pt->frame_fn = (struct hashmap)HASHMAP_INIT;
}

void alloc_pyticks_release(struct alloc_pyticks *pt)
{
	for (size_t i = 0; i < pt->nthreads; i++) {
		free(pt->threads[i].t_ns);
		free(pt->threads[i].node);
	}
	free(pt->threads);
	hashmap_release(&pt->by_tid);
	hashmap_release(&pt->merged);
	hashmap_release(&pt->frame_fn);
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

/* The thread's samples, and in *lo the index of its first sample at or after
 * t_ns; NULL when the thread has none. */
static const struct alloc_pyticks_thread *thread_from(const struct alloc_pyticks *pt,
						      uint32_t tid, int64_t t_ns, size_t *lo)
{
	if (!pt->nthreads)
		return NULL;
	int64_t *idx = hashmap_get(&pt->by_tid, &tid, sizeof(tid));
	if (!idx)
		return NULL;
	const struct alloc_pyticks_thread *th = &pt->threads[*idx];
	size_t l = 0, hi = th->n;
	while (l < hi) {
		size_t mid = l + (hi - l) / 2;
		if (th->t_ns[mid] < t_ns)
			l = mid + 1;
		else
			hi = mid;
	}
	*lo = l;
	return th;
}

int64_t alloc_pyticks_nearest(struct alloc_pyticks *pt, uint32_t tid, int64_t t_ns)
{
	size_t lo;
	const struct alloc_pyticks_thread *th = thread_from(pt, tid, t_ns, &lo);
	if (!th)
		return 0;
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

#define PY_MERGE_DEPTH 128

static int64_t frame_fn(struct alloc_pyticks *pt, sqlite3 *db, int64_t fid)
{
	int64_t *v = hashmap_get(&pt->frame_fn, &fid, sizeof(fid));
	if (v)
		return *v;
	sqlite3_stmt *st;
	int64_t h = fid; /* unreadable: only equal to itself */
	if (sqlite3_prepare_v2(db, "SELECT function, file FROM frames WHERE id = ?", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, fid);
		if (sqlite3_step(st) == SQLITE_ROW) {
			struct strbuf sb = STRBUF_INIT;
			const unsigned char *fn = sqlite3_column_text(st, 0);
			const unsigned char *file = sqlite3_column_text(st, 1);
			strbuf_addf(&sb, "%s%c%s", fn ? (const char *)fn : "", 0,
				    file ? (const char *)file : "");
			h = (int64_t)(hash_bytes(sb.buf, sb.len) >> 1) | (1LL << 62);
			strbuf_release(&sb);
		}
		sqlite3_finalize(st);
	}
	hashmap_put(&pt->frame_fn, &fid, sizeof(fid), h);
	return h;
}

static int64_t merge(struct alloc_pyticks *pt, sqlite3 *db, struct stack_writer *sw,
		     int64_t near, int64_t far)
{
	int64_t key[2] = { near, far };
	int64_t *v = hashmap_get(&pt->merged, key, sizeof(key));
	if (v)
		return *v;
	int64_t a[PY_MERGE_DEPTH], b[PY_MERGE_DEPTH];
	size_t na = alloc_python_path(db, near, a, PY_MERGE_DEPTH);
	size_t nb = alloc_python_path(db, far, b, PY_MERGE_DEPTH);
	size_t c = 0;
	while (c < na && c < nb && (a[c] == b[c] || frame_fn(pt, db, a[c]) == frame_fn(pt, db, b[c])))
		c++;
	int64_t node = c && sw ? stack_intern(sw, a, c) : 0;
	hashmap_put(&pt->merged, key, sizeof(key), node);
	return node;
}

int64_t alloc_pyticks_attribute(struct alloc_pyticks *pt, sqlite3 *db, struct stack_writer *sw,
				uint32_t tid, int64_t t_ns)
{
	size_t lo;
	const struct alloc_pyticks_thread *th = thread_from(pt, tid, t_ns, &lo);
	if (!th)
		return 0;
	int64_t before = 0, after = 0, gap_b = 0, gap_a = 0;
	if (lo > 0 && t_ns - th->t_ns[lo - 1] <= pt->max_gap_ns) {
		before = th->node[lo - 1];
		gap_b = t_ns - th->t_ns[lo - 1];
	}
	if (lo < th->n && th->t_ns[lo] - t_ns <= pt->max_gap_ns) {
		after = th->node[lo];
		gap_a = th->t_ns[lo] - t_ns;
	}
	int64_t node;
	if (!before || !after || before == after)
		node = before ? before : after;
	else if (gap_b <= gap_a)
		node = db ? merge(pt, db, sw, before, after) : before;
	else
		node = db ? merge(pt, db, sw, after, before) : after;
	if (node)
		pt->matched++;
	else
		pt->unmatched++;
	return node;
}
