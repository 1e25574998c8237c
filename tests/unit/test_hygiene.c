/* machine readings from fixture roots (target/machine.c) and the hygiene
 * facts and warnings two readings give (analysis/hygiene.c). */
#include "check.h"
#include "analysis/hygiene.h"
#include "target/machine.h"
#include "util/fileio.h"

#include <math.h>

/* Writes text at root/rel, making its directories. */
static void put(const char *root, const char *rel, const char *text)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	*strrchr(path, '/') = '\0';
	CHECK(dir_create_parents(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	CHECK(file_write_all(path, text, strlen(text)) == 0);
}

/* A 2-CPU machine at a run's start (later = 0) or end (1): between the two,
 * steal took 14% of the CPU time, cpu0 throttled twice, the cgroup's quota
 * throttled 5 times for 1 s, and memory stalled 0.3 s. */
static void fixture_write(const char *root, int later)
{
	put(root, "proc/loadavg", "3.50 2.00 1.00 3/200 1234\n");
	put(root, "proc/stat",
	    later ? "cpu  200 0 100 1500 20 0 0 180 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
		    "procs_running 3\nprocs_blocked 1\n"
		  : "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
		    "procs_running 3\nprocs_blocked 1\n");
	put(root, "proc/cpuinfo", "processor\t: 0\nmodel\t\t: 85\nmodel name\t: Test CPU @ 2GHz\n");
	put(root, "proc/meminfo",
	    "MemTotal:        2048 kB\nMemFree:  1 kB\nMemAvailable:    1024 kB\n"
	    "SwapTotal:       4096 kB\nSwapFree:        1024 kB\n");
	put(root, "proc/vmstat", "nr_free_pages 5\npswpin 10\npswpout 20\n");
	put(root, "proc/pressure/memory",
	    later ? "some avg10=0.00 avg60=0.00 avg300=0.00 total=301000\n"
		    "full avg10=0.00 avg60=0.00 avg300=0.00 total=600\n"
		  : "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n"
		    "full avg10=0.00 avg60=0.00 avg300=0.00 total=500\n");
	put(root, "proc/pressure/cpu", "some avg10=1.00 avg60=0.00 avg300=0.00 total=77\n");
	put(root, "proc/self/cgroup", "0::/user.slice/test\n");
	put(root, "sys/fs/cgroup/user.slice/test/cpu.max", "150000 100000\n");
	put(root, "sys/fs/cgroup/user.slice/test/cpu.stat",
	    later ? "usage_usec 9\nnr_periods 20\nnr_throttled 8\nthrottled_usec 1250000\n"
		  : "usage_usec 5\nnr_periods 10\nnr_throttled 3\nthrottled_usec 250000\n");
	put(root, "sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count",
	    later ? "7\n" : "5\n");
	put(root, "sys/devices/system/cpu/cpu1/thermal_throttle/package_throttle_count", "1\n");
	put(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
	put(root, "sys/devices/system/cpu/smt/active", "1\n");
	put(root, "sys/devices/system/node/node0/cpulist", "0-1\n");
}

static int has_warning(json_t *h, const char *id)
{
	size_t i;
	json_t *w;
	json_array_foreach(
	    json_object_get(h, "warnings"), i,
	    w) if (!strcmp(json_string_value(json_object_get(w, "id")), id)) return 1;
	return 0;
}

TEST(fixture_read, "machine_read reads each fact of a fixture root")
{
	char *root = check_tmpdir();
	REQUIRE(root);
	fixture_write(root, 0);
	struct machine_reading m;
	machine_read(root, &m);
	CHECK_INT_EQ(m.cpus_online, 2);
	CHECK(fabs(m.load_1m - 3.5) < 1e-9);
	CHECK_STR_EQ(m.cpu_model, "Test CPU @ 2GHz");
	CHECK_STR_EQ(m.governor, "powersave");
	CHECK_INT_EQ(m.smt_active, 1);
	CHECK_INT_EQ(m.numa_nodes, 1);
	CHECK_INT_EQ(m.thermal_core_throttles, 5);
	CHECK_INT_EQ(m.thermal_package_throttles, 1);
	CHECK_STR_EQ(m.cgroup_path, "/user.slice/test");
	CHECK_INT_EQ(m.cgroup_cpu_quota_us, 150000);
	CHECK_INT_EQ(m.cgroup_cpu_period_us, 100000);
	CHECK_INT_EQ(m.cgroup_nr_throttled, 3);
	CHECK_INT_EQ(m.cgroup_throttled_us, 250000);
	CHECK_INT_EQ(m.psi_memory_some_us, 1000);
	CHECK_INT_EQ(m.psi_memory_full_us, 500);
	CHECK_INT_EQ(m.psi_cpu_some_us, 77);
	CHECK_INT_EQ(m.psi_io_some_us, -1);
	CHECK_INT_EQ(m.stat_steal_ticks, 40);
	CHECK_INT_EQ(m.stat_total_ticks, 1000);
	CHECK_INT_EQ(m.procs_running, 3);
	CHECK_INT_EQ(m.procs_blocked, 1);
	/* what the system probe reads every interval: the cheap part alone */
	struct machine_reading cheap;
	machine_read_pressure(root, &cheap);
	CHECK_INT_EQ(cheap.stat_total_ticks, 1000);
	CHECK_INT_EQ(cheap.procs_running, 3);
	CHECK_INT_EQ(cheap.psi_memory_some_us, 1000);
	CHECK_INT_EQ(cheap.cgroup_throttled_us, 250000);
	CHECK_INT_EQ(cheap.mem_total_bytes, -1);
	CHECK_INT_EQ(m.mem_total_bytes, 2048 * 1024);
	CHECK_INT_EQ(m.mem_available_bytes, 1024 * 1024);
	CHECK_INT_EQ(m.swap_free_bytes, 1024 * 1024);
	CHECK_INT_EQ(m.swap_in_pages, 10);
	CHECK_INT_EQ(m.swap_out_pages, 20);
	check_rmtree(root);
}

TEST(cgroup_v1_read,
     "cgroup v1's quota, period and throttled_time are read from the cpu controller")
{
	char *root = check_tmpdir();
	REQUIRE(root);
	put(root, "proc/self/cgroup", "12:memory:/x\n4:cpu,cpuacct:/docker/abc\n0::/\n");
	put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "50000\n");
	put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.stat",
	    "nr_periods 9\nnr_throttled 4\nthrottled_time 3000000\n");
	struct machine_reading m;
	machine_read(root, &m);
	CHECK_STR_EQ(m.cgroup_path, "/docker/abc");
	CHECK_INT_EQ(m.cgroup_cpu_quota_us, 50000);
	CHECK_INT_EQ(m.cgroup_nr_throttled, 4);
	CHECK_INT_EQ(m.cgroup_throttled_us, 3000);
	check_rmtree(root);
}

