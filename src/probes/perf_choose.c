/* perf_choose: the events a run opens, tried on sonde itself, and the one
 * explanation of a refusal. */
#define LOG_DOMAIN "perf"
#include "perf_choose.h"
#include "tracefs_mount.h"
#include "perf_events.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What the events of the layer's sets share: inherited by the threads and
 * children their task makes, an id on every record (sample_id_all),
 * CLOCK_MONOTONIC times, opened disabled. */
static void attr_follow(struct perf_event_attr *a)
{
	a->inherit = 1;
	a->sample_id_all = 1;
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->disabled = 1;
}

/* ---- sampling ---- */

static int read_sysctl_int(const char *path, int fallback)
{
	char buf[32];
	if (file_read_small(path, buf, sizeof(buf)) <= 0)
		return fallback;
	return atoi(buf);
}

/* The kernel also lowers kernel.perf_event_max_sample_rate by itself when
 * sampling takes too long. */
int perf_choose_rate(int rate_hz)
{
	int max = read_sysctl_int("/proc/sys/kernel/perf_event_max_sample_rate", 0);
	return max > 0 && rate_hz > max ? max : rate_hz;
}

static int gcd_int(int a, int b)
{
	while (b) {
		int r = a % b;
		a = b;
		b = r;
	}
	return a;
}

uint64_t perf_choose_timer_period_ns(int rate_hz)
{
	if (rate_hz <= 0)
		return 0;
	uint64_t period_ns = 1000000000ULL / (uint64_t)rate_hz;
	/* The period is 1000/rate_hz ms: its samples fall on rate_hz/gcd
	 * places of the tick's 1 ms grid, over and over. */
	if (rate_hz / gcd_int(rate_hz, 1000) < PERF_CHOOSE_TICK_PLACES)
		period_ns += period_ns / PERF_CHOOSE_TICK_STRETCH;
	return period_ns;
}

int perf_choose_is_timer(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE &&
	       (a->config == PERF_COUNT_SW_CPU_CLOCK || a->config == PERF_COUNT_SW_TASK_CLOCK);
}

