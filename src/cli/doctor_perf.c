/* doctor_perf: the kernel facts that decide whether sonde can sample: the
 * kernel release, perf_event_open (paranoid level, privileges, seccomp, and
 * actually opening the events sonde uses), hardware counters, the
 * sched_switch tracepoint, ptrace scope and process_vm_readv. */
#include "doctor.h"
#include "../probes/perf_choose.h"
#include "../probes/perf_events.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT	  38

/* The value of "Name:\t..." in /proc/self/status, into buf; 0 or -1. */
static int status_field_read(const char *name, char *buf, size_t cap)
{
	struct strbuf sb = STRBUF_INIT;
	int rc = -1;
	if (file_read_strbuf("/proc/self/status", &sb, 1 << 16) <= 0)
		goto out;
	size_t len = strlen(name);
	for (const char *l = sb.buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, len) || l[len] != ':')
			continue;
		const char *v = l + len + 1;
		v += strspn(v, " \t");
		size_t n = strcspn(v, "\n");
		snprintf(buf, cap, "%.*s", (int)n, v);
		rc = 0;
		break;
	}
out:
	strbuf_release(&sb);
	return rc;
}

static void kernel_check(struct doctor_facts *facts)
{
	struct utsname u;
	if (uname(&u)) {
		doctor_fact_add(facts, DOCTOR_LIMITED, "kernel", "", "kernel: uname failed (%s)",
				strerror(errno));
		return;
	}
	doctor_fact_add(facts, DOCTOR_OK, "kernel", u.release, "kernel %s (%s)", u.release,
			u.machine);
}

/* sonde's effective capabilities, as a mask and as /proc spells it (hex). */
static unsigned long long caps_effective(char *hex, size_t cap)
{
	snprintf(hex, cap, "0");
	status_field_read("CapEff", hex, cap);
	return strtoull(hex, NULL, 16);
}

/* Whether sonde holds CAP_PERFMON or CAP_SYS_ADMIN, which lift the paranoid level. */
static int perf_privileged(void)
{
	char hex[64];
	unsigned long long eff = caps_effective(hex, sizeof(hex));
	return !!(eff & ((1ULL << CAP_PERFMON_BIT) | (1ULL << CAP_SYS_ADMIN_BIT)));
}

static void paranoid_check(struct doctor_facts *facts)
{
	int privileged = perf_privileged();
	int level = perf_event_paranoid();
	char value[16];
	if (level == 99) {
		doctor_fact_add(facts, DOCTOR_NO, "perf_event_paranoid", "",
				"kernel.perf_event_paranoid cannot be read: no perf events in this "
				"kernel, or /proc/sys is hidden");
		doctor_fix_set(facts, "profile on the host, or with a kernel built with "
				      "CONFIG_PERF_EVENTS");
		return;
	}
	snprintf(value, sizeof(value), "%d", level);
	if (level <= 0 || privileged)
		doctor_fact_add(facts, DOCTOR_OK, "perf_event_paranoid", value,
				"kernel.perf_event_paranoid = %d: %s", level,
				level <= 0 ? "per-CPU sampling allowed"
					   : "no limit on sonde, which is privileged");
	else if (level <= 2)
		doctor_fact_add(facts, DOCTOR_LIMITED, "perf_event_paranoid", value,
				"kernel.perf_event_paranoid = %d: own processes only, per task "
				"(unless privileged)",
				level);
	else
		doctor_fact_add(facts, DOCTOR_NO, "perf_event_paranoid", value,
				"kernel.perf_event_paranoid = %d: perf events refused to users",
				level);
	if (level > 0 && !privileged)
		doctor_fix_set(facts, "sudo sysctl kernel.perf_event_paranoid=0 (or -1 for kernel "
				      "stacks), or give sonde CAP_PERFMON");
}

