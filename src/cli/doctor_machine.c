/* doctor_machine: the machine sonde measures on (CPU, frequency, throttling,
 * load, memory, cgroup limits), the Pythons it finds and the GPU libraries
 * the loader resolves. */
#include "doctor.h"
#include "../probes/nvml_api.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <limits.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOCTOR_MAX_PYTHONS 32

/* The first line of path, without its newline, into buf; 0 or -1. */
static int line_read(const char *path, char *buf, size_t cap)
{
	if (file_read_small(path, buf, cap) <= 0)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The text after "key<spaces>:" in a key: value file (cpuinfo, meminfo). */
static int field_find(const char *text, const char *key, char *buf, size_t cap)
{
	size_t len = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, len))
			continue;
		const char *v = l + len;
		v += strspn(v, " \t");
		if (*v != ':')
			continue;
		v += 1 + strspn(v + 1, " \t");
		snprintf(buf, cap, "%.*s", (int)strcspn(v, "\n"), v);
		return 0;
	}
	return -1;
}

static int numa_nodes_count(void)
{
	DIR *d = opendir("/sys/devices/system/node");
	int n = 0;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, "node", 4) && isdigit((unsigned char)e->d_name[4]))
			n++;
	closedir(d);
	return n;
}

static void cpu_check(struct doctor_facts *facts)
{
	struct strbuf info = STRBUF_INIT;
	char model[160] = "unknown model", smt[16] = "", value[32];
	file_read_strbuf("/proc/cpuinfo", &info, 1 << 16);
	field_find(info.buf, "model name", model, sizeof(model));
	strbuf_release(&info);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int nodes = numa_nodes_count();
	line_read("/sys/devices/system/cpu/smt/active", smt, sizeof(smt));
	snprintf(value, sizeof(value), "%ld", online);
	doctor_fact_add(facts, DOCTOR_OK, "cpu", value,
			"CPU: %s, %ld online, SMT %s, %d NUMA node%s", model, online,
			!*smt	    ? "unknown"
			: atoi(smt) ? "on"
				    : "off",
			nodes ? nodes : 1, nodes > 1 ? "s" : "");
}

static void frequency_check(struct doctor_facts *facts)
{
	char gov[64], turbo[16];
	if (line_read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof(gov))) {
		doctor_fact_add(facts, DOCTOR_LIMITED, "governor", "",
				"frequency: no cpufreq here (usual in a VM): clock speed unknown");
		doctor_fix_set(facts, "timings may drift with the host's frequency; compare runs "
				      "with sonde bench");
		return;
	}
	int perf = !strcmp(gov, "performance");
	doctor_fact_add(facts, perf ? DOCTOR_OK : DOCTOR_LIMITED, "governor", gov,
			"frequency governor: %s", gov);
	if (!perf)
		doctor_fix_set(facts,
			       "for steady timings: sudo cpupower frequency-set -g performance");
	if (line_read("/sys/devices/system/cpu/intel_pstate/no_turbo", turbo, sizeof(turbo)))
		doctor_fact_add(facts, DOCTOR_OK, "turbo", "",
				"turbo: not reported (no intel_pstate)");
	else
		doctor_fact_add(facts, DOCTOR_OK, "turbo", atoi(turbo) ? "off" : "on", "turbo: %s",
				atoi(turbo) ? "off" : "on (timings vary with temperature)");
}

static void throttle_check(struct doctor_facts *facts)
{
	char buf[32];
	if (line_read("/sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", buf,
		      sizeof(buf)))
		return; /* absent: nothing to say */
	long n = atol(buf);
	doctor_fact_add(facts, n ? DOCTOR_LIMITED : DOCTOR_OK, "thermal_throttle", buf,
			"thermal throttling on cpu0: %ld time%s since boot", n, n == 1 ? "" : "s");
	if (n)
		doctor_fix_set(facts, "timings may be slowed by heat: check cooling, or rerun");
}

static void load_check(struct doctor_facts *facts)
{
	char buf[128];
	double l1 = 0;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	if (line_read("/proc/loadavg", buf, sizeof(buf)))
		return;
	l1 = atof(buf);
	buf[strcspn(buf, " ")] = '\0';
	int busy = online > 0 && l1 > (double)online * 0.75;
	doctor_fact_add(facts, busy ? DOCTOR_LIMITED : DOCTOR_OK, "load", buf,
			"load average %s over %ld CPUs", buf, online);
	if (busy)
		doctor_fix_set(facts, "the machine is busy: timings will be noisy");
}

static long long kib_field(const char *text, const char *key)
{
	char buf[64];
	return field_find(text, key, buf, sizeof(buf)) ? -1 : atoll(buf);
}

