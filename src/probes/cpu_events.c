/* cpu_events: the cpu probe's perf events beyond the sampling event
 * (perf_choose_sampling): the counters its samples read, per-CPU or per-task
 * sampling; then opening them, per CPU or per task (with the layer's other
 * sets: offcpu's switch events), into the layer's rings, for each process
 * that joins the target. */
#define LOG_DOMAIN "cpu"
#include "cpu_probe.h"
#include "perf_events.h"
#include "perf_ring.h"
#include "../symbols/symbolize.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Members read with each sample of a leader: cycles reads instructions and
 * cache-misses; with SONDE_COUNTERS_EVENTS=software, cpu-clock reads
 * task-clock and page-faults. */
static size_t group_members(const struct perf_event_attr *leader, const char **names)
{
	if (leader->type == PERF_TYPE_HARDWARE && leader->config == PERF_COUNT_HW_CPU_CYCLES) {
		names[0] = "instructions";
		names[1] = "cache-misses";
		return 2;
	}
	if (perf_events_software() && leader->type == PERF_TYPE_SOFTWARE &&
	    leader->config == PERF_COUNT_SW_CPU_CLOCK) {
		names[0] = "task-clock";
		names[1] = "page-faults";
		return 2;
	}
	return 0;
}

/* Makes attr a group leader whose samples read its members, when this
 * kernel allows it on sonde itself. 0, or an errno with why filled. */
int cpu_choose_group(struct cpu_state *cs, const char *leader_name, struct strbuf *why)
{
	const char *names[CPU_GROUP_MAX - 1];
	size_t n = group_members(&cs->attr, names);
	if (!n)
		return 0;
	struct perf_event_attr lead = cs->attr;
	lead.sample_type |= PERF_SAMPLE_READ;
	lead.read_format = CPU_GROUP_READ_FORMAT;
	lead.disabled = 0;
	long fd = perf_event_open_cloexec(&lead, 0, 0, -1);
	int err = fd < 0 ? errno : 0;
	size_t have = 0;
	for (size_t k = 0; k < n && fd >= 0; k++) {
		struct perf_event_attr m;
		uint32_t type;
		uint64_t config;
		if (perf_event_lookup(names[k], &type, &config))
			continue;
		memset(&m, 0, sizeof(m));
		m.size = sizeof(m);
		m.type = type;
		m.config = config;
		m.read_format = CPU_GROUP_READ_FORMAT;
		m.inherit = lead.inherit;
		m.exclude_kernel = lead.exclude_kernel;
		m.exclude_hv = 1;
		m.use_clockid = 1; /* a group keeps one clock */
		m.clockid = lead.clockid;
		long mfd = perf_event_open_cloexec(&m, 0, 0, (int)fd);
		if (mfd < 0) {
			err = errno;
			continue;
		}
		close((int)mfd);
		cs->group_attr[1 + have] = m;
		cs->group_names[1 + have++] = names[k];
	}
	if (fd >= 0)
		close((int)fd);
	if (!have) {
		strbuf_addf(why, "%s samples read no counters (%s): %s", leader_name,
			    names[0],
			    err == EINVAL ? "EINVAL; Linux before 6.12 refuses PERF_SAMPLE_READ on "
					    "inherited events, so IPC per function is not measured"
			    : err	  ? strerror(err)
					  : "unknown events");
		return err;
	}
	cs->attr = lead;
	cs->group_names[0] = leader_name;
	cs->ngroup = 1 + have;
	return 0;
}

/* ---- opening events ---- */

static void group_id_add(struct cpu_state *cs, int fd, size_t k)
{
	uint64_t id;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0)
		hashmap_put(&cs->group_ids, &id, sizeof(id), (int64_t)k);
}

/* The counters a sampling event (leader, on tid and cpu) reads with each
 * sample (perf_layer_opened_fn). */
static void open_group_members(void *arg, int leader, pid_t tid, int cpu)
{
	struct cpu_state *cs = arg;
	if (!cs->ngroup)
		return;
	group_id_add(cs, leader, 0);
	for (size_t k = 1; k < cs->ngroup; k++) {
		long fd = perf_event_open_cloexec(&cs->group_attr[k], tid, cpu, leader);
		if (fd < 0) {
			log_debug("%s for tid %d, cpu %d: %s", cs->group_names[k], (int)tid, cpu,
				  strerror(errno));
			continue;
		}
		if (perf_layer_fd_keep(cs->perf, (int)fd)) {
			close((int)fd);
			break;
		}
		group_id_add(cs, (int)fd, k);
	}
}

/* Task tid's sampling events and the layer's other sets' (offcpu's switch
 * events): the cpu probe follows the target's tasks for every set. Returns
 * how many CPUs got a sampling event, or -errno when none did. */
static int open_task(struct cpu_state *cs, pid_t tid, int before_exec)
{
	int rc = cs->percpu ? 1
			    : perf_layer_open_task(cs->perf, PERF_LAYER_SAMPLES, tid, before_exec,
						   open_group_members, cs);
	for (int set = PERF_LAYER_SAMPLES + 1; rc > 0 && set < PERF_LAYER_NSETS; set++)
		if (perf_layer_set_attr(cs->perf, (enum perf_layer_set)set) &&
		    perf_layer_open_task(cs->perf, (enum perf_layer_set)set, tid, before_exec, NULL,
					 NULL) <= 0)
			log_debug("no events of set %d for tid %d", set, (int)tid);
	return rc;
}

/* 1 when another set than the sampling one follows the target's tasks. */
static int other_sets(const struct cpu_state *cs)
{
	for (int set = PERF_LAYER_SAMPLES + 1; set < PERF_LAYER_NSETS; set++)
		if (perf_layer_set_attr(cs->perf, (enum perf_layer_set)set))
			return 1;
	return 0;
}

