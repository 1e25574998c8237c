/* gpu_model: per-device busy time, window and idle gaps (gpu_model.h). */
#include "gpu_model.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdlib.h>

static const struct {
	const char *table;
	int what; /* 0 kernel, 1 copy, 2 memset */
} activity_tables[] = { { "gpu_kernels", 0 }, { "gpu_copies", 1 }, { "gpu_memsets", 2 } };

static void gap_add(struct gpu_device_time *d, int64_t from_ns, int64_t to_ns,
		    int64_t busy_before_ns, size_t *alloc)
{
	if (to_ns - from_ns < GPU_GAP_MIN_NS)
		return;
	if (d->ngaps == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 64;
		d->gaps = xrealloc(d->gaps, *alloc * sizeof(*d->gaps));
	}
	d->gaps[d->ngaps++] = (struct gpu_gap){ from_ns, to_ns, busy_before_ns };
	d->gaps_ns += to_ns - from_ns;
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
	size_t dev_alloc = 0, gap_alloc = 0;
	int64_t busy_from = 0, busy_to = 0; /* the busy stretch being merged */
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t device = sqlite3_column_int64(st, 0), s = sqlite3_column_int64(st, 1),
			e = sqlite3_column_int64(st, 2);
		int what = sqlite3_column_int(st, 3);
		if (!d || d->device != device) {
			if (d)
				d->busy_ns += busy_to - busy_from;
			d = device_add(m, device, &dev_alloc);
			gap_alloc = 0;
			busy_from = s;
			busy_to = e;
		} else if (s > busy_to) {
			d->busy_ns += busy_to - busy_from;
			gap_add(d, busy_to, s, busy_to - busy_from, &gap_alloc);
			busy_from = s;
			busy_to = e;
		} else if (e > busy_to) {
			busy_to = e;
		}
		if (s < d->first_ns)
			d->first_ns = s;
		if (e > d->last_ns)
			d->last_ns = e;
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
	if (d)
		d->busy_ns += busy_to - busy_from;
	sqlite3_finalize(st);
	return 0;
}

void gpu_model_release(struct gpu_model *m)
{
	for (size_t i = 0; i < m->ndev; i++)
		free(m->dev[i].gaps);
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
