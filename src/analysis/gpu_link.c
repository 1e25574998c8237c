/* gpu_link: the peak speed of the link a copy crosses (gpu_link.h). */
#include "gpu_link.h"
#include "../record/reader.h"

#include <stdio.h>
#include <string.h>

/* GB/s per lane and direction: 2.5 and 5 GT/s with 8b/10b, 8 to 32 GT/s
 * with 128b/130b, 64 GT/s PAM4 with 242B/256B FLITs. */
static const double pcie_lane_gb_per_s[] = { 0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563 };

double gpu_link_pcie_lane_gb_per_s(int64_t gen)
{
	return gen >= 1 && gen <= 6 ? pcie_lane_gb_per_s[gen] : 0;
}

/* One integer from sql with ?1 = a and ?2 = b; 0 when no row or NULL. */
static int64_t query_int(sqlite3 *db, const char *table, const char *sql, int64_t a, int64_t b,
			 int *found)
{
	sqlite3_stmt *st;
	int64_t v = 0;
	*found = 0;
	if (!recording_has_table(db, table) ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		v = sqlite3_column_int64(st, 0);
		*found = 1;
	}
	sqlite3_finalize(st);
	return v;
}

/* The device's compute capability as major * 10 + minor; 0 unknown. */
static int64_t cc_of(sqlite3 *db, int64_t device)
{
	int found;
	return query_int(db, "gpu_devices",
			 "SELECT MAX(cc_major * 10 + cc_minor) FROM gpu_devices WHERE device = ?1"
			 "",
			 device, 0, &found);
}

static int pcie_of(sqlite3 *db, int64_t device, struct gpu_link *l)
{
	int have_gen, have_width;
	int64_t gen =
	    query_int(db, "nvml_devices", "SELECT pcie_gen FROM nvml_devices WHERE device = ?1",
		      device, 0, &have_gen);
	int64_t width =
	    query_int(db, "nvml_devices", "SELECT pcie_width FROM nvml_devices WHERE device = ?1",
		      device, 0, &have_width);
	const char *source = "nvml";
	if (!have_gen || !have_width || !gpu_link_pcie_lane_gb_per_s(gen) || width <= 0) {
		int64_t cc = cc_of(db, device);
		if (!cc)
			return -1;
		gen = cc >= 90 ? 5 : cc >= 80 ? 4 : 3;
		width = 16;
		source = "compute capability";
	}
	snprintf(l->name, sizeof(l->name), "PCIe %lld.0 x%lld", (long long)gen, (long long)width);
	l->peak_gb_per_s = gpu_link_pcie_lane_gb_per_s(gen) * (double)width;
	l->source = source;
	return 0;
}

int gpu_link_of(sqlite3 *db, int64_t device, int64_t peer, struct gpu_link *l)
{
	struct gpu_link got;
	if (peer >= 0 && peer != device) {
		int found;
		int64_t links =
		    query_int(db, "nvml_topology",
			      "SELECT CAST(substr(link, 3) AS INTEGER) FROM nvml_topology"
			      " WHERE a = ?1 AND b = ?2 AND link LIKE 'NV%'",
			      device, peer, &found);
		if (found && links > 0) {
			int64_t cc = cc_of(db, device);
			/* NVLink 2 to 4 (Volta to Hopper): 25 GB/s a link and
			 * direction; NVLink 5 (Blackwell): 50. */
			snprintf(got.name, sizeof(got.name), "NVLink x%lld", (long long)links);
			got.peak_gb_per_s = (double)links * (cc >= 100 ? 50.0 : 25.0);
			got.source = "nvml";
			*l = got;
			return 0;
		}
	}
	if (pcie_of(db, device, &got))
		return -1;
	*l = got;
	return 0;
}
