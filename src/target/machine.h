/* machine: one reading of the machine a measurement runs on (cores, load,
 * frequency governor, SMT, thermal and cgroup throttling counts, pressure
 * stall totals, steal time, memory and swap), from /proc and /sys. `sonde
 * doctor` prints one; every run records one at its start and one at its end
 * (meta hygiene_start, hygiene_end) and its report compares them.
 *
 * Contract: machine_read() never fails; what the machine does not have (no
 * cpufreq in a VM, no PSI, no cgroup CPU controller) stays absent: -1 for a
 * count, NAN for a real, "" for a string. Every count is cumulative (since
 * boot, or since the cgroup was made), so two readings give what happened in
 * between without any cost while the run goes on. */
#ifndef SONDE_MACHINE_H
#define SONDE_MACHINE_H

#include <jansson.h>
#include <stdint.h>

struct machine_reading {
	int64_t cpus_online;
	double load_1m, load_5m, load_15m;
	char cpu_model[128];
	char governor[32]; /* cpu0's cpufreq scaling_governor */
	char turbo[8];	   /* "on" or "off" (intel_pstate) */
	int64_t smt_active, numa_nodes;
	/* Summed over every CPU's thermal_throttle directory. */
	int64_t thermal_core_throttles, thermal_package_throttles;
	char cgroup_path[256]; /* the process's cgroup (v2 path, or v1's cpu controller) */
	int64_t cgroup_cpu_quota_us, cgroup_cpu_period_us; /* absent: no limit */
	int64_t cgroup_nr_throttled, cgroup_throttled_us;
	/* PSI totals (/proc/pressure/cpu, memory, io): microseconds some or all tasks stalled. */
	int64_t psi_cpu_some_us, psi_memory_some_us, psi_memory_full_us, psi_io_some_us;
	/* /proc/stat's first line: steal, idle, iowait and the sum of every column, in ticks. */
	int64_t stat_steal_ticks, stat_total_ticks, stat_idle_ticks, stat_iowait_ticks;
	int64_t procs_running, procs_blocked; /* /proc/stat: runnable, and blocked on I/O, now */
	int64_t mem_total_bytes, mem_available_bytes, swap_total_bytes, swap_free_bytes;
	int64_t swap_in_pages, swap_out_pages; /* /proc/vmstat pswpin, pswpout */
};

/* Reads the machine. root prefixes every /proc and /sys path (tests point it
 * at a directory of fixture files); NULL or "" is the machine itself. Under
 * a root, cpus_online is the count of root's sys/devices/system/cpu/cpuN. */
void machine_read(const char *root, struct machine_reading *out);

/* The part of a reading cheap enough to take every interval of a run:
 * /proc/stat (CPU ticks, running and blocked tasks), the PSI totals and the
 * cgroup's CPU throttling; the rest stays absent. */
void machine_read_pressure(const char *root, struct machine_reading *out);

/* The reading as a JSON object (absent fields left out); NULL on no memory. */
json_t *machine_to_json(const struct machine_reading *m);
/* A reading from machine_to_json's object: unknown keys ignored, missing
 * ones absent. */
void machine_from_json(json_t *obj, struct machine_reading *out);

#endif