/* 1 to sample per CPU: the kernel takes a machine-wide event (root,
 * CAP_PERFMON or kernel.perf_event_paranoid <= 0) and SONDE_CPU_SAMPLING=task
 * does not ask for per-task events. Makes cs->attr a per-CPU event then; else
 * fills why with what per-task sampling misses and how to avoid it. */
int cpu_choose_percpu(struct cpu_state *cs, struct strbuf *why)
{
	const char *want = getenv("SONDE_CPU_SAMPLING");
	if (want && !strcmp(want, "task")) {
		strbuf_addstr(why, "per-task sampling (SONDE_CPU_SAMPLING=task): a thread that "
				   "lives less than one sampling period may get no sample");
		return 0;
	}
	/* The software stand-ins read task-clock with each sample, which only
	 * counts in a task's context: a per-CPU group would read zero. */
	const char *members[CPU_GROUP_MAX];
	if (perf_events_software() && group_members(&cs->attr, members)) {
		strbuf_addstr(why, "per-task sampling (SONDE_COUNTERS_EVENTS=software reads "
				   "task-clock with each sample, which counts per task): a thread "
				   "that lives less than one sampling period may get no sample");
		return 0;
	}
	/* A software event other than a clock (page faults, context switches)
	 * comes as fast as the whole machine makes it: per CPU, a busy
	 * neighbour's faults would fill the rings and crowd out the target's
	 * (a loaded run lost every one of its samples so). Per task, only the
	 * target's are counted. */
	if (cs->attr.type == PERF_TYPE_SOFTWARE && cs->attr.config != PERF_COUNT_SW_CPU_CLOCK &&
	    cs->attr.config != PERF_COUNT_SW_TASK_CLOCK) {
		strbuf_addstr(why, "per-task sampling (a software event other than a clock counts "
				   "every process on a CPU: only the target's are wanted): a thread "
				   "that lives less than one sampling period may get no sample");
		return 0;
	}
	struct perf_event_attr a = cs->attr;
	a.inherit = 0;
	/* The idle task's samples would only be dropped: the timer skips them. */
	a.exclude_idle = a.type == PERF_TYPE_SOFTWARE;
	long fd = perf_event_open_cloexec(&a, -1, 0, -1);
	if (fd < 0) {
		strbuf_addf(why, "per-task sampling, as per-CPU events were refused (%s; "
				 "they need root, CAP_PERFMON or kernel.perf_event_paranoid <= 0): "
				 "a thread that lives less than one sampling period may get no sample",
			    perf_errno_name(errno));
		return 0;
	}
	close((int)fd);
	a.disabled = 0;
	cs->attr = a;
	return 1;
}

/* Opens the per-CPU sampling events, each writing into its CPU's ring.
 * 0, or the errno of the first CPU that refused one (offline CPUs are skipped). */
int cpu_open_percpu(struct cpu_state *cs)
{
	struct perf_ring *rings = perf_layer_rings(cs->perf, PERF_LAYER_SAMPLES);
	size_t pages = perf_layer_ring_pages(cs->perf, PERF_LAYER_SAMPLES);
	for (size_t c = 0; c < perf_layer_ncpus(cs->perf); c++) {
		long fd = perf_event_open_cloexec(&cs->attr, -1, (int)c, -1);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline */
			return errno;
		}
		open_group_members(cs, (int)fd, -1, (int)c);
		int rc = perf_ring_map(&rings[c], (int)fd, pages, 8);
		if (rc) {
			close((int)fd);
			return -rc;
		}
	}
	return 0;
}

/* 1 when pid is still the fork of sonde waiting to exec the command. */
static int is_pre_exec(pid_t pid)
{
	char a[64], self[4096], other[4096];
	snprintf(a, sizeof(a), "/proc/%d/exe", (int)pid);
	ssize_t n1 = readlink(a, other, sizeof(other) - 1);
	ssize_t n2 = readlink("/proc/self/exe", self, sizeof(self) - 1);
	return n1 > 0 && n1 == n2 && !memcmp(self, other, (size_t)n1);
}

void cpu_process_add(struct cpu_state *cs, pid_t pid)
{
	if (cs->no_subprocesses && !cs->first_process_seen)
		cs->only_pid = pid;
	perf_layer_drain(cs->perf, -1); /* fork records tell which new processes we already cover */
	struct cpu_proc *pr = cpu_proc_get(cs, pid, 1);
	if (pr->covered)
		return;
	pr->covered = 1;
	cpu_pid_mark(cs, pid);
	int pre_exec = !cs->first_process_seen && is_pre_exec(pid);
	cs->first_process_seen = 1;
	pr->gated = pre_exec && cs->percpu;
	if (!pre_exec) {
		maps_clear(&pr->maps);
		maps_read_pid(&pr->maps, pid);
		cpu_proc_maps_changed(pr);
		symbolizer_jit_load(cs->sym, pid);
	}
	int rc = 0, any = 0;
	if (cs->percpu && !other_sets(cs))
		return; /* the per-CPU events see it already */
	if (pre_exec) {
		rc = open_task(cs, pid, 1);
		any = rc > 0;
	} else {
		/* inherit covers threads made from now on; existing ones need their own. */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		DIR *d = opendir(path);
		struct dirent *de;
		rc = d ? 0 : -errno;
		while (d && (de = readdir(d))) {
			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			int r = open_task(cs, (pid_t)atoi(de->d_name), 0);
			if (r > 0)
				any = 1;
			else
				rc = r;
		}
		if (d)
			closedir(d);
	}
	if (!any) {
		cs->not_opened++;
		log_debug("pid %d not sampled: %s", (int)pid, strerror(-rc));
	}
}
