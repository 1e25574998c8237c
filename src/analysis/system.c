/* system: the machine around the target (the system probe's tables): each
 * block device's throughput, IOPS, utilisation and queue depth over the run
 * (`iostat -x`), the CPUs' use, the run queue and the pressure stalls
 * (`vmstat`, PSI), and a timeline of them. Report key `system`; no finding
 * of its own: the target's waits are the offcpu and phase findings'. */
#include "analysis.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SYSTEM_TIMELINE_POINTS 120
#define SECTOR_BYTES 512

struct msample {
	int64_t t_ns, running, blocked, busy, iowait, steal, total, psi_cpu, psi_mem, psi_io,
	    throttled;
};

static int64_t col_or(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static size_t machine_load(sqlite3 *db, struct msample **out)
{
	sqlite3_stmt *st = recording_prepare(
	    db, "machine_samples",
	    "SELECT t_ns, running, blocked, busy_ticks, iowait_ticks, steal_ticks, total_ticks,"
	    " psi_cpu_us, psi_memory_us, psi_io_us, throttled_us FROM machine_samples ORDER BY t_ns");
	size_t n = 0, alloc = 0;
	*out = NULL;
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			*out = xrealloc(*out, alloc * sizeof(**out));
		}
		(*out)[n++] =
		    (struct msample){col_or(st, 0), col_or(st, 1), col_or(st, 2), col_or(st, 3),
				     col_or(st, 4), col_or(st, 5), col_or(st, 6), col_or(st, 7),
				     col_or(st, 8), col_or(st, 9), col_or(st, 10)};
	}
	sqlite3_finalize(st);
	return n;
}

/* b - a when both are known and b >= a, else -1. */
static int64_t moved(int64_t a, int64_t b)
{
	return a >= 0 && b >= a ? b - a : -1;
}

static void set_pct(json_t *o, const char *key, int64_t part, int64_t whole)
{
	if (part >= 0 && whole > 0)
		json_object_set_new(o, key, json_real(100.0 * (double)part / (double)whole));
}

/* The run queue, the CPUs' use and the pressure over the whole run. */
static void machine_json(json_t *o, const struct msample *v, size_t n)
{
	const struct msample *a = &v[0], *b = &v[n - 1];
	double wall_us = (double)(b->t_ns - a->t_ns) / 1e3;
	json_t *cpu = json_object();
	int64_t total = moved(a->total, b->total);
	set_pct(cpu, "busy_pct", moved(a->busy, b->busy), total);
	set_pct(cpu, "iowait_pct", moved(a->iowait, b->iowait), total);
	set_pct(cpu, "steal_pct", moved(a->steal, b->steal), total);
	json_object_set_new(o, "cpu", cpu);
	double run_sum = 0, blocked_sum = 0;
	int64_t run_max = -1, blocked_max = -1;
	size_t known = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].running < 0)
			continue;
		known++;
		run_sum += (double)v[i].running;
		blocked_sum += (double)(v[i].blocked > 0 ? v[i].blocked : 0);
		run_max = v[i].running > run_max ? v[i].running : run_max;
		blocked_max = v[i].blocked > blocked_max ? v[i].blocked : blocked_max;
	}
	if (known)
		json_object_set_new(o, "run_queue",
				    json_pack("{s:f, s:I, s:f, s:I}", "mean",
					      run_sum / (double)known, "max", (json_int_t)run_max,
					      "blocked_mean", blocked_sum / (double)known,
					      "blocked_max", (json_int_t)blocked_max));
	json_t *psi = json_object();
	if (wall_us > 0) {
		int64_t c = moved(a->psi_cpu, b->psi_cpu), m = moved(a->psi_mem, b->psi_mem),
			io = moved(a->psi_io, b->psi_io);
		if (c >= 0)
			json_object_set_new(psi, "cpu_pct", json_real(100.0 * (double)c / wall_us));
		if (m >= 0)
			json_object_set_new(psi, "memory_pct",
					    json_real(100.0 * (double)m / wall_us));
		if (io >= 0)
			json_object_set_new(psi, "io_pct", json_real(100.0 * (double)io / wall_us));
	}
	json_object_set_new(o, "pressure", psi);
	int64_t thr = moved(a->throttled, b->throttled);
	if (thr >= 0)
		json_object_set_new(o, "cgroup_throttled_s", json_real((double)thr / 1e6));
}

/* The index of time t in the sorted t[0..n), or n. */
static size_t reading_at(const int64_t *t, size_t n, int64_t at)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid] < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && t[lo] == at ? lo : n;
}