static void privilege_check(struct doctor_facts *facts)
{
	char caps[64];
	unsigned long long eff = caps_effective(caps, sizeof(caps));
	int needed = perf_event_paranoid() > 0;
	int perfmon = !!(eff & (1ULL << CAP_PERFMON_BIT));
	int admin = !!(eff & (1ULL << CAP_SYS_ADMIN_BIT));
	const char *who = geteuid() == 0 ? "root" : "not root";
	if (perfmon || admin)
		doctor_fact_add(facts, DOCTOR_OK, "privileges", caps,
				"privileges: %s, CAP_PERFMON %s, CAP_SYS_ADMIN %s", who,
				perfmon ? "yes" : "no", admin ? "yes" : "no");
	else
		doctor_fact_add(facts, needed ? DOCTOR_LIMITED : DOCTOR_OK, "privileges", caps,
				"privileges: %s, no CAP_PERFMON or CAP_SYS_ADMIN%s", who,
				needed ? "" : " (not needed at this paranoid level)");
	if (!perfmon && !admin && needed)
		doctor_fix_set(facts, "for per-CPU sampling and attach: sudo setcap "
				      "cap_perfmon,cap_sys_ptrace+ep sonde");
}

static void seccomp_check(struct doctor_facts *facts)
{
	char mode[16];
	if (status_field_read("Seccomp", mode, sizeof(mode))) {
		doctor_fact_add(facts, DOCTOR_OK, "seccomp", "",
				"seccomp: not reported by this kernel");
		return;
	}
	int m = atoi(mode);
	if (m == 0)
		doctor_fact_add(facts, DOCTOR_OK, "seccomp", mode, "seccomp: off");
	else
		doctor_fact_add(facts, DOCTOR_LIMITED, "seccomp", mode,
				"seccomp: %s (a container runtime's profile may block "
				"perf_event_open)",
				m == 1 ? "strict" : "filter");
	if (m != 0)
		doctor_fix_set(facts, "if perf events fail below: run the container with "
				      "--security-opt seccomp=unconfined");
}

static void cpu_clock_attr_fill(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->sample_freq = 99;
	a->freq = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->disabled = 1;
}

/* The first CPU sonde may run on. */
static int first_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return 0;
}

static void sampling_check(struct doctor_facts *facts, const char *key, pid_t pid, int cpu,
			   const char *what)
{
	struct perf_event_attr a;
	cpu_clock_attr_fill(&a);
	int fd = perf_event_open_cloexec(&a, pid, cpu, -1);
	if (fd >= 0) {
		close(fd);
		doctor_fact_add(facts, DOCTOR_OK, key, "ok", "cpu-clock sampling %s: opens", what);
		return;
	}
	int err = errno;
	struct strbuf why = STRBUF_INIT;
	if (pid == -1 && (err == EACCES || err == EPERM) && perf_event_paranoid() > 0 &&
	    !perf_privileged())
		strbuf_addstr(&why, "per-CPU events need kernel.perf_event_paranoid <= 0 or "
				    "CAP_PERFMON (`sudo sysctl kernel.perf_event_paranoid=0`); "
				    "meanwhile sonde samples per task, where a thread shorter than "
				    "one sampling period may get no sample");
	else
		perf_event_explain_refusal(err, &a, "cpu-clock", &why);
	doctor_fact_add(facts, pid == -1 ? DOCTOR_LIMITED : DOCTOR_NO, key, perf_errno_name(err),
			"cpu-clock sampling %s: refused (%s)", what, perf_errno_name(err));
	doctor_fix_set(facts, why.buf);
	strbuf_release(&why);
}

static void counters_check(struct doctor_facts *facts)
{
	int err = perf_event_try_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	if (!err) {
		doctor_fact_add(facts, DOCTOR_OK, "hardware_counters", "ok",
				"hardware counters: cycles opens (a PMU is here)");
		return;
	}
	if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV) {
		doctor_fact_add(facts, DOCTOR_NO, "hardware_counters", perf_errno_name(err),
				"hardware counters: no PMU (a VM without a virtual PMU)");
		doctor_fix_set(facts, "enable the VM's virtual PMU (e.g. KVM -cpu host, a "
				      "metal instance); sonde falls back to cpu-clock");
		return;
	}
	struct strbuf why = STRBUF_INIT;
	perf_event_explain_refusal(err, NULL, "cycles", &why);
	doctor_fact_add(facts, DOCTOR_NO, "hardware_counters", perf_errno_name(err),
			"hardware counters: cycles refused (%s)", perf_errno_name(err));
	doctor_fix_set(facts, why.buf);
	strbuf_release(&why);
}

