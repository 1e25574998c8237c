/* cpu_events: the cpu probe's perf events. Which event this machine takes
 * (cycles, else cpu-clock; kernel frames when allowed), the counters its
 * samples read, per-CPU or per-task sampling, and one line naming the setting
 * in the way when perf_event_open is refused; then opening them, per CPU or
 * per task (with offcpu, the switch events too), into the shared rings, for
 * each process that joins the target. */
#define LOG_DOMAIN "cpu"
#include "cpu_probe.h"
#include "perf_events.h"
#include "perf_ring.h"
#include "../symbols/symbolize.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int read_sysctl_int(const char *path, int fallback)
{
	char buf[32];
	if (file_read_small(path, buf, sizeof(buf)) <= 0)
		return fallback;
	return atoi(buf);
}

/* The rate the kernel will take: it refuses (EINVAL) a frequency above
 * kernel.perf_event_max_sample_rate, which it also lowers by itself when
 * sampling takes too long. */
int cpu_clamp_rate(int rate_hz)
{
	int max = read_sysctl_int("/proc/sys/kernel/perf_event_max_sample_rate", 0);
	return max > 0 && rate_hz > max ? max : rate_hz;
}

/* The events are opened per CPU: on hybrid machines (performance and
 * efficiency cores) or in some VMs, a hardware event may be refused on some
 * CPUs. 0 when every CPU sonde may run on takes it, else that CPU's errno. */
static int every_cpu_counts(struct perf_event_attr *a)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		long fd = perf_event_open_cloexec(a, 0, c, -1);
		if (fd < 0)
			return errno;
		close((int)fd);
	}
	return 0;
}

/* Fills attr for this machine: cycles when the hardware counts them, else
 * cpu-clock; kernel frames when allowed. Tries the event on sonde itself.
 * Returns 0, or an errno (with why filled). */
int cpu_choose_event(struct perf_event_attr *attr, const char *event, int rate_hz, int dwarf,
		     int stack_bytes, const char **name, int *kernel, struct strbuf *why)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.freq = 1;
	a.sample_freq = (uint64_t)rate_hz;
	a.sample_type = CPU_SAMPLE_BASE;
	/* The kernel refuses a deeper request than kernel.perf_event_max_stack. */
	int max_stack = read_sysctl_int("/proc/sys/kernel/perf_event_max_stack", CPU_MAX_FRAMES);
	a.sample_max_stack = (uint16_t)(max_stack > 0 && max_stack < CPU_MAX_FRAMES ? max_stack
									   : CPU_MAX_FRAMES);
	if (dwarf) {
		a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = CPU_REGS_MASK;
		a.sample_stack_user = (uint32_t)stack_bytes;
		a.exclude_callchain_user = 1;
	}
	a.inherit = 1;
	a.mmap = 1;
	a.mmap2 = 1;
	a.comm = 1;
	a.comm_exec = 1;
	a.task = 1;
	a.sample_id_all = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.disabled = 1;
	int err = 0;
	*name = "cycles";
	if (event) { /* --event: that one or nothing (the CLI checked it opens) */
		uint32_t type;
		uint64_t config;
		if (perf_event_lookup(event, &type, &config)) {
			strbuf_addf(why, "unknown event '%s'", event);
			return EINVAL;
		}
		a.type = type;
		a.config = config;
		*name = event;
	}
	for (int attempt = 0; attempt < 4; attempt++) {
		long fd = perf_event_open_cloexec(&a, 0, -1, -1);
		if (fd >= 0) {
			close((int)fd);
			err = a.type == PERF_TYPE_HARDWARE ? every_cpu_counts(&a) : 0;
		} else {
			err = errno;
		}
		if (!err) {
			*attr = a;
			*kernel = !a.exclude_kernel;
			return 0;
		}
		if ((err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL) &&
		    a.type == PERF_TYPE_HARDWARE && !event) {
			a.type = PERF_TYPE_SOFTWARE;
			a.config = PERF_COUNT_SW_CPU_CLOCK;
			*name = "cpu-clock";
			continue;
		}
		if ((err == EACCES || err == EPERM) && !a.exclude_kernel) {
			a.exclude_kernel = 1;
			continue;
		}
		break;
	}
	perf_event_explain_refusal(err, why);
	return err;
}

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

/* Data pages per CPU ring: room for well over one poll period of samples at a
 * high rate (dwarf samples carry the stack copy: 8 MiB per CPU, 64 MiB in all
 * at most), and, with frame pointers, for a second or two of a busy machine's
 * samples while the pump waits for a CPU (per-CPU events see every process:
 * 2 MiB per CPU, 32 MiB in all at most; never under 512 KiB). */