/* Each device with I/O during the run: its totals, rates and peaks. */
static json_t *devices_json(sqlite3 *db, double *util_at, const int64_t *t_at, size_t nt)
{
	json_t *list = json_array();
	sqlite3_stmt *st = recording_prepare(
	    db, "disk_samples",
	    "SELECT device, t_ns, reads, read_sectors, writes, write_sectors, io_ms, queue_ms"
	    " FROM disk_samples ORDER BY device, t_ns");
	char dev[64] = "";
	int64_t first[7] = {0}, prev[7] = {0}, cur[7] = {0};
	double util_peak = 0, queue_peak = 0;
	int have = 0;
	for (int more = st != NULL;;) {
		int row = more && sqlite3_step(st) == SQLITE_ROW;
		const char *name = row ? (const char *)sqlite3_column_text(st, 0) : NULL;
		if (have && (!row || !name || strcmp(name, dev))) {
			double span_s = (double)(prev[0] - first[0]) / 1e9;
			int64_t reads = prev[1] - first[1], writes = prev[3] - first[3];
			if (span_s > 0 && reads + writes > 0) {
				double io_ms = (double)(prev[5] - first[5]),
				       q_ms = (double)(prev[6] - first[6]);
				json_array_append_new(
				    list,
				    json_pack(
					"{s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, "
					"s:f}",
					"device", dev, "reads", (json_int_t)reads, "writes",
					(json_int_t)writes, "read_bytes",
					(json_int_t)((prev[2] - first[2]) * SECTOR_BYTES),
					"write_bytes",
					(json_int_t)((prev[4] - first[4]) * SECTOR_BYTES), "iops",
					(double)(reads + writes) / span_s, "read_mb_s",
					(double)(prev[2] - first[2]) * SECTOR_BYTES / 1e6 / span_s,
					"write_mb_s",
					(double)(prev[4] - first[4]) * SECTOR_BYTES / 1e6 / span_s,
					"util_pct", 100.0 * io_ms / (span_s * 1e3), "util_peak_pct",
					util_peak, "queue_depth", q_ms / (span_s * 1e3),
					"queue_peak", queue_peak));
			}
			have = 0;
		}
		if (!row || !name)
			break;
		for (int k = 0; k < 7; k++)
			cur[k] = sqlite3_column_int64(st, k + 1);
		if (!have) {
			snprintf(dev, sizeof(dev), "%s", name);
			memcpy(first, cur, sizeof(cur));
			util_peak = queue_peak = 0;
			have = 1;
		} else if (cur[0] > prev[0]) {
			double dt_ms = (double)(cur[0] - prev[0]) / 1e6;
			double u = 100.0 * (double)(cur[5] - prev[5]) / dt_ms;
			double q = (double)(cur[6] - prev[6]) / dt_ms;
			u = u > 100 ? 100 : u;
			util_peak = u > util_peak ? u : util_peak;
			queue_peak = q > queue_peak ? q : queue_peak;
			/* the busiest device's, for the timeline */
			size_t i = reading_at(t_at, nt, cur[0]);
			if (i < nt && u > util_at[i])
				util_at[i] = u;
		}
		memcpy(prev, cur, sizeof(cur));
	}
	sqlite3_finalize(st);
	return list;
}

/* At most SYSTEM_TIMELINE_POINTS points of the interval figures. */
static json_t *timeline_json(const struct msample *v, size_t n, const double *util)
{
	json_t *tl = json_array();
	size_t step = n / SYSTEM_TIMELINE_POINTS + 1;
	for (size_t i = step; i < n; i += step) {
		const struct msample *a = &v[i - step], *b = &v[i];
		int64_t total = moved(a->total, b->total);
		json_t *p = json_pack("{s:f}", "t_s", (double)b->t_ns / 1e9);
		if (b->running >= 0)
			json_object_set_new(p, "running", json_integer(b->running));
		set_pct(p, "busy_pct", moved(a->busy, b->busy), total);
		set_pct(p, "iowait_pct", moved(a->iowait, b->iowait), total);
		double u = 0;
		for (size_t k = i - step + 1; k <= i; k++)
			u = util[k] > u ? util[k] : u;
		json_object_set_new(p, "disk_util_pct", json_real(u));
		json_array_append_new(tl, p);
	}
	return tl;
}

static int system_run(struct analysis_ctx *ctx)
{
	struct msample *v = NULL;
	size_t n = machine_load(ctx->db, &v);
	if (n < 2) {
		free(v);
		return 0; /* the probe did not run, or too short a run */
	}
	json_t *o = json_object();
	int64_t interval = 0;
	if (!recording_meta_int(ctx->db, "interval_ns", &interval) && interval > 0)
		json_object_set_new(o, "interval_s", json_real((double)interval / 1e9));
	machine_json(o, v, n);
	double *util = xcalloc(n, sizeof(*util));
	int64_t *t_at = xcalloc(n, sizeof(*t_at));
	for (size_t i = 0; i < n; i++)
		t_at[i] = v[i].t_ns;
	json_object_set_new(o, "devices", devices_json(ctx->db, util, t_at, n));
	json_object_set_new(o, "timeline", timeline_json(v, n, util));
	json_object_set_new(ctx->report, "system", o);
	free(util);
	free(t_at);
	free(v);
	return 0;
}

const struct analysis_ops analysis_system = {.name = "system", .run = system_run};