static void tracepoint_check(struct doctor_facts *facts)
{
	struct perf_event_attr like, a;
	cpu_clock_attr_fill(&like);
	const char *name = NULL;
	int state_offset = -1;
	struct strbuf why = STRBUF_INIT;
	if (perf_choose_switches(&a, &like, &name, &state_offset, NULL, &why)) {
		doctor_fact_add(facts, DOCTOR_NO, "sched_switch", "",
				"off-CPU time: no switch event opens");
		doctor_fix_set(facts, why.buf);
	} else if (!strcmp(name, "sched:sched_switch")) {
		doctor_fact_add(facts, DOCTOR_OK, "sched_switch", name,
				"off-CPU time: sched_switch tracepoint opens%s",
				state_offset < 0 ? " (without the thread state)" : "");
	} else {
		doctor_fact_add(
		    facts, DOCTOR_LIMITED, "sched_switch", name,
		    "off-CPU time: tracefs or sched_switch unavailable, context-switches "
		    "instead (no waiting state)");
		doctor_fix_set(facts, "mount tracefs (mount -t tracefs nodev /sys/kernel/tracing) "
				      "and run as root or with kernel.perf_event_paranoid=-1");
	}
	strbuf_release(&why);
}

void doctor_check_perf(struct doctor_facts *facts)
{
	kernel_check(facts);
	paranoid_check(facts);
	privilege_check(facts);
	seccomp_check(facts);
	sampling_check(facts, "perf_per_task", 0, -1, "per task");
	sampling_check(facts, "perf_per_cpu", -1, first_cpu(), "per CPU");
	counters_check(facts);
	tracepoint_check(facts);
}

/* ---- ptrace ---- */

static void ptrace_scope_check(struct doctor_facts *facts)
{
	char buf[16];
	if (file_read_small("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) <= 0) {
		doctor_fact_add(facts, DOCTOR_OK, "ptrace_scope", "",
				"ptrace scope: no Yama here (classic ptrace rules)");
		return;
	}
	int scope = atoi(buf);
	snprintf(buf, sizeof(buf), "%d", scope);
	if (scope == 0)
		doctor_fact_add(facts, DOCTOR_OK, "ptrace_scope", buf,
				"ptrace scope 0: attach to any process of yours");
	else if (scope == 1)
		doctor_fact_add(facts, DOCTOR_LIMITED, "ptrace_scope", buf,
				"ptrace scope 1: run works; attach and dump need root or "
				"CAP_SYS_PTRACE");
	else
		doctor_fact_add(facts, DOCTOR_NO, "ptrace_scope", buf,
				"ptrace scope %d: attach and dump refused%s", scope,
				scope >= 3 ? " even to root" : " without CAP_SYS_PTRACE");
	if (scope == 1 || scope == 2)
		doctor_fix_set(facts, "sudo sysctl kernel.yama.ptrace_scope=0, or run attach/dump "
				      "as root");
	else if (scope >= 3)
		doctor_fix_set(facts, "scope 3 holds until reboot: boot without it to attach");
}

/* Reads a word of a forked child's memory, as the Python probes read a target's. */
static void vm_read_check(struct doctor_facts *facts)
{
	static const unsigned long marker = 0x736f6e6465UL; /* read-only: no mutable global */
	pid_t child = fork();
	if (child < 0) {
		doctor_fact_add(facts, DOCTOR_LIMITED, "process_vm_readv", "",
				"process_vm_readv: could not fork a child to try (%s)",
				strerror(errno));
		return;
	}
	if (child == 0) {
		pause();
		_exit(0);
	}
	unsigned long got = 0;
	struct iovec local = { &got, sizeof(got) };
	struct iovec remote = { (void *)&marker, sizeof(marker) };
	ssize_t n = process_vm_readv(child, &local, 1, &remote, 1, 0);
	int err = errno;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	if (n == (ssize_t)sizeof(got) && got == marker) {
		doctor_fact_add(facts, DOCTOR_OK, "process_vm_readv", "ok",
				"process_vm_readv on a child: works (Python stacks, dump)");
		return;
	}
	doctor_fact_add(facts, DOCTOR_NO, "process_vm_readv", n < 0 ? perf_errno_name(err) : "",
			"process_vm_readv on a child: %s",
			n < 0 ? strerror(err) : "read the wrong bytes");
	doctor_fix_set(facts, err == ENOSYS || err == EPERM
				  ? "a seccomp profile blocks it: run the container with "
				    "--cap-add SYS_PTRACE or seccomp=unconfined"
				  : "");
}

void doctor_check_ptrace(struct doctor_facts *facts)
{
	ptrace_scope_check(facts);
	vm_read_check(facts);
}
