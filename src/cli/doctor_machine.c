/* doctor_machine: the machine sonde measures on (CPU, frequency, throttling,
 * load, memory, cgroup limits), the Pythons it finds and the GPU libraries
 * the loader resolves. */
#include "doctor.h"
#include "../probes/nvml_api.h"
#include "../probes/nvml_topo.h"
#include "../target/machine.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOCTOR_MAX_PYTHONS 32

static void cpu_check(struct doctor_facts *facts, const struct machine_reading *m)
{
	char value[32];
	snprintf(value, sizeof(value), "%lld", (long long)m->cpus_online);
	doctor_fact_add(
	    facts, DOCTOR_OK, "cpu", value, "CPU: %s, %lld online, SMT %s, %lld NUMA node%s",
	    *m->cpu_model ? m->cpu_model : "unknown model", (long long)m->cpus_online,
	    m->smt_active < 0 ? "unknown"
	    : m->smt_active   ? "on"
			      : "off",
	    (long long)(m->numa_nodes > 0 ? m->numa_nodes : 1), m->numa_nodes > 1 ? "s" : "");
}

static void frequency_check(struct doctor_facts *facts, const struct machine_reading *m)
{
	if (!*m->governor) {
		doctor_fact_add(facts, DOCTOR_LIMITED, "governor", "",
				"frequency: no cpufreq here (usual in a VM): clock speed unknown");
		doctor_fix_set(facts, "timings may drift with the host's frequency; compare runs "
				      "with sonde bench");
		return;
	}
	int perf = !strcmp(m->governor, "performance");
	doctor_fact_add(facts, perf ? DOCTOR_OK : DOCTOR_LIMITED, "governor", m->governor,
			"frequency governor: %s", m->governor);
	if (!perf)
		doctor_fix_set(facts,
			       "for steady timings: sudo cpupower frequency-set -g performance");
	if (!*m->turbo)
		doctor_fact_add(facts, DOCTOR_OK, "turbo", "",
				"turbo: not reported (no intel_pstate)");
	else
		doctor_fact_add(facts, DOCTOR_OK, "turbo", m->turbo, "turbo: %s",
				strcmp(m->turbo, "on") ? "off"
						       : "on (timings vary with temperature)");
}

static void throttle_check(struct doctor_facts *facts, const struct machine_reading *m)
{
	char buf[32];
	long long n = m->thermal_core_throttles;
	if (n < 0)
		return; /* absent: nothing to say */
	snprintf(buf, sizeof(buf), "%lld", n);
	doctor_fact_add(facts, n ? DOCTOR_LIMITED : DOCTOR_OK, "thermal_throttle", buf,
			"thermal throttling: %lld time%s since boot, all CPUs together", n,
			n == 1 ? "" : "s");
	if (n)
		doctor_fix_set(facts, "timings may be slowed by heat: check cooling, or rerun");
}

static void load_check(struct doctor_facts *facts, const struct machine_reading *m)
{
	char buf[32];
	if (isnan(m->load_1m))
		return;
	snprintf(buf, sizeof(buf), "%.2f", m->load_1m);
	int busy = m->cpus_online > 0 && m->load_1m > (double)m->cpus_online * 0.75;
	doctor_fact_add(facts, busy ? DOCTOR_LIMITED : DOCTOR_OK, "load", buf,
			"load average %s over %lld CPUs", buf, (long long)m->cpus_online);
	if (busy)
		doctor_fix_set(facts, "the machine is busy: timings will be noisy");
}

/* The hypervisor's share of the CPU time since boot (a VM's steal time). */
static void steal_check(struct doctor_facts *facts, const struct machine_reading *m)
{
	char buf[32];
	if (m->stat_steal_ticks < 0 || m->stat_total_ticks <= 0)
		return;
	double pct = 100.0 * (double)m->stat_steal_ticks / (double)m->stat_total_ticks;
	snprintf(buf, sizeof(buf), "%.2f", pct);
	doctor_fact_add(facts, pct >= 5 ? DOCTOR_LIMITED : DOCTOR_OK, "steal", buf,
			"steal time: %s%% of the CPU time since boot went to other guests of "
			"the hypervisor",
			buf);
	if (pct >= 5)
		doctor_fix_set(facts, "wall times here depend on the host's load: repeat runs "
				      "(sonde run --repeat, sonde bench) and compare medians");
}