/* A timer event takes a period out of step with the tick; others a rate. */
static void sampling_set_rate(struct perf_event_attr *a, int rate_hz)
{
	if (perf_choose_is_timer(a)) {
		a->freq = 0;
		a->sample_period = perf_choose_timer_period_ns(rate_hz);
	} else {
		a->freq = 1;
		a->sample_freq = (uint64_t)rate_hz;
	}
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

int perf_choose_sampling(struct perf_event_attr *attr, const char *event, int rate_hz, int dwarf,
			 int stack_bytes, const char **name, int *kernel, struct strbuf *why)
{
	struct perf_event_attr a;
	perf_event_attr_init(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	attr_follow(&a);
	a.sample_type = PERF_CHOOSE_SAMPLE_BASE;
	/* The kernel refuses a deeper request than kernel.perf_event_max_stack. */
	int max_stack =
		read_sysctl_int("/proc/sys/kernel/perf_event_max_stack", PERF_CHOOSE_MAX_FRAMES);
	a.sample_max_stack = (uint16_t)(max_stack > 0 && max_stack < PERF_CHOOSE_MAX_FRAMES
						? max_stack
						: PERF_CHOOSE_MAX_FRAMES);
	if (dwarf) {
		a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = PERF_CHOOSE_REGS_MASK;
		a.sample_stack_user = (uint32_t)stack_bytes;
		a.exclude_callchain_user = 1;
	}
	a.mmap = 1;
	a.mmap2 = 1;
	a.comm = 1;
	a.comm_exec = 1;
	a.task = 1;
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
		sampling_set_rate(&a, rate_hz);
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
	perf_event_explain_refusal(err, &a, *name, why);
	return err;
}

/* ---- switches ---- */

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing", NULL };

/* Tracepoint event's ("sched/sched_switch") id from tracefs, and the byte
 * offset of its field (" prev_state;": the name with a space before and the
 * semicolon after) in the raw data when that field is 8 bytes (-1 else).
 * 0 or -errno. */
static int read_tracepoint_field(const char *event, const char *field, int *id, int *offset)
{
	char path[160], buf[4096];
	for (size_t i = 0; tracefs_dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/events/%s/id", tracefs_dirs[i], event);
		if (file_read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		*id = atoi(buf);
		*offset = -1;
		snprintf(path, sizeof(path), "%s/events/%s/format", tracefs_dirs[i], event);
		ssize_t n = file_read_small(path, buf, sizeof(buf));
		const char *f = n > 0 ? strstr(buf, field) : NULL;
		const char *off = f ? strstr(f, "offset:") : NULL;
		const char *size = f ? strstr(f, "size:") : NULL;
		/* A long (8 bytes) on 64-bit kernels, or an array of them (its
		 * first); anything else: unknown. */
		if (off && size && atoi(size + 5) >= 8 && atoi(size + 5) % 8 == 0)
			*offset = atoi(off + 7);
		return *id > 0 ? 0 : -EINVAL;
	}
	return -ENOENT;
}

/* The switch tracepoint's id and prev_state's offset; 0 or -errno. */
static int read_tracepoint(int *id, int *state_offset)
{
	return read_tracepoint_field("sched/sched_switch", " prev_state;", id, state_offset);
}

static long perf_open_self(struct perf_event_attr *a)
{
	return perf_event_open_cloexec(a, 0, -1, -1);
}

int perf_choose_switches(struct perf_event_attr *attr, const struct perf_event_attr *like,
			 const char **event_name, int *state_offset, int *mounted,
			 struct strbuf *why)
{
	struct perf_event_attr a;
	perf_event_attr_init(&a, PERF_TYPE_TRACEPOINT, 0);
	attr_follow(&a);
	a.sample_period = 1;
	a.sample_type = like->sample_type;
	a.sample_regs_user = like->sample_regs_user;
	a.sample_stack_user = like->sample_stack_user;
	a.exclude_callchain_user = like->exclude_callchain_user;
	a.sample_max_stack = like->sample_max_stack;
	a.context_switch = 1;
	int id = 0, off = -1, tp_err, tp_open_err = 0;
	tp_err = read_tracepoint(&id, &off);
	if (tp_err == -ENOENT && tracefs_mount_if_absent()) {
		if (mounted)
			*mounted = 1;
		tp_err = read_tracepoint(&id, &off);
	}
	int err = 0;
	if (!tp_err) {
		a.type = PERF_TYPE_TRACEPOINT;
		a.config = (uint64_t)id;
		if (off >= 0)
			a.sample_type |= PERF_SAMPLE_RAW;
		long fd = perf_open_self(&a);
		if (fd < 0 && (errno == EACCES || errno == EPERM) && off >= 0) {
			/* raw data wants CAP_PERFMON */
			a.sample_type &= ~(uint64_t)PERF_SAMPLE_RAW;
			off = -1;
			fd = perf_open_self(&a);
		}
		if (fd >= 0) {
			close((int)fd);
			*attr = a;
			*event_name = "sched:sched_switch";
			*state_offset = off;
			return 0;
		}
		err = tp_open_err = errno;
	}
	/* No tracefs (a container) or a refused tracepoint: the software event
	 * fires at the same place, without prev_state. */
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a.sample_type = like->sample_type;
	long fd = perf_open_self(&a);
	if (fd >= 0) {
		close((int)fd);
		*attr = a;
		*event_name = "context-switches";
		*state_offset = -1;
		return 0;
	}
	if (!err || err == EINVAL || err == ENOENT)
		err = errno;
	if (err == EACCES || err == EPERM || err == ENOSYS)
		perf_event_explain_refusal(err, &a, "the sched_switch events", why);
	else
		strbuf_addf(why, "neither the sched:sched_switch tracepoint (%s) nor the "
				 "context-switches event (%s) can be opened here",
			    tp_err ? "tracefs not found under /sys/kernel/tracing"
				   : strerror(tp_open_err),
			    strerror(err));
	return -1;
}

/* ---- system calls ---- */

int perf_choose_syscalls(struct perf_event_attr *enter, struct perf_event_attr *exit,
			 const struct perf_event_attr *like, struct perf_syscall_fields *fields,
			 int *mounted, struct strbuf *why)
{
	int ids[2], unused;
	int rc = read_tracepoint_field("raw_syscalls/sys_enter", " id;", &ids[0], &fields->id);
	if (rc == -ENOENT && tracefs_mount_if_absent()) {
		if (mounted)
			*mounted = 1;
		rc = read_tracepoint_field("raw_syscalls/sys_enter", " id;", &ids[0], &fields->id);
	}
	if (!rc)
		rc = read_tracepoint_field("raw_syscalls/sys_enter", " args[6];", &unused,
					   &fields->args);
	if (!rc)
		rc = read_tracepoint_field("raw_syscalls/sys_exit", " ret;", &ids[1], &fields->ret);
	if (rc) {
		struct stat st;
		int denied = stat("/sys/kernel/tracing/events", &st) ? errno == EACCES
								     : access("/sys/kernel/tracing/events",
									      R_OK | X_OK) != 0;
		if (denied)
			strbuf_addstr(why, "the raw_syscalls tracepoints are in tracefs, which only "
					   "root may read here: run sonde as root (or with "
					   "CAP_PERFMON and access to /sys/kernel/tracing)");
		else
			strbuf_addf(why, "the raw_syscalls tracepoints are not found (%s): tracefs "
					 "is not mounted at /sys/kernel/tracing and sonde could not "
					 "mount it (it needs root)",
				    strerror(-rc));
		return -1;
	}
	if (fields->id < 0 || fields->ret < 0) {
		strbuf_addstr(why, "the raw_syscalls tracepoints' fields are not 8-byte longs here: "
				   "system calls cannot be read");
		return -1;
	}
	struct perf_event_attr *a[2] = { enter, exit };
	for (int k = 0; k < 2; k++) {
		perf_event_attr_init(a[k], PERF_TYPE_TRACEPOINT, (uint64_t)ids[k]);
		attr_follow(a[k]);
		a[k]->sample_period = 1;
		/* The exit's stack is the call site (the same as at the entry):
		 * the user instruction pointer and a short copy of the stack,
		 * whose return addresses the stacks owner scans for (the
		 * wrapper's caller first: a libc wrapper keeps no frame
		 * pointer). The kernel's frame-pointer walk costs several
		 * microseconds a call in a program without frame pointers, and
		 * DWARF unwinding more than the call. */
		a[k]->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
		if (k && (like->sample_type & PERF_SAMPLE_CALLCHAIN)) {
			a[k]->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
			a[k]->sample_regs_user =
			    (1ULL << PERF_CHOOSE_REG_SP) | (1ULL << PERF_CHOOSE_REG_IP);
			a[k]->sample_stack_user = PERF_CHOOSE_SYSCALL_STACK;
		}
		long fd = perf_open_self(a[k]);
		if (fd < 0) {
			perf_event_explain_refusal(errno, a[k], "the raw_syscalls tracepoints", why);
			return -1;
		}
		close((int)fd);
	}
	return 0;
}

/* ---- counting ---- */

int perf_choose_counting(const char *name, uint32_t type, uint64_t config, int *exclude_kernel,
			 struct strbuf *why)
{
	struct perf_event_attr a;
	perf_event_attr_init(&a, type, config);
	a.exclude_hv = 1;
	long fd = perf_event_open_cloexec(&a, 0, -1, -1);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		a.exclude_kernel = 1;
		fd = perf_event_open_cloexec(&a, 0, -1, -1);
	}
	if (fd < 0) {
		perf_event_explain_refusal(errno, &a, name, why);
		return -1;
	}
	close((int)fd);
	*exclude_kernel = (int)a.exclude_kernel;
	return 0;
}
