/* gpu (analysis): the report's `gpu` and `interconnect` sections from the
 * cuda and nvml probes' tables (docs/gpu.md): per device, what the driver
 * sampled (utilisation, memory, power, throttling); the GPU's timeline (busy
 * and idle time, the kernels that took it, launch and synchronisation
 * calls); device memory as the program allocated it; the NVTX ranges with
 * the GPU time launched inside them (gpu_nvtx.h); and every kind of copy
 * with its volume and achieved bandwidth. Findings: gpu_findings.c. */
#include "../record/reader.h"
#include "../util/demangle.h"
#include "../util/strbuf.h"
#include "analysis.h"
#include "gpu_link.h"
#include "gpu_model.h"
#include "gpu_nvtx.h"

#include <stdlib.h>
#include <string.h>

#define GPU_TOP_KERNELS 10
#define GPU_NVTX_RANGES 20

/* Clock-event reasons that slow a busy GPU down (NVML's mask): power caps,
 * thermal and hardware slowdowns; idle and the application's own clock
 * settings are left out. */
#define GPU_THROTTLE_MASK (0x4ULL | 0x8ULL | 0x20ULL | 0x40ULL | 0x80ULL)

static json_t *col_json(sqlite3_stmt *st, int col)
{
	switch (sqlite3_column_type(st, col)) {
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, col));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, col));
	case SQLITE_TEXT:
		return report_string((const char *)sqlite3_column_text(st, col),
				     (size_t)sqlite3_column_bytes(st, col));
	default:
		return json_null();
	}
}

/* Rows of sql as objects with keys (comma-separated, one per column). */
static json_t *rows_json(sqlite3 *db, const char *sql, const char *keys)
{
	json_t *arr = json_array();
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return arr;
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *o = json_object();
		const char *k = keys;
		for (int c = 0; c < sqlite3_column_count(st) && *k; c++) {
			const char *comma = strchr(k, ',');
			size_t len = comma ? (size_t)(comma - k) : strlen(k);
			char key[64];
			snprintf(key, sizeof(key), "%.*s", (int)len, k);
			json_object_set_new(o, key, col_json(st, c));
			k += len + (comma ? 1 : 0);
		}
		json_array_append_new(arr, o);
	}
	sqlite3_finalize(st);
	return arr;
}

/* nvml: the devices, with what the driver sampled of each. */
static json_t *devices_json(sqlite3 *db)
{
	if (!recording_has_table(db, "nvml_devices") || !recording_has_table(db, "nvml_samples"))
		return NULL;
	char sql[1024];
	snprintf(sql, sizeof(sql),
		 "SELECT d.device, d.name, d.mem_total_bytes, d.power_limit_mw / 1000.0,"
		 " (SELECT AVG(sm_pct) FROM nvml_samples s WHERE s.device = d.device),"
		 " (SELECT AVG(mem_pct) FROM nvml_samples s WHERE s.device = d.device),"
		 " (SELECT MAX(mem_used_bytes) FROM nvml_samples s WHERE s.device = d.device),"
		 " (SELECT AVG(power_mw) / 1000.0 FROM nvml_samples s WHERE s.device = d.device),"
		 " (SELECT MAX(sm_mhz) FROM nvml_samples s WHERE s.device = d.device),"
		 " (SELECT 100.0 * SUM((throttle & %llu) != 0) / COUNT(throttle) FROM"
		 "  nvml_samples s WHERE s.device = d.device),"
		 " (SELECT COUNT(*) FROM nvml_samples s WHERE s.device = d.device)"
		 " FROM nvml_devices d ORDER BY d.device",
		 (unsigned long long)GPU_THROTTLE_MASK);
	return rows_json(db, sql,
			 "device,name,mem_total_bytes,power_limit_w,sm_util_mean_pct,"
			 "mem_util_mean_pct,mem_used_peak_bytes,power_mean_w,sm_clock_max_mhz,"
			 "throttled_pct,samples");
}