TEST(empty_root,
     "a root without /proc or /sys reads as absent facts and an empty hygiene, no error")
{
	char *root = check_tmpdir();
	REQUIRE(root);
	struct machine_reading m;
	machine_read(root, &m);
	CHECK_INT_EQ(m.cpus_online, -1);
	CHECK(isnan(m.load_1m));
	CHECK_STR_EQ(m.governor, "");
	CHECK_INT_EQ(m.stat_steal_ticks, -1);
	CHECK_INT_EQ(m.cgroup_cpu_quota_us, -1);
	json_t *h = hygiene_assess(&m, &m, 1.0);
	REQUIRE(h);
	CHECK_INT_EQ(json_object_size(h), 1); /* warnings, empty */
	CHECK_INT_EQ(json_array_size(json_object_get(h, "warnings")), 0);
	json_decref(h);
	check_rmtree(root);
}

TEST(moved_warnings,
     "steal, thermal and cgroup throttling and memory stalls during the run each warn")
{
	char *a = check_tmpdir(), *b = check_tmpdir();
	REQUIRE(a && b);
	fixture_write(a, 0);
	fixture_write(b, 1);
	struct machine_reading s, e;
	machine_read(a, &s);
	machine_read(b, &e);
	json_t *h = hygiene_assess(&s, &e, 1.0);
	REQUIRE(h);
	CHECK(fabs(json_real_value(json_object_get(h, "steal_pct")) - 14.0) < 1e-9);
	/* 1000 ticks: 700 idle, 10 iowait, 140 steal, so 150 busy */
	CHECK(fabs(json_real_value(json_object_get(h, "busy_pct")) - 15.0) < 1e-9);
	CHECK(fabs(json_real_value(json_object_get(h, "iowait_pct")) - 1.0) < 1e-9);
	CHECK_INT_EQ(json_integer_value(json_object_get(h, "thermal_throttles")), 2);
	CHECK_INT_EQ(json_integer_value(json_object_get(h, "cgroup_throttled_count")), 5);
	CHECK(fabs(json_real_value(json_object_get(h, "cgroup_throttled_s")) - 1.0) < 1e-9);
	CHECK(fabs(json_real_value(json_object_get(h, "cgroup_cpu_limit_cpus")) - 1.5) < 1e-9);
	CHECK(fabs(json_real_value(json_object_get(h, "psi_memory_some_pct")) - 30.0) < 1e-9);
	CHECK_INT_EQ(json_integer_value(json_object_get(h, "swap_in_pages")), 0);
	CHECK(json_is_true(json_object_get(h, "smt_active")));
	CHECK(has_warning(h, "steal"));
	CHECK(has_warning(h, "thermal_throttle"));
	CHECK(has_warning(h, "cgroup_throttle"));
	CHECK(has_warning(h, "memory_pressure"));
	CHECK(has_warning(h, "governor"));
	CHECK(has_warning(h, "busy")); /* load 3.5 over 2 CPUs */
	CHECK(!has_warning(h, "swapping"));
	json_decref(h);
	check_rmtree(a);
	check_rmtree(b);
}

