/* machine: the readers of /proc and /sys behind `sonde doctor` and every
 * run's hygiene facts, and a reading's JSON form for the recording. */
#include "machine.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MACHINE_TEXT_MAX (1 << 16)

/* root + path, then the file's text into sb (reset first); bytes or -errno. */
static ssize_t text_read(const char *root, const char *path, struct strbuf *sb)
{
	struct strbuf full = STRBUF_INIT;
	strbuf_addf(&full, "%s%s", root, path);
	strbuf_reset(sb);
	ssize_t n = file_read_strbuf(full.buf, sb, MACHINE_TEXT_MAX);
	strbuf_release(&full);
	return n;
}

/* The first line of root + path, without its newline, into buf; 0 or -1. */
static int line_read(const char *root, const char *path, char *buf, size_t cap)
{
	struct strbuf sb = STRBUF_INIT;
	int rc = -1;
	if (text_read(root, path, &sb) > 0 && sb.len) {
		snprintf(buf, cap, "%.*s", (int)strcspn(sb.buf, "\n"), sb.buf);
		rc = 0;
	}
	strbuf_release(&sb);
	return rc;
}

static int64_t int_read(const char *root, const char *path)
{
	char buf[64];
	if (line_read(root, path, buf, sizeof(buf)) || !isdigit((unsigned char)buf[0]))
		return -1;
	return strtoll(buf, NULL, 10);
}

/* The text after "key<spaces>:" (cpuinfo, meminfo) or "key " (vmstat,
 * cpu.stat) at the start of a line of text; NULL when there is none. */
static const char *field_find(const char *text, const char *key)
{
	size_t len = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, len))
			continue;
		const char *v = l + len;
		v += strspn(v, " \t");
		if (*v == ':')
			v += 1 + strspn(v + 1, " \t");
		else if (v == l + len)
			continue; /* a longer key: "MemTotalX" */
		return v;
	}
	return NULL;
}

static int64_t field_int(const char *text, const char *key)
{
	const char *v = field_find(text, key);
	return v && isdigit((unsigned char)*v) ? strtoll(v, NULL, 10) : -1;
}

static int64_t kib_bytes(const char *text, const char *key)
{
	int64_t kib = field_int(text, key);
	return kib < 0 ? -1 : kib * 1024;
}

static void cpuinfo_read(const char *root, struct machine_reading *m, struct strbuf *sb)
{
	text_read(root, "/proc/cpuinfo", sb);
	const char *v = field_find(sb->buf, "model name");
	if (v)
		snprintf(m->cpu_model, sizeof(m->cpu_model), "%.*s", (int)strcspn(v, "\n"), v);
}

static void cpufreq_read(const char *root, struct machine_reading *m)
{
	line_read(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", m->governor,
		  sizeof(m->governor));
	int64_t no_turbo = int_read(root, "/sys/devices/system/cpu/intel_pstate/no_turbo");
	if (no_turbo >= 0)
		snprintf(m->turbo, sizeof(m->turbo), "%s", no_turbo ? "off" : "on");
	m->smt_active = int_read(root, "/sys/devices/system/cpu/smt/active");
}

static int64_t add_known(int64_t sum, int64_t v) { return v < 0 ? sum : (sum < 0 ? 0 : sum) + v; }

