/* gpu_fixture: the GPU tables as the cuda probe writes them (docs/gpu.md),
 * for tests that synthesise GPU activity in a stacks_fixture recording. */
#ifndef SONDE_TEST_GPU_FIXTURE_H
#define SONDE_TEST_GPU_FIXTURE_H

#include "stacks_fixture.h"

#include <stdarg.h>

static const char gpu_tables[] =
	"CREATE TABLE gpu_processes(pid INTEGER, cupti_version INTEGER, status TEXT,"
	" records_dropped INTEGER, bad_lines INTEGER);"
	"CREATE TABLE gpu_devices(pid INTEGER, device INTEGER, name TEXT, sm_count INTEGER,"
	" mem_bytes INTEGER, cc_major INTEGER, cc_minor INTEGER);"
	"CREATE TABLE gpu_kernels(pid INTEGER, device INTEGER, stream INTEGER, corr INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, name TEXT, grid_x INTEGER, grid_y INTEGER,"
	" grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER, registers INTEGER,"
	" smem_static INTEGER, smem_dynamic INTEGER);"
	"CREATE TABLE gpu_copies(pid INTEGER, device INTEGER, stream INTEGER, corr INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, bytes INTEGER, async INTEGER, src_device INTEGER,"
	" dst_device INTEGER, kind TEXT, src_kind TEXT, dst_kind TEXT);"
	"CREATE TABLE gpu_memsets(pid INTEGER, device INTEGER, stream INTEGER, corr INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, bytes INTEGER);"
	"CREATE TABLE gpu_api(pid INTEGER, tid INTEGER, corr INTEGER, start_ns INTEGER,"
	" end_ns INTEGER, ret INTEGER, name TEXT);"
	"CREATE TABLE gpu_syncs(pid INTEGER, stream INTEGER, corr INTEGER, start_ns INTEGER,"
	" end_ns INTEGER, type TEXT);"
	"CREATE TABLE gpu_memory(pid INTEGER, device INTEGER, t_ns INTEGER, address INTEGER,"
	" bytes INTEGER, corr INTEGER, op TEXT, kind TEXT);";

/* The nvml probe's device and topology tables (the links' speeds). */
static const char nvml_link_tables[] =
	"CREATE TABLE nvml_devices(device INTEGER PRIMARY KEY, name TEXT, uuid TEXT,"
	" bus_id TEXT, mem_total_bytes INTEGER, numa_node INTEGER, power_limit_mw INTEGER,"
	" max_sm_mhz INTEGER, max_mem_mhz INTEGER, pcie_gen INTEGER, pcie_width INTEGER);"
	"CREATE TABLE nvml_topology(a INTEGER, b INTEGER, link TEXT, PRIMARY KEY(a, b));";

static inline void sql(struct fixture *fx, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	char *err = NULL;
	if (sqlite3_exec(recorder_db(fx->rec), buf, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", buf, err);
		exit(2);
	}
}

#endif
