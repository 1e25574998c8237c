/* gpu_model: per-device busy time, window and idle gaps (gpu_model.h). */
#include "gpu_model.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

static const struct {
	const char *table;
	int what; /* 0 kernel, 1 copy, 2 memset */
} activity_tables[] = { { "gpu_kernels", 0 }, { "gpu_copies", 1 }, { "gpu_memsets", 2 } };

static void gap_push(struct gpu_gap **v, size_t *n, size_t *alloc, struct gpu_gap g)
{
	if (*n == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 64;
		*v = xrealloc(*v, *alloc * sizeof(**v));
	}
	(*v)[(*n)++] = g;
}

/* alloc[0]: of d->gaps, alloc[1]: of d->short_gaps. */
static void gap_add(struct gpu_device_time *d, int64_t from_ns, int64_t to_ns,
		    int64_t busy_before_ns, size_t alloc[2])
{
	struct gpu_gap g = { from_ns, to_ns, busy_before_ns };
	if (to_ns - from_ns >= GPU_GAP_MIN_NS) {
		gap_push(&d->gaps, &d->ngaps, &alloc[0], g);
		d->gaps_ns += to_ns - from_ns;
	} else if (to_ns - from_ns >= GPU_SHORT_GAP_MIN_NS && busy_before_ns < GPU_TINY_BUSY_NS) {
		gap_push(&d->short_gaps, &d->nshort, &alloc[1], g);
	}
}

static struct gpu_device_time *device_add(struct gpu_model *m, int64_t device, size_t *alloc)
{
	if (m->ndev == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 4;
		m->dev = xrealloc(m->dev, *alloc * sizeof(*m->dev));
	}
	struct gpu_device_time *d = &m->dev[m->ndev++];
	*d = (struct gpu_device_time){ .device = device,
				       .first_ns = INT64_MAX,
				       .last_ns = INT64_MIN };
	return d;
}

struct edge {
	int64_t t_ns;
	int delta; /* +1 starts, -1 ends */
	int copy;  /* 1 a copy, 0 a kernel */
};

struct edges {
	struct edge *v;
	size_t n, alloc;
};

static void edges_add(struct edges *e, int64_t s, int64_t end, int copy)
{
	if (e->n + 2 > e->alloc) {
		e->alloc = e->alloc ? 2 * e->alloc : 256;
		e->v = xrealloc(e->v, e->alloc * sizeof(*e->v));
	}
	e->v[e->n++] = (struct edge){ s, +1, copy };
	e->v[e->n++] = (struct edge){ end, -1, copy };
}

static int edge_cmp(const void *x, const void *y)
{
	const struct edge *a = x, *b = y;
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	return a->delta - b->delta; /* ends first: touching spans do not overlap */
}

/* The copies' union and its part with no kernel running, from the device's
 * kernel and copy edges (consumed: e->n is 0 after). */
static void exposure_count(struct gpu_device_time *d, struct edges *e)
{
	qsort(e->v, e->n, sizeof(*e->v), edge_cmp);
	int64_t kernels = 0, copies = 0, prev = 0;
	for (size_t i = 0; i < e->n; i++) {
		if (copies > 0) {
			d->copy_busy_ns += e->v[i].t_ns - prev;
			if (!kernels)
				d->copy_exposed_ns += e->v[i].t_ns - prev;
		}
		prev = e->v[i].t_ns;
		if (e->v[i].copy)
			copies += e->v[i].delta;
		else
			kernels += e->v[i].delta;
	}
	e->n = 0;
}

