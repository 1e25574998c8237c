/* perf_events: names of perf's generic events and a check that one opens. */
#include "perf_events.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
};

#define NEVENTS (sizeof(events) / sizeof(events[0]))

int perf_event_lookup(const char *name, uint32_t *type, uint64_t *config)
{
	for (size_t i = 0; i < NEVENTS; i++)
		if (!strcmp(events[i].name, name)) {
			*type = events[i].type;
			*config = events[i].config;
			return 0;
		}
	return -1;
}

int perf_event_open_cloexec(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

int perf_events_software(void)
{
	const char *want = getenv("SONDE_COUNTERS_EVENTS");
	return want && !strcmp(want, "software");
}

void perf_event_names(struct strbuf *sb)
{
	for (size_t i = 0; i < NEVENTS; i++)
		strbuf_addf(sb, "%s%s", i ? ", " : "", events[i].name);
}

void perf_event_attr_init(struct perf_event_attr *attr, uint32_t type, uint64_t config)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = config;
}

int perf_event_try_open(uint32_t type, uint64_t config)
{
	struct perf_event_attr a;
	perf_event_attr_init(&a, type, config);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	long fd = perf_event_open_cloexec(&a, 0, -1, -1);
	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

int perf_event_check(const char *name, struct strbuf *why)
{
	uint32_t type;
	uint64_t config;
	if (perf_event_lookup(name, &type, &config)) {
		strbuf_addf(why, "--event '%s' is not an event sonde knows; known: ", name);
		perf_event_names(why);
		return -1;
	}
	int err = perf_event_try_open(type, config);
	if (!err)
		return 0;
	strbuf_addf(why, "--event %s cannot be opened here (%s)", name,
		    err == ENOENT || err == EOPNOTSUPP
			? "no hardware counter for it: this machine, often a VM, exposes no PMU"
			: strerror(err));
	strbuf_addstr(why, "; events that open here: ");
	int any = 0;
	uint64_t seen_hw = 0, seen_sw = 0;
	for (size_t i = 0; i < NEVENTS; i++) {
		uint64_t *seen = events[i].type == PERF_TYPE_HARDWARE ? &seen_hw : &seen_sw;
		if (*seen & (1ULL << events[i].config) ||
		    perf_event_try_open(events[i].type, events[i].config))
			continue;
		*seen |= 1ULL << events[i].config; /* one name per event */
		strbuf_addf(why, "%s%s", any ? ", " : "", events[i].name);
		any = 1;
	}
	if (!any)
		strbuf_addstr(why, "none");
	return -1;
}

int perf_event_paranoid(void)
{
	char buf[32];
	if (file_read_small("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)) <= 0)
		return 99;
	return atoi(buf);
}

const char *perf_errno_name(int err)
{
	switch (err) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOSYS: return "ENOSYS";
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	default: return strerror(err);
	}
}

void perf_event_explain_refusal(int err, const struct perf_event_attr *attr, const char *name,
				struct strbuf *why)
{
	int hardware = attr && (attr->type == PERF_TYPE_HARDWARE ||
				attr->type == PERF_TYPE_HW_CACHE || attr->type == PERF_TYPE_RAW);
	int in_kernel = attr && (attr->type == PERF_TYPE_TRACEPOINT || !attr->exclude_kernel);
	int paranoid = perf_event_paranoid();
	char setting[96];
	if (hardware && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)) {
		strbuf_addf(why, "this machine exposes no hardware counters to perf_event_open "
				 "(%s: %s); common in virtual machines without a virtual PMU",
			    name ? name : "the event", strerror(err));
		return;
	}
	if (paranoid == 99)
		snprintf(setting, sizeof(setting), "/proc/sys/kernel/perf_event_paranoid is unreadable");
	else
		snprintf(setting, sizeof(setting), "kernel.perf_event_paranoid is %d", paranoid);
	int refused = (err == EACCES || err == EPERM) && geteuid() != 0;
	if (err == ENOSYS) {
		strbuf_addf(why, "perf_event_open is not available (ENOSYS): a seccomp filter (a "
				 "container runtime's default profile) blocks it, or the kernel lacks "
				 "CONFIG_PERF_EVENTS (%s); run the container with --security-opt "
				 "seccomp=unconfined and --cap-add PERFMON, or profile on the host",
			    setting);
	} else if (refused && in_kernel && paranoid > 1 && name) {
		strbuf_addf(why, "perf_event_open was refused (%s) for %s, which counts in the kernel "
				 "(%s); run `sysctl kernel.perf_event_paranoid=1`, or run sonde as root "
				 "or with CAP_PERFMON",
			    perf_errno_name(err), name, setting);
	} else if (refused && paranoid > 2) {
		strbuf_addf(why, "perf_event_open was refused (%s): %s; run `sysctl "
				 "kernel.perf_event_paranoid=1`, or run sonde as root or with CAP_PERFMON",
			    perf_errno_name(err), setting);
	} else if (err == EACCES || err == EPERM) {
		strbuf_addf(why, "perf_event_open was refused (%s) although %s allows it: a seccomp "
				 "filter or security module (container runtime) blocks it; run with "
				 "--security-opt seccomp=unconfined, as root or with CAP_PERFMON, or try "
				 "`sysctl kernel.perf_event_paranoid=1`",
			    perf_errno_name(err), setting);
	} else {
		strbuf_addf(why, "perf_event_open failed (%s; %s)", perf_errno_name(err), setting);
	}
}