/* Every cpuN: counted (the CPUs under a fixture root) and its throttle counts summed. */
static void cpus_read(const char *root, struct machine_reading *m)
{
	struct strbuf dir = STRBUF_INIT, path = STRBUF_INIT;
	strbuf_addf(&dir, "%s/sys/devices/system/cpu", root);
	DIR *d = opendir(dir.buf);
	int64_t cpus = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (strncmp(e->d_name, "cpu", 3) || !isdigit((unsigned char)e->d_name[3]))
			continue;
		cpus++;
		static const char *const names[] = {"core_throttle_count",
						    "package_throttle_count"};
		int64_t *sums[] = {&m->thermal_core_throttles, &m->thermal_package_throttles};
		for (int k = 0; k < 2; k++) {
			strbuf_reset(&path);
			strbuf_addf(&path, "/sys/devices/system/cpu/%s/thermal_throttle/%s",
				    e->d_name, names[k]);
			*sums[k] = add_known(*sums[k], int_read(root, path.buf));
		}
	}
	if (d)
		closedir(d);
	m->cpus_online = *root ? (cpus ? cpus : -1) : sysconf(_SC_NPROCESSORS_ONLN);
	strbuf_reset(&dir);
	strbuf_addf(&dir, "%s/sys/devices/system/node", root);
	d = opendir(dir.buf);
	for (struct dirent *e; d && (e = readdir(d));)
		if (!strncmp(e->d_name, "node", 4) && isdigit((unsigned char)e->d_name[4]))
			m->numa_nodes = add_known(m->numa_nodes, 1);
	if (d)
		closedir(d);
	strbuf_release(&dir);
	strbuf_release(&path);
}

static void loadavg_read(const char *root, struct machine_reading *m)
{
	char buf[128];
	double l1, l5, l15;
	if (line_read(root, "/proc/loadavg", buf, sizeof(buf)) ||
	    sscanf(buf, "%lf %lf %lf", &l1, &l5, &l15) != 3)
		return;
	m->load_1m = l1;
	m->load_5m = l5;
	m->load_15m = l15;
}

/* /proc/stat's "cpu " line: user nice system idle iowait irq softirq steal ... */
static void stat_read(const char *root, struct machine_reading *m, struct strbuf *sb)
{
	if (text_read(root, "/proc/stat", sb) <= 0 || strncmp(sb->buf, "cpu ", 4))
		return;
	const char *p = sb->buf + 4;
	int64_t total = 0, col[10];
	int n = 0;
	while (n < 10) {
		char *end;
		p += strspn(p, " ");
		if (!isdigit((unsigned char)*p))
			break;
		col[n] = strtoll(p, &end, 10);
		/* guest and guest_nice (9th, 10th) are already in user and nice */
		if (n < 8)
			total += col[n];
		n++;
		p = end;
	}
	m->procs_running = field_int(sb->buf, "procs_running");
	m->procs_blocked = field_int(sb->buf, "procs_blocked");
	if (n < 8)
		return;
	m->stat_steal_ticks = col[7];
	m->stat_idle_ticks = col[3];
	m->stat_iowait_ticks = col[4];
	m->stat_total_ticks = total;
}

static void memory_read(const char *root, struct machine_reading *m, struct strbuf *sb)
{
	text_read(root, "/proc/meminfo", sb);
	m->mem_total_bytes = kib_bytes(sb->buf, "MemTotal");
	m->mem_available_bytes = kib_bytes(sb->buf, "MemAvailable");
	m->swap_total_bytes = kib_bytes(sb->buf, "SwapTotal");
	m->swap_free_bytes = kib_bytes(sb->buf, "SwapFree");
	text_read(root, "/proc/vmstat", sb);
	m->swap_in_pages = field_int(sb->buf, "pswpin");
	m->swap_out_pages = field_int(sb->buf, "pswpout");
}

/* "some avg10=.. avg60=.. avg300=.. total=N" and the same for "full". */
static int64_t psi_total(const char *text, const char *kind)
{
	const char *l = field_find(text, kind);
	const char *t = l ? strstr(l, "total=") : NULL;
	if (!t || (strchr(l, '\n') && t > strchr(l, '\n')))
		return -1;
	return isdigit((unsigned char)t[6]) ? strtoll(t + 6, NULL, 10) : -1;
}

static void pressure_read(const char *root, struct machine_reading *m, struct strbuf *sb)
{
	if (text_read(root, "/proc/pressure/cpu", sb) > 0)
		m->psi_cpu_some_us = psi_total(sb->buf, "some");
	if (text_read(root, "/proc/pressure/memory", sb) > 0) {
		m->psi_memory_some_us = psi_total(sb->buf, "some");
		m->psi_memory_full_us = psi_total(sb->buf, "full");
	}
	if (text_read(root, "/proc/pressure/io", sb) > 0)
		m->psi_io_some_us = psi_total(sb->buf, "some");
}