static json_t *compute_json(const struct gpu_model *m)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < m->ndev; i++) {
		const struct gpu_device_time *d = &m->dev[i];
		double window_s = (double)(d->last_ns - d->first_ns) / 1e9;
		json_t *o = json_object();
		json_object_set_new(o, "device", json_integer(d->device));
		json_object_set_new(o, "kernels", json_integer(d->kernels));
		json_object_set_new(o, "kernel_s", json_real((double)d->kernel_ns / 1e9));
		json_object_set_new(o, "copies", json_integer(d->copies));
		json_object_set_new(o, "copy_s", json_real((double)d->copy_ns / 1e9));
		json_object_set_new(o, "memsets", json_integer(d->memsets));
		json_object_set_new(o, "window_s", json_real(window_s));
		json_object_set_new(o, "busy_s", json_real((double)d->busy_ns / 1e9));
		json_object_set_new(o, "busy_pct",
				    json_real(window_s > 0 ? 100.0 * (double)d->busy_ns /
								 (double)(d->last_ns - d->first_ns)
							   : 100.0));
		json_object_set_new(o, "idle_s", json_real((double)d->gaps_ns / 1e9));
		json_object_set_new(o, "idle_gaps", json_integer((json_int_t)d->ngaps));
		json_object_set_new(o, "copy_exposed_s",
				    json_real((double)d->copy_exposed_ns / 1e9));
		json_object_set_new(o, "copy_kernel_ratio",
				    d->kernel_ns
					? json_real((double)d->copy_ns / (double)d->kernel_ns)
					: json_null());
		json_object_set_new(o, "mean_kernel_us",
				    d->kernels
					? json_real((double)d->kernel_ns / 1e3 / (double)d->kernels)
					: json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *top_kernels_json(sqlite3 *db, double all_kernel_s)
{
	json_t *arr = json_array();
	sqlite3_stmt *st;
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "SELECT name, COUNT(*), SUM(end_ns - start_ns), COUNT(DISTINCT device) FROM"
		 " gpu_kernels WHERE end_ns >= start_ns GROUP BY name ORDER BY 3 DESC LIMIT %d",
		 GPU_TOP_KERNELS);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return arr;
	struct strbuf plain = STRBUF_INIT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int64_t count = sqlite3_column_int64(st, 1);
		double total_s = (double)sqlite3_column_int64(st, 2) / 1e9;
		strbuf_reset(&plain);
		if (!name || demangle_name(name, &plain))
			strbuf_addstr(&plain, name ? name : "?");
		json_t *o = json_object();
		json_object_set_new(o, "name", report_string(plain.buf, plain.len));
		json_object_set_new(o, "count", json_integer(count));
		json_object_set_new(o, "total_s", json_real(total_s));
		json_object_set_new(o, "mean_us",
				    json_real(count ? total_s * 1e6 / (double)count : 0));
		json_object_set_new(
		    o, "share_pct",
		    json_real(all_kernel_s > 0 ? 100.0 * total_s / all_kernel_s : 0));
		json_object_set_new(o, "devices", json_integer(sqlite3_column_int64(st, 3)));
		json_array_append_new(arr, o);
	}
	strbuf_release(&plain);
	sqlite3_finalize(st);
	return arr;
}

/* {calls, seconds} of the API calls named by the SQL condition cond. */
static json_t *api_json(sqlite3 *db, const char *cond)
{
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "SELECT COUNT(*), SUM(end_ns - start_ns) / 1e9 FROM gpu_api WHERE %s", cond);
	json_t *arr = rows_json(db, sql, "calls,seconds");
	json_t *o = json_incref(json_array_get(arr, 0));
	json_decref(arr);
	return o ? o : json_object();
}

/* Device memory the program allocated through CUDA (cudaMalloc and kin: for
 * PyTorch, its caching allocator's reserved segments), per device, with its
 * balance: each device's peak against the devices' mean peak. */
static json_t *memory_json(sqlite3 *db)
{
	json_t *arr = json_array();
	struct gpu_memory_use *v;
	size_t n;
	if (gpu_memory_load(db, &v, &n))
		return arr;
	double mean = 0;
	for (size_t i = 0; i < n; i++)
		mean += (double)v[i].peak_bytes / (double)n;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "device", json_integer(v[i].device));
		json_object_set_new(o, "allocations", json_integer(v[i].allocations));
		json_object_set_new(o, "peak_bytes", json_integer(v[i].peak_bytes));
		json_object_set_new(o, "end_bytes", json_integer(v[i].end_bytes));
		json_object_set_new(o, "processes", json_integer(v[i].pids));
		json_object_set_new(o, "peak_vs_mean",
				    mean > 0 ? json_real((double)v[i].peak_bytes / mean)
					     : json_null());
		json_object_set_new(
		    o, "capacity_pct",
		    v[i].capacity_bytes
			? json_real(100.0 * (double)v[i].peak_bytes / (double)v[i].capacity_bytes)
			: json_null());
		json_array_append_new(arr, o);
	}
	free(v);
	return arr;
}