static void memory_check(struct doctor_facts *facts)
{
	struct strbuf mi = STRBUF_INIT;
	file_read_strbuf("/proc/meminfo", &mi, 1 << 16);
	long long total = kib_field(mi.buf, "MemTotal"), avail = kib_field(mi.buf, "MemAvailable");
	long long swap = kib_field(mi.buf, "SwapTotal"), swap_free = kib_field(mi.buf, "SwapFree");
	strbuf_release(&mi);
	char value[32];
	snprintf(value, sizeof(value), "%lld", total);
	doctor_fact_add(facts, DOCTOR_OK, "memory", value,
			"memory: %.1f GiB, %.1f GiB available; swap %.1f GiB, %.1f GiB used",
			total / 1048576.0, avail / 1048576.0, swap / 1048576.0,
			(swap - swap_free) / 1048576.0);
}

/* cgroup v1 (the cpu controller's line) or v2 (one "0::/path" line). */
static void cgroup_check(struct doctor_facts *facts)
{
	struct strbuf cg = STRBUF_INIT;
	char path[512], buf[128];
	file_read_strbuf("/proc/self/cgroup", &cg, 1 << 14);
	const char *v2 = strstr(cg.buf, "0::");
	const char *v1 = strstr(cg.buf, ":cpu,");
	if (!v1)
		v1 = strstr(cg.buf, ":cpu:");
	long long quota = -1, period = 0, throttled = -1;
	if (v1) { /* a hybrid system also has a "0::" line, without the cpu controller */
		if (!line_read("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", buf, sizeof(buf)) ||
		    !line_read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", buf, sizeof(buf)))
			quota = atoll(buf);
		if (!line_read("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", buf, sizeof(buf)) ||
		    !line_read("/sys/fs/cgroup/cpu/cpu.cfs_period_us", buf, sizeof(buf)))
			period = atoll(buf);
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu,cpuacct/cpu.stat");
	} else if (v2 && (v2 == cg.buf || v2[-1] == '\n')) {
		const char *p = v2 + 3;
		snprintf(path, sizeof(path), "/sys/fs/cgroup%.*s/cpu.max", (int)strcspn(p, "\n"),
			 p);
		if (!line_read(path, buf, sizeof(buf)) && strncmp(buf, "max", 3)) {
			quota = atoll(buf);
			period = atoll(strchr(buf, ' ') ? strchr(buf, ' ') + 1 : "0");
		}
		snprintf(path, sizeof(path), "/sys/fs/cgroup%.*s/cpu.stat", (int)strcspn(p, "\n"),
			 p);
	} else {
		path[0] = '\0';
	}
	strbuf_reset(&cg);
	if (path[0] && file_read_strbuf(path, &cg, 1 << 14) > 0) {
		const char *t = strstr(cg.buf, "nr_throttled ");
		throttled = t ? atoll(t + 13) : -1;
	}
	strbuf_release(&cg);
	if (quota <= 0 || period <= 0) {
		doctor_fact_add(facts, DOCTOR_OK, "cgroup_cpu", "max", "cgroup CPU limit: none%s",
				path[0] ? "" : " (no cgroup cpu controller seen)");
		return;
	}
	snprintf(buf, sizeof(buf), "%.2f", (double)quota / (double)period);
	doctor_fact_add(facts, throttled > 0 ? DOCTOR_LIMITED : DOCTOR_OK, "cgroup_cpu", buf,
			"cgroup CPU limit: %s CPUs, throttled %lld time%s", buf,
			throttled < 0 ? 0 : throttled, throttled == 1 ? "" : "s");
	if (throttled > 0)
		doctor_fix_set(facts,
			       "the container's CPU quota stalls the program: off-CPU time "
			       "includes the throttling; raise the limit to measure without it");
}

void doctor_check_machine(struct doctor_facts *facts)
{
	cpu_check(facts);
	frequency_check(facts);
	throttle_check(facts);
	load_check(facts);
	memory_check(facts);
	cgroup_check(facts);
}

/* ---- Python ---- */

/* "3.12" when name is python3.N exactly (no python3.12-config). */
static int python_name_is(const char *name)
{
	if (strncmp(name, "python3.", 8) || !isdigit((unsigned char)name[8]))
		return 0;
	return name[8 + strspn(name + 8, "0123456789")] == '\0';
}

struct python_seen {
	char *version[DOCTOR_MAX_PYTHONS], *path[DOCTOR_MAX_PYTHONS], *real[DOCTOR_MAX_PYTHONS];
	size_t n;
};

static void python_dir_scan(struct python_seen *seen, const char *dir)
{
	size_t len = strlen(dir);
	if (len >= 13 && !strcmp(dir + len - 13, "/.pyenv/shims"))
		return; /* scripts that pick a version: the versions are scanned */
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && seen->n < DOCTOR_MAX_PYTHONS;) {
		if (!python_name_is(e->d_name))
			continue;
		struct strbuf path = STRBUF_INIT;
		strbuf_addf(&path, "%s/%s", dir, e->d_name);
		char *real = realpath(path.buf, NULL);
		int dup = !real || access(path.buf, X_OK);
		for (size_t i = 0; !dup && i < seen->n; i++)
			dup = !strcmp(seen->real[i], real);
		if (dup) {
			free(real);
			strbuf_release(&path);
			continue;
		}
		seen->real[seen->n] = real;
		seen->version[seen->n] = xstrdup(e->d_name + 6);
		seen->path[seen->n++] = strbuf_detach(&path);
	}
	closedir(d);
}