int gpu_model_load(sqlite3 *db, struct gpu_model *m)
{
	*m = (struct gpu_model){ 0 };
	struct strbuf sql = STRBUF_INIT;
	for (size_t i = 0; i < sizeof(activity_tables) / sizeof(activity_tables[0]); i++) {
		if (!recording_has_table(db, activity_tables[i].table))
			continue;
		strbuf_addf(&sql,
			    "%sSELECT device, start_ns, end_ns, %d FROM %s WHERE end_ns >= "
			    "start_ns",
			    sql.len ? " UNION ALL " : "", activity_tables[i].what,
			    activity_tables[i].table);
	}
	if (!sql.len) {
		strbuf_release(&sql);
		return -1;
	}
	strbuf_addstr(&sql, " ORDER BY 1, 2");
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL) == SQLITE_OK ? 0 : -1;
	strbuf_release(&sql);
	if (rc)
		return -1;
	struct gpu_device_time *d = NULL;
	struct edges edges = { 0 };
	size_t dev_alloc = 0, gap_alloc[2] = { 0, 0 };
	int64_t busy_from = 0, busy_to = 0; /* the busy stretch being merged */
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t device = sqlite3_column_int64(st, 0), s = sqlite3_column_int64(st, 1),
			e = sqlite3_column_int64(st, 2);
		int what = sqlite3_column_int(st, 3);
		if (!d || d->device != device) {
			if (d) {
				d->busy_ns += busy_to - busy_from;
				exposure_count(d, &edges);
			}
			d = device_add(m, device, &dev_alloc);
			gap_alloc[0] = gap_alloc[1] = 0;
			busy_from = s;
			busy_to = e;
		} else if (s > busy_to) {
			d->busy_ns += busy_to - busy_from;
			gap_add(d, busy_to, s, busy_to - busy_from, gap_alloc);
			busy_from = s;
			busy_to = e;
		} else if (e > busy_to) {
			busy_to = e;
		}
		if (s < d->first_ns)
			d->first_ns = s;
		if (e > d->last_ns)
			d->last_ns = e;
		if (what < 2)
			edges_add(&edges, s, e, what);
		if (what == 0) {
			d->kernels++;
			d->kernel_ns += e - s;
		} else if (what == 1) {
			d->copies++;
			d->copy_ns += e - s;
		} else {
			d->memsets++;
		}
	}
	if (d) {
		d->busy_ns += busy_to - busy_from;
		exposure_count(d, &edges);
	}
	free(edges.v);
	sqlite3_finalize(st);
	return 0;
}

void gpu_model_release(struct gpu_model *m)
{
	for (size_t i = 0; i < m->ndev; i++) {
		free(m->dev[i].gaps);
		free(m->dev[i].short_gaps);
	}
	free(m->dev);
	*m = (struct gpu_model){ 0 };
}

const struct gpu_device_time *gpu_model_idlest(const struct gpu_model *m)
{
	const struct gpu_device_time *best = NULL;
	for (size_t i = 0; i < m->ndev; i++)
		if (!best || m->dev[i].gaps_ns > best->gaps_ns)
			best = &m->dev[i];
	return best;
}

/* The device's memory as CUDA reported it (any process's record of it). */
static int64_t capacity_of(sqlite3 *db, int64_t device)
{
	sqlite3_stmt *st;
	int64_t bytes = 0;
	if (!recording_has_table(db, "gpu_devices") ||
	    sqlite3_prepare_v2(db, "SELECT MAX(mem_bytes) FROM gpu_devices WHERE device = ?", -1,
			       &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, device);
	if (sqlite3_step(st) == SQLITE_ROW)
		bytes = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return bytes > 0 ? bytes : 0;
}

int gpu_memory_load(sqlite3 *db, struct gpu_memory_use **v, size_t *n)
{
	sqlite3_stmt *st;
	*v = NULL;
	*n = 0;
	if (!(st = recording_prepare(db, "gpu_memory",
				     "SELECT device, op, bytes, pid FROM gpu_memory WHERE kind ="
				     " 'device' ORDER BY device, t_ns")))
		return -1;
	size_t alloc = 0;
	struct gpu_memory_use *u = NULL;
	int64_t now = 0;
	struct hashmap pids = HASHMAP_INIT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t device = sqlite3_column_int64(st, 0), pid = sqlite3_column_int64(st, 3);
		if (!u || u->device != device) {
			if (*n == alloc) {
				alloc = alloc ? 2 * alloc : 4;
				*v = xrealloc(*v, alloc * sizeof(**v));
			}
			u = &(*v)[(*n)++];
			*u = (struct gpu_memory_use){ .device = device };
			now = 0;
			hashmap_release(&pids);
		}
		const char *op = (const char *)sqlite3_column_text(st, 1);
		int64_t bytes = sqlite3_column_int64(st, 2);
		if (op && !strcmp(op, "alloc")) {
			now += bytes;
			u->allocations++;
			if (!hashmap_get(&pids, &pid, sizeof(pid))) {
				hashmap_put(&pids, &pid, sizeof(pid), 1);
				u->pids++;
			}
		} else if (op && !strcmp(op, "free")) {
			now -= bytes;
		}
		if (now > u->peak_bytes)
			u->peak_bytes = now;
		u->end_bytes = now;
	}
	hashmap_release(&pids);
	sqlite3_finalize(st);
	for (size_t i = 0; i < *n; i++)
		(*v)[i].capacity_bytes = capacity_of(db, (*v)[i].device);
	return 0;
}