/* Large copies (GPU_LARGE_COPY_BYTES or more: smaller ones show the
 * latency, not the link) per link: host-device by kind and device, between
 * devices by the pair; their achieved bandwidth against the link's peak. */
static json_t *links_json(sqlite3 *db)
{
	json_t *arr = json_array();
	sqlite3_stmt *st;
	char sql[1024];
	snprintf(sql, sizeof(sql),
		 "SELECT kind, CASE WHEN kind IN ('HtoD', 'DtoH') THEN device ELSE src_device END,"
		 " CASE WHEN kind IN ('HtoD', 'DtoH') THEN -1 ELSE dst_device END,"
		 " COUNT(*), SUM(bytes), SUM(end_ns - start_ns), SUM(" GPU_PAGEABLE_COPY ")"
		 " FROM gpu_copies WHERE end_ns > start_ns AND bytes >= %d AND (kind IN ('HtoD',"
		 " 'DtoH') OR (kind IN ('PtoP', 'DtoD') AND src_device != dst_device))"
		 " GROUP BY 1, 2, 3 ORDER BY 6 DESC",
		 GPU_LARGE_COPY_BYTES);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return arr;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t device = sqlite3_column_int64(st, 1), peer = sqlite3_column_int64(st, 2);
		double bytes = sqlite3_column_double(st, 4),
		       secs = (double)sqlite3_column_int64(st, 5) / 1e9;
		double gbps = secs > 0 ? bytes / secs / 1e9 : 0;
		struct gpu_link l;
		int have_link = !gpu_link_of(db, device, peer, &l);
		json_t *o = json_object();
		json_object_set_new(o, "kind", col_json(st, 0));
		json_object_set_new(o, "device", json_integer(device));
		json_object_set_new(o, "peer", peer >= 0 ? json_integer(peer) : json_null());
		json_object_set_new(o, "link", have_link ? json_string(l.name) : json_null());
		json_object_set_new(o, "peak_gb_per_s",
				    have_link ? json_real(l.peak_gb_per_s) : json_null());
		json_object_set_new(o, "peak_source",
				    have_link ? json_string(l.source) : json_null());
		json_object_set_new(o, "copies", json_integer(sqlite3_column_int64(st, 3)));
		json_object_set_new(o, "pageable", json_integer(sqlite3_column_int64(st, 6)));
		json_object_set_new(o, "bytes", json_real(bytes));
		json_object_set_new(o, "seconds", json_real(secs));
		json_object_set_new(o, "achieved_gb_per_s", json_real(gbps));
		json_object_set_new(o, "achieved_pct",
				    have_link && l.peak_gb_per_s > 0
					? json_real(100.0 * gbps / l.peak_gb_per_s)
					: json_null());
		json_array_append_new(arr, o);
	}
	sqlite3_finalize(st);
	return arr;
}

static json_t *copies_json(sqlite3 *db)
{
	char sql[1024];
	snprintf(sql, sizeof(sql),
		 "SELECT kind, COUNT(*), SUM(bytes), SUM(end_ns - start_ns) / 1e9,"
		 " SUM(bytes) / (SUM(end_ns - start_ns) / 1e9) / 1e9,"
		 " SUM(" GPU_PAGEABLE_COPY "),"
		 " SUM(bytes < %d), MAX(bytes) FROM gpu_copies WHERE end_ns >= start_ns"
		 " GROUP BY kind ORDER BY 4 DESC",
		 GPU_SMALL_COPY_BYTES);
	json_t *arr = rows_json(db, sql,
				"kind,count,bytes,seconds,achieved_gb_per_s,pageable,"
				"small,largest_bytes");
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o)
	{
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db,
				       "SELECT bytes FROM gpu_copies WHERE kind = ? ORDER BY bytes"
				       " LIMIT 1 OFFSET ?",
				       -1, &st, NULL) != SQLITE_OK)
			continue;
		const char *kind = json_string_value(json_object_get(o, "kind"));
		sqlite3_bind_text(st, 1, kind ? kind : "", -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, json_integer_value(json_object_get(o, "count")) / 2);
		if (sqlite3_step(st) == SQLITE_ROW)
			json_object_set_new(o, "median_bytes",
					    json_integer(sqlite3_column_int64(st, 0)));
		sqlite3_finalize(st);
	}
	return arr;
}