/* cgroup v1 (the cpu controller's line) or v2 (one "0::/path" line). */
static void cgroup_read(const char *root, struct machine_reading *m, struct strbuf *sb)
{
	struct strbuf path = STRBUF_INIT;
	char buf[128];
	text_read(root, "/proc/self/cgroup", sb);
	const char *v2 = strstr(sb->buf, "0::");
	const char *v1 = strstr(sb->buf, ":cpu,");
	if (!v1)
		v1 = strstr(sb->buf, ":cpu:");
	if (v1) { /* a hybrid system also has a "0::" line, without the cpu controller */
		const char *p = strchr(v1 + 1, ':');
		p = p ? p + 1 : "";
		snprintf(m->cgroup_path, sizeof(m->cgroup_path), "%.*s", (int)strcspn(p, "\n"), p);
		static const char *const dirs[] = {"/sys/fs/cgroup/cpu,cpuacct",
						   "/sys/fs/cgroup/cpu"};
		for (int k = 0; k < 2 && m->cgroup_cpu_period_us < 0; k++) {
			strbuf_reset(&path);
			strbuf_addf(&path, "%s/cpu.cfs_quota_us", dirs[k]);
			int64_t q = int_read(root, path.buf); /* -1: no limit, or absent */
			strbuf_reset(&path);
			strbuf_addf(&path, "%s/cpu.cfs_period_us", dirs[k]);
			m->cgroup_cpu_period_us = int_read(root, path.buf);
			m->cgroup_cpu_quota_us = q > 0 ? q : -1;
			strbuf_reset(&path);
			strbuf_addf(&path, "%s/cpu.stat", dirs[k]);
		}
	} else if (v2 && (v2 == sb->buf || v2[-1] == '\n')) {
		const char *p = v2 + 3;
		int len = (int)strcspn(p, "\n");
		snprintf(m->cgroup_path, sizeof(m->cgroup_path), "%.*s", len, p);
		strbuf_addf(&path, "/sys/fs/cgroup%.*s/cpu.max", len, p);
		if (!line_read(root, path.buf, buf, sizeof(buf)) &&
		    isdigit((unsigned char)buf[0])) {
			m->cgroup_cpu_quota_us = strtoll(buf, NULL, 10);
			m->cgroup_cpu_period_us =
			    strchr(buf, ' ') ? atoll(strchr(buf, ' ') + 1) : -1;
		}
		strbuf_reset(&path);
		strbuf_addf(&path, "/sys/fs/cgroup%.*s/cpu.stat", len, p);
	}
	if (path.len && text_read(root, path.buf, sb) > 0) {
		m->cgroup_nr_throttled = field_int(sb->buf, "nr_throttled");
		m->cgroup_throttled_us = field_int(sb->buf, "throttled_usec");
		int64_t ns = field_int(sb->buf, "throttled_time"); /* v1: nanoseconds */
		if (m->cgroup_throttled_us < 0 && ns >= 0)
			m->cgroup_throttled_us = ns / 1000;
	}
	if (m->cgroup_cpu_period_us <= 0 || m->cgroup_cpu_quota_us <= 0)
		m->cgroup_cpu_quota_us = m->cgroup_cpu_period_us = -1;
	strbuf_release(&path);
}

/* Every field, for the JSON form: its key, where it is, what it is. */
enum field_type { FIELD_INT, FIELD_REAL, FIELD_TEXT };
#define F(name, type)                                                                              \
	{                                                                                          \
#name, offsetof(struct machine_reading, name), type,                               \
		    sizeof(((struct machine_reading *)0)->name)                                    \
	}