static size_t ring_pages(const struct cpu_state *cs)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t pages = cs->dwarf ? 2048 : 512;
	size_t cap = cs->dwarf ? CPU_DWARF_RINGS_BYTES : CPU_FP_RINGS_BYTES;
	while (pages > 128 && pages * (size_t)page * cs->ncpus > cap)
		pages /= 2;
	return pages;
}

static void fd_keep(struct cpu_state *cs, int fd)
{
	if (cs->nfds == cs->allocfds) {
		cs->allocfds = cs->allocfds ? 2 * cs->allocfds : 64;
		cs->fds = xrealloc(cs->fds, cs->allocfds * sizeof(*cs->fds));
	}
	cs->fds[cs->nfds++] = fd;
}

static void group_id_add(struct cpu_state *cs, int fd, size_t k)
{
	uint64_t id;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0)
		hashmap_put(&cs->group_ids, &id, sizeof(id), (int64_t)k);
}

/* The counters a sampling event (leader, on tid and cpu) reads with each sample. */
static void open_group_members(struct cpu_state *cs, int leader, pid_t tid, int cpu)
{
	if (!cs->ngroup)
		return;
	group_id_add(cs, leader, 0);
	for (size_t k = 1; k < cs->ngroup && cs->nfds < CPU_MAX_FDS; k++) {
		long fd = perf_event_open_cloexec(&cs->group_attr[k], tid, cpu, leader);
		if (fd < 0) {
			log_debug("%s for tid %d, cpu %d: %s", cs->group_names[k], (int)tid, cpu,
				  strerror(errno));
			continue;
		}
		group_id_add(cs, (int)fd, k);
		fd_keep(cs, (int)fd);
	}
}

/* Opens task tid's events, one per CPU (the kernel refuses to map an inherited
 * per-task event with cpu -1), each writing into that CPU's shared ring.
 * Returns how many CPUs got an event, or -errno when none did. */
static int open_task_events(struct cpu_state *cs, const struct perf_event_attr *attr,
			    struct perf_ring *rings, pid_t tid, int before_exec)
{
	struct perf_event_attr a = *attr;
	a.disabled = before_exec;
	a.enable_on_exec = before_exec;
	int opened = 0, err = ENODEV;
	for (size_t c = 0; c < cs->ncpus; c++) {
		long fd = perf_event_open_cloexec(&a, tid, (int)c, -1);
		if (fd < 0) {
			err = errno;
			log_debug("perf_event_open(tid %d, cpu %zu): %s", (int)tid, c, strerror(err));
			continue; /* an offline CPU, or the task is gone */
		}
		if (attr == &cs->attr)
			open_group_members(cs, (int)fd, tid, (int)c);
		struct perf_ring *r = &rings[c];
		if (r->fd < 0) {
			int rc = perf_ring_map(r, (int)fd, ring_pages(cs), 8);
			if (rc) {
				log_debug("mmap of the ring buffer: %s", strerror(-rc));
				close((int)fd);
				err = -rc;
				continue;
			}
		} else if (cs->nfds >= CPU_MAX_FDS ||
			   ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
			err = cs->nfds >= CPU_MAX_FDS ? EMFILE : errno;
			close((int)fd);
			continue;
		} else {
			fd_keep(cs, (int)fd);
		}
		opened++;
	}
	return opened ? opened : -err;
}

/* Task tid's sampling events and, with offcpu, its switch events. Returns
 * how many CPUs got a sampling event, or -errno when none did. */
static int open_task(struct cpu_state *cs, pid_t tid, int before_exec)
{
	int rc = cs->percpu ? 1 : open_task_events(cs, &cs->attr, cs->rings, tid, before_exec);
	if (rc > 0 && cs->offcpu &&
	    open_task_events(cs, &cs->off_attr, cs->rings + cs->ncpus, tid, before_exec) <= 0)
		log_debug("no switch events for tid %d", (int)tid);
	return rc;
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
	for (size_t c = 0; c < cs->ncpus; c++) {
		long fd = perf_event_open_cloexec(&cs->attr, -1, (int)c, -1);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline */
			return errno;
		}
		open_group_members(cs, (int)fd, -1, (int)c);
		int rc = perf_ring_map(&cs->rings[c], (int)fd, ring_pages(cs), 8);
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
	cpu_drain_all(cs, -1); /* fork records tell which new processes we already cover */
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
	if (cs->percpu && !cs->offcpu)
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