/* The program's NVTX ranges (marks left out), by domain and name, the most
 * time first: what it said it was doing, and for how long. */
static json_t *nvtx_json(sqlite3 *db, double wall_s)
{
	char sql[768];
	snprintf(sql, sizeof(sql),
		 "SELECT name, domain, COUNT(*), SUM(end_ns - start_ns) / 1e9,"
		 " AVG(end_ns - start_ns) / 1e9, MAX(end_ns - start_ns) / 1e9,"
		 " MIN(depth), COUNT(DISTINCT tid), SUM(closed = 0),"
		 " 100.0 * SUM(end_ns - start_ns) / 1e9 / %.9f"
		 " FROM nvtx_ranges WHERE type != 'mark' AND end_ns >= start_ns"
		 " GROUP BY domain, name ORDER BY 4 DESC, 1 LIMIT %d",
		 wall_s > 0 ? wall_s : 1.0, GPU_NVTX_RANGES);
	json_t *arr = rows_json(db, sql,
				"name,domain,count,total_s,mean_s,max_s,depth,threads,open,"
				"wall_pct");
	if (wall_s <= 0) {
		size_t i;
		json_t *o;
		json_array_foreach(arr, i, o) json_object_set_new(o, "wall_pct", json_null());
	}
	return arr;
}

/* Why the GPU was not measured: the cuda and nvml probes' own reasons. */
static void gpu_absent(struct analysis_ctx *ctx)
{
	if (!recording_has_table(ctx->db, "probes"))
		return;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT reason FROM probes WHERE name IN ('cuda', 'nvml') AND reason"
			       " IS NOT NULL AND reason != '' ORDER BY name = 'nvml' LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(st) == SQLITE_ROW)
		report_not_measured(ctx->report, "gpu", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

static int gpu_run(struct analysis_ctx *ctx)
{
	sqlite3 *db = ctx->db;
	json_t *devices = devices_json(db);
	struct gpu_model m;
	int have_cuda = !gpu_model_load(db, &m);
	if (!devices && !have_cuda) {
		gpu_absent(ctx);
		return 0;
	}
	json_t *gpu = json_object();
	if (devices)
		json_object_set_new(gpu, "devices", devices);
	if (recording_has_table(db, "nvml_topology"))
		json_object_set_new(gpu, "topology",
				    rows_json(db,
					      "SELECT a, b, link FROM nvml_topology ORDER BY a, b",
					      "a,b,link"));
	if (recording_has_table(db, "gpu_processes"))
		json_object_set_new(
		    gpu, "processes",
		    rows_json(db,
			      "SELECT pid, status, records_dropped FROM gpu_processes"
			      " ORDER BY pid",
			      "pid,status,records_dropped"));
	if (have_cuda) {
		double kernel_s = 0;
		for (size_t i = 0; i < m.ndev; i++)
			kernel_s += (double)m.dev[i].kernel_ns / 1e9;
		json_object_set_new(gpu, "compute", compute_json(&m));
		json_object_set_new(gpu, "top_kernels", top_kernels_json(db, kernel_s));
		if (recording_has_table(db, "gpu_api")) {
			json_object_set_new(gpu, "launches", api_json(db, GPU_LAUNCH_CALLS));
			json_object_set_new(gpu, "syncs", api_json(db, "name IN " GPU_SYNC_CALLS));
		}
		json_object_set_new(gpu, "memory", memory_json(db));
		if (recording_has_table(db, "nvtx_ranges")) {
			json_t *ranges = nvtx_json(db, report_wall_s(db));
			gpu_nvtx_ranges_add(db, ranges, gpu);
			json_object_set_new(gpu, "nvtx_ranges", ranges);
		}
		if (!m.ndev)
			report_not_measured(ctx->report, "gpu",
					    "the CUDA agent recorded no GPU activity (no kernel, "
					    "copy or memset ran)");
		if (recording_has_table(db, "gpu_copies")) {
			json_t *ic = json_object();
			json_object_set_new(ic, "copies", copies_json(db));
			json_object_set_new(ic, "links", links_json(db));
			json_object_set_new(ctx->report, "interconnect", ic);
		}
		gpu_model_release(&m);
	}
	json_object_set_new(ctx->report, "gpu", gpu);
	return 0;
}

const struct analysis_ops analysis_gpu = { .name = "gpu", .run = gpu_run };