TEST(quiet_machine,
     "an idle machine with a performance governor and nothing moving gives no warning")
{
	char *a = check_tmpdir();
	REQUIRE(a);
	fixture_write(a, 0);
	put(a, "proc/loadavg", "0.10 0.20 0.30 1/100 99\n");
	put(a, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
	struct machine_reading s;
	machine_read(a, &s);
	json_t *h = hygiene_assess(&s, &s, 1.0);
	REQUIRE(h);
	CHECK_INT_EQ(json_array_size(json_object_get(h, "warnings")), 0);
	CHECK_INT_EQ(json_integer_value(json_object_get(h, "cpus_online")), 2);
	CHECK(fabs(json_real_value(json_object_get(h, "steal_pct"))) < 1e-9);
	json_decref(h);
	check_rmtree(a);
}

TEST(json_round_trip,
     "a reading read back from its JSON form has the same facts, absent ones absent")
{
	char *a = check_tmpdir();
	REQUIRE(a);
	fixture_write(a, 1);
	struct machine_reading m, back;
	machine_read(a, &m);
	json_t *j = machine_to_json(&m);
	REQUIRE(j);
	CHECK(!json_object_get(j, "psi_io_some_us"));
	CHECK(!json_object_get(j, "turbo"));
	machine_from_json(j, &back);
	CHECK_INT_EQ(back.stat_steal_ticks, 180);
	CHECK_INT_EQ(back.cgroup_throttled_us, 1250000);
	CHECK_INT_EQ(back.psi_io_some_us, -1);
	CHECK(fabs(back.load_15m - 1.0) < 1e-9);
	CHECK_STR_EQ(back.cpu_model, m.cpu_model);
	CHECK_STR_EQ(back.turbo, "");
	json_decref(j);
	check_rmtree(a);
}

CHECK_MAIN()