static void memory_check(struct doctor_facts *facts, const struct machine_reading *m)
{
	char value[32];
	const double gib = 1024.0 * 1024 * 1024;
	snprintf(value, sizeof(value), "%lld", (long long)(m->mem_total_bytes / 1024));
	doctor_fact_add(facts, DOCTOR_OK, "memory", value,
			"memory: %.1f GiB, %.1f GiB available; swap %.1f GiB, %.1f GiB used",
			(double)m->mem_total_bytes / gib, (double)m->mem_available_bytes / gib,
			(double)m->swap_total_bytes / gib,
			(double)(m->swap_total_bytes - m->swap_free_bytes) / gib);
}

static void cgroup_check(struct doctor_facts *facts, const struct machine_reading *m)
{
	char buf[32];
	long long throttled = m->cgroup_nr_throttled;
	if (m->cgroup_cpu_quota_us <= 0) {
		doctor_fact_add(facts, DOCTOR_OK, "cgroup_cpu", "max", "cgroup CPU limit: none%s",
				*m->cgroup_path ? "" : " (no cgroup cpu controller seen)");
		return;
	}
	snprintf(buf, sizeof(buf), "%.2f",
		 (double)m->cgroup_cpu_quota_us / (double)m->cgroup_cpu_period_us);
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
	struct machine_reading m;
	machine_read(NULL, &m);
	cpu_check(facts, &m);
	frequency_check(facts, &m);
	throttle_check(facts, &m);
	load_check(facts, &m);
	steal_check(facts, &m);
	memory_check(facts, &m);
	cgroup_check(facts, &m);
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

/* "GPU 0-1 NV4, 0-2 SYS": each unordered pair's link (nvml_topo.h). */
static void topology_check(struct doctor_facts *facts, const struct nvml_api *api,
			   unsigned int count)
{
	struct nvml_gpu *g;
	unsigned int n = nvml_gpus_open(api, count, &g);
	if (n < 2) {
		free(g);
		return;
	}
	char(*link)[NVML_LINK_NAME_MAX] = xcalloc((size_t)n * n, sizeof(*link));
	nvml_topology(api, g, n, link);
	struct strbuf sb = STRBUF_INIT;
	int pcie_only = 1;
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int b = a + 1; b < n; b++) {
			const char *l = link[a * n + b];
			if (sb.len)
				strbuf_addstr(&sb, ", ");
			strbuf_addf(&sb, "%u-%u %s", g[a].index, g[b].index, *l ? l : "?");
			if (l[0] == 'N' && l[1] == 'V')
				pcie_only = 0;
		}
	doctor_fact_add(facts, DOCTOR_OK, "gpu_topology", sb.buf, "GPU topology: %s%s", sb.buf,
			pcie_only ? " (no NVLink: GPU-to-GPU copies cross PCIe or the host)" : "");
	strbuf_release(&sb);
	free(link);
	free(g);
}

void doctor_check_gpu(struct doctor_facts *facts)
{
	struct nvml_api api;
	struct strbuf why = STRBUF_INIT;
	unsigned int n = 0;
	if (nvml_api_open(&api, &n, &why)) {
		doctor_fact_add(facts, DOCTOR_LIMITED, "nvml", "", "NVML: %s (no GPU metrics)",
				why.buf);
		doctor_fix_set(facts, "on a machine with an NVIDIA GPU, install its driver "
				      "(libnvidia-ml.so.1 comes with it) for GPU utilisation, "
				      "memory, clocks and topology; CUDA kernel timings need CUPTI "
				      "only");
	} else {
		doctor_fact_add(facts, DOCTOR_OK, "nvml", "libnvidia-ml.so.1",
				"NVML: found, %u GPU%s visible", n, n == 1 ? "" : "s");
		topology_check(facts, &api, n);
		api.shutdown();
	}
	strbuf_release(&why);
	library_check(facts, "cupti", "libcupti.so.13", "CUPTI (kernel timings)");
	library_check(facts, "nccl", "libnccl.so.2", "NCCL");
}