static void pyenv_scan(struct python_seen *seen)
{
	const char *home = getenv("HOME");
	struct strbuf root = STRBUF_INIT;
	strbuf_addf(&root, "%s/.pyenv/versions", home ? home : "");
	DIR *d = home ? opendir(root.buf) : NULL;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		struct strbuf bin = STRBUF_INIT;
		strbuf_addf(&bin, "%s/%s/bin", root.buf, e->d_name);
		python_dir_scan(seen, bin.buf);
		strbuf_release(&bin);
	}
	if (d)
		closedir(d);
	strbuf_release(&root);
}

void doctor_check_python(struct doctor_facts *facts)
{
	struct python_seen seen = { 0 };
	const char *path_env = getenv("PATH");
	char *dirs = xstrdup(path_env ? path_env : "");
	for (char *save = NULL, *dir = strtok_r(dirs, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save))
		python_dir_scan(&seen, *dir ? dir : ".");
	free(dirs);
	pyenv_scan(&seen);
	if (!seen.n) {
		doctor_fact_add(facts, DOCTOR_LIMITED, "python", "",
				"Python: no python3.X on PATH or under ~/.pyenv/versions");
		doctor_fix_set(facts, "Python stacks need CPython 3.8 to 3.13");
	}
	for (size_t i = 0; i < seen.n; i++) {
		int minor = atoi(seen.version[i] + 2);
		int known = minor >= 8 && minor <= 13;
		doctor_fact_add(facts, known ? DOCTOR_OK : DOCTOR_LIMITED, "python", seen.path[i],
				"Python %s at %s%s", seen.version[i], seen.path[i],
				known ? "" : ": sonde reads CPython 3.8 to 3.13 only");
		free(seen.version[i]);
		free(seen.path[i]);
		free(seen.real[i]);
	}
}

/* ---- GPU libraries ---- */

static void library_check(struct doctor_facts *facts, const char *key, const char *name,
			  const char *what)
{
	/* Never closed: unloading a C++ library (CUPTI, NCCL) would unload
	 * libstdc++ with it and leak its exception pool. */
	if (dlopen(name, RTLD_LAZY | RTLD_LOCAL)) {
		doctor_fact_add(facts, DOCTOR_OK, key, name, "%s: %s found", what, name);
		return;
	}
	doctor_fact_add(facts, DOCTOR_LIMITED, key, "", "%s: %s not found", what, name);
}

void doctor_check_gpu(struct doctor_facts *facts)
{
	struct nvml_api api;
	struct strbuf why = STRBUF_INIT;
	if (nvml_api_load(&api, "libnvidia-ml.so.1", &why)) {
		doctor_fact_add(
		    facts, DOCTOR_LIMITED, "nvml", "",
		    "NVML: libnvidia-ml.so.1 not found (no NVIDIA driver: no GPU metrics)");
	} else {
		unsigned int n = 0;
		int rc = api.init();
		if (rc == NVML_SUCCESS)
			api.count(&n);
		if (rc == NVML_SUCCESS) {
			doctor_fact_add(facts, DOCTOR_OK, "nvml", "libnvidia-ml.so.1",
					"NVML: found, %u GPU%s visible", n, n == 1 ? "" : "s");
			api.shutdown();
		} else {
			doctor_fact_add(facts, DOCTOR_LIMITED, "nvml", "libnvidia-ml.so.1",
					"NVML: found, but it does not start (%s)",
					nvml_api_error(&api, rc));
		}
	}
	strbuf_release(&why);
	library_check(facts, "cupti", "libcupti.so.13", "CUPTI (kernel timings)");
	library_check(facts, "nccl", "libnccl.so.2", "NCCL");
}