static const struct {
	const char *key;
	size_t off;
	enum field_type type;
	size_t size;
} fields[] = {
    F(cpus_online, FIELD_INT),
    F(load_1m, FIELD_REAL),
    F(load_5m, FIELD_REAL),
    F(load_15m, FIELD_REAL),
    F(cpu_model, FIELD_TEXT),
    F(governor, FIELD_TEXT),
    F(turbo, FIELD_TEXT),
    F(smt_active, FIELD_INT),
    F(numa_nodes, FIELD_INT),
    F(thermal_core_throttles, FIELD_INT),
    F(thermal_package_throttles, FIELD_INT),
    F(cgroup_path, FIELD_TEXT),
    F(cgroup_cpu_quota_us, FIELD_INT),
    F(cgroup_cpu_period_us, FIELD_INT),
    F(cgroup_nr_throttled, FIELD_INT),
    F(cgroup_throttled_us, FIELD_INT),
    F(psi_cpu_some_us, FIELD_INT),
    F(psi_memory_some_us, FIELD_INT),
    F(psi_memory_full_us, FIELD_INT),
    F(psi_io_some_us, FIELD_INT),
    F(stat_steal_ticks, FIELD_INT),
    F(stat_total_ticks, FIELD_INT),
    F(stat_idle_ticks, FIELD_INT),
    F(stat_iowait_ticks, FIELD_INT),
    F(procs_running, FIELD_INT),
    F(procs_blocked, FIELD_INT),
    F(mem_total_bytes, FIELD_INT),
    F(mem_available_bytes, FIELD_INT),
    F(swap_total_bytes, FIELD_INT),
    F(swap_free_bytes, FIELD_INT),
    F(swap_in_pages, FIELD_INT),
    F(swap_out_pages, FIELD_INT),
};
#undef F
#define FIELDS_N (sizeof(fields) / sizeof(fields[0]))

/* Every field absent. */
static void reading_clear(struct machine_reading *m)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < FIELDS_N; i++) {
		char *p = (char *)m + fields[i].off;
		if (fields[i].type == FIELD_INT)
			*(int64_t *)(void *)p = -1;
		else if (fields[i].type == FIELD_REAL)
			*(double *)(void *)p = NAN;
	}
}

void machine_read(const char *root, struct machine_reading *out)
{
	struct strbuf sb = STRBUF_INIT;
	root = root ? root : "";
	reading_clear(out);
	cpus_read(root, out);
	cpuinfo_read(root, out, &sb);
	cpufreq_read(root, out);
	loadavg_read(root, out);
	stat_read(root, out, &sb);
	memory_read(root, out, &sb);
	pressure_read(root, out, &sb);
	cgroup_read(root, out, &sb);
	strbuf_release(&sb);
}

void machine_read_pressure(const char *root, struct machine_reading *out)
{
	struct strbuf sb = STRBUF_INIT;
	root = root ? root : "";
	reading_clear(out);
	stat_read(root, out, &sb);
	pressure_read(root, out, &sb);
	cgroup_read(root, out, &sb);
	strbuf_release(&sb);
}

json_t *machine_to_json(const struct machine_reading *m)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < FIELDS_N; i++) {
		const char *p = (const char *)m + fields[i].off;
		json_t *v = NULL;
		if (fields[i].type == FIELD_INT && *(const int64_t *)(const void *)p >= 0)
			v = json_integer(*(const int64_t *)(const void *)p);
		else if (fields[i].type == FIELD_REAL && !isnan(*(const double *)(const void *)p))
			v = json_real(*(const double *)(const void *)p);
		else if (fields[i].type == FIELD_TEXT && *p)
			v = json_stringn(p, strnlen(p, fields[i].size)); /* NULL: not UTF-8 */
		if (v)
			json_object_set_new(o, fields[i].key, v);
	}
	return o;
}

void machine_from_json(json_t *obj, struct machine_reading *out)
{
	reading_clear(out);
	for (size_t i = 0; i < FIELDS_N; i++) {
		char *p = (char *)out + fields[i].off;
		json_t *v = json_object_get(obj, fields[i].key);
		if (fields[i].type == FIELD_INT && json_is_integer(v) && json_integer_value(v) >= 0)
			*(int64_t *)(void *)p = json_integer_value(v);
		else if (fields[i].type == FIELD_REAL && json_is_number(v))
			*(double *)(void *)p = json_number_value(v);
		else if (fields[i].type == FIELD_TEXT && json_is_string(v))
			snprintf(p, fields[i].size, "%s", json_string_value(v));
	}
}
