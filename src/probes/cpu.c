/* cpu probe: perf_event sampling of every thread of the target at --rate Hz,
 * with native call stacks (frame pointers, or DWARF unwinding of a copied user
 * stack), symbolized into the shared frames/stack_nodes/samples tables.
 *
 * Events are per task and per CPU with inherit=1 (the kernel will not map an
 * inherited event opened with cpu -1), and every event of a CPU writes into
 * that CPU's one ring (SET_OUTPUT). Threads and children created later inherit
 * them, so the spawned leader, opened before it execs, covers the whole tree.
 * A process found later that no sampled process forked gets events of its
 * own, one per existing thread. Records are handled in time order across the
 * rings; stacks are kept raw (module, offset) and symbolized at stop.
 *
 * With the offcpu probe on, each task also gets a switch event per CPU
 * (sched:sched_switch with stacks, plus switch records), writing into a second
 * set of per-CPU rings; offcpu.c turns them into blocked intervals, which are
 * stored as "offcpu" samples through the same stacks and symbolizer.
 *
 * When the sampling event is cycles, it leads a group with instructions and
 * cache-misses, and each sample reads the group (PERF_SAMPLE_READ): the
 * counts since the same thread's previous sample on that CPU are charged to
 * the sampled stack, giving per-function IPC and misses (table
 * sample_counters). Linux before 6.12 refuses PERF_SAMPLE_READ on inherited
 * events; sampling then goes on without the group. SONDE_COUNTERS_EVENTS=
 * software reads task-clock and page-faults the same way (for tests). */
#define LOG_DOMAIN "cpu"
#include "probe.h"
#include "perf_record.h"
#include "perf_ring.h"
#include "offcpu.h"
#include "perf_events.h"
#include "thread_names.h"
#include "../record/recorder.h"
#include "../record/stacks.h"
#include "../symbols/fpcheck.h"
#include "../symbols/maps.h"
#include "../symbols/symbolize.h"
#include "../symbols/unwind.h"
#include "../util/clock.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <pthread.h>
#include <sched.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CPU_POLL_NS (20 * NS_PER_MS)
#define CPU_POLL_DWARF_NS (10 * NS_PER_MS)
#define CPU_MAX_FRAMES 127	   /* kernel's sample_max_stack default */
#define CPU_MAX_OUT_FRAMES 512	   /* after inlined frames are expanded */
#define CPU_MAX_FDS 65536	   /* events: CPUs x processes (x threads when attached late) */
#define CPU_DEFAULT_STACK_BYTES 16384
#define CPU_EMPTY_STACK UINT32_MAX
#define CPU_DWARF_RINGS_BYTES (64u << 20)
#define CPU_MAX_PENDING (1u << 20) /* queued samples (24 MiB) before symbolizing catches up */
#define CPU_PUMP_NS (5 * NS_PER_MS)
#define CPU_JIT_RELOAD_NS (200 * NS_PER_MS)
#define CPU_RETAKE_RECORDS 256	   /* records handled between two takes of the rings */
#define CPU_DRAIN_BUDGET_NS (40 * NS_PER_MS)  /* per poll: reading records */
#define CPU_FLUSH_BUDGET_NS (40 * NS_PER_MS)  /* per flush: symbolizing new stacks */
#define CPU_FLUSH_PERIOD_NS (500 * NS_PER_MS) /* samples are written this often */

/* Registers asked for with dwarf unwinding: ax bx cx dx si di bp sp ip r8..r15. */
#define CPU_REGS_MASK (0x1ffULL | (0xffULL << 16))
#define CPU_NREGS 17

#define CPU_GROUP_MAX 3 /* the sampling event and the counters read with it */
#define CPU_GROUP_READ_FORMAT (PERF_FORMAT_GROUP | PERF_FORMAT_ID)

/* Sample layout (PERF_SAMPLE_* bits in order): ip, pid/tid, time, callchain,
 * [regs_user, stack_user]. */
#define CPU_SAMPLE_BASE \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN)

/* One process's address space as seen from the samples. */
struct cpu_proc {
	pid_t pid;
	struct maps maps;
	struct unwinder *uw; /* dwarf mode, made on first use */
	int covered;	     /* part of the target: a covered process forked it, or it was added */
	int gated;	     /* per-CPU mode: sonde's fork before it execs the command */
	int maps_known;	     /* maps were read or copied at least once */
};

/* An address made stable across the run: a file offset in a module (id >= 0),
 * a kernel address, or an address in pid's anonymous memory. */
enum { RAW_KERNEL = -1, RAW_ANON = -2 };
struct raw_frame {
	int32_t module;
	int32_t pid; /* RAW_ANON only, else 0 */
	uint64_t addr;
};

/* A distinct stack, as raw frames (innermost first), and its node once symbolized. */
struct raw_stack {
	size_t at, n; /* in cpu_state.raw */
	int64_t node; /* -1: not symbolized yet */
};

/* Counter deltas charged to one raw stack (index as in cpu_state.stacks). */
struct stack_counts {
	uint64_t v[CPU_GROUP_MAX];
	uint64_t samples;
};

/* The group's values at a thread's previous sample on one CPU. */
struct group_prev {
	uint64_t v[CPU_GROUP_MAX];
};

struct pending_sample {
	int64_t t_ns;
	pid_t pid, tid;
	uint32_t stack; /* index in cpu_state.stacks, or CPU_EMPTY_STACK */
	char state;	/* 0: a cpu sample; else an offcpu interval's state */
	int64_t weight; /* 1, or the interval's nanoseconds */
};

struct cpu_state {
	pid_t only_pid;	     /* --no-subprocesses: keep samples of this process only */
	uint64_t dropped_subprocess_samples;
	struct perf_event_attr attr;
	const char *event_name;
	int dwarf;
	int kernel;
	/* 1: one sampling event per CPU for the whole machine, its records kept
	 * for the target's processes only (covered); 0: inherited per-task events
	 * (when per-CPU events are refused: kernel.perf_event_paranoid > 0 without
	 * CAP_PERFMON). See docs/cpu.md for why per-CPU is preferred. */
	int percpu;
	uint64_t foreign_samples; /* per-CPU mode: samples of other processes, dropped */
	struct perf_ring *rings; /* one per possible CPU, shared by its events (SET_OUTPUT);
				    then, with offcpu, one more per CPU for the switch events */
	size_t ncpus;
	/* Copies the rings aside every CPU_PUMP_NS while the probe's own thread is
	 * busy (unwinding, symbolizing, other probes, a loaded machine). */
	pthread_t pump;
	int pump_running, pump_stop;
	int offcpu; /* the offcpu probe asked for switch events */
	struct perf_event_attr off_attr;
	const char *off_event;
	int off_state_offset; /* of prev_state in the tracepoint's raw data; -1: none */
	struct offcpu_tracker *trk;
	uint64_t off_samples, off_malformed, off_lost;
	int *fds; /* every other event */
	size_t nfds, allocfds;
	struct cpu_proc *procs;
	size_t nprocs, allocprocs;
	struct hashmap proc_ids; /* pid -> index in procs */
	struct symbolizer *sym;
	struct stack_writer *sw;
	struct hashmap frame_cache; /* raw_frame -> index in frame_pool (count in low byte) */
	int64_t *frame_pool;
	size_t npool, allocpool;
	struct hashmap stack_cache; /* raw_frame[] -> index in stacks */
	struct raw_stack *stacks;
	size_t nstacks, allocstacks;
	struct raw_frame *raw; /* the frames of every stack in stacks */
	size_t nraw, allocraw;
	struct pending_sample *pending; /* read, not yet written */
	size_t npending, allocpending;
	struct thread_names names;
	/* Samples are symbolized while the target runs, perhaps before a JIT wrote
	 * its perf map: an address it does not name is looked up again (the map
	 * read again at most every CPU_JIT_RELOAD_NS), and not cached. */
	struct hashmap jit_read; /* pid -> when its perf map was last read */
	int unresolved;		 /* the last symbolize_stack met such an address */
	int64_t next_flush_ns;
	/* The counters read with each sample (group[0] is the sampling event). */
	size_t ngroup; /* 0: samples read no counters */
	const char *group_names[CPU_GROUP_MAX];
	struct perf_event_attr group_attr[CPU_GROUP_MAX]; /* members, from 1 */
	struct hashmap group_ids;  /* kernel event id -> index in the group */
	struct hashmap group_last; /* tid, leader id -> index in prev */
	struct group_prev *prev;
	size_t nprev, allocprev;
	struct stack_counts *counts; /* per raw stack */
	size_t alloccounts;
	uint64_t group_unread; /* samples whose values could not be matched */
	int64_t start_ns;
	uint64_t samples, lost, throttled, unwound_dwarf, malformed;
	uint64_t not_opened;
	int first_process_seen;
	int no_subprocesses; /* --no-subprocesses */
	int locks_made;
	/* The worker: reads, unwinds, symbolizes and writes the samples on a
	 * thread of its own from the first poll to stop, so the session loop
	 * (finding new processes, the other probes) never waits on it. It holds
	 * lock while it works; the session loop takes lock only for the first
	 * process and queues the others (qlock, held for a copy). */
	pthread_t worker;
	int worker_running, worker_stop;
	pthread_mutex_t lock, qlock;
	pthread_cond_t wake;
	struct cpu_queued *queue;
	size_t nqueue, allocqueue;
};

/* A process the session loop saw join or leave the tree, for the worker. */
struct cpu_queued {
	pid_t pid;
	int exiting;
	char *jit_map; /* exiting: its perf map, read before it is reaped (NULL: none) */
	size_t jit_len;
};

/* The running cpu probe, for the offcpu probe that rides on it. */
static struct cpu_state *cpu_running;

static int read_sysctl_int(const char *path, int fallback)
{
	char buf[32];
	if (file_read_small(path, buf, sizeof(buf)) <= 0)
		return fallback;
	return atoi(buf);
}

static int read_paranoid(void)
{
	return read_sysctl_int("/proc/sys/kernel/perf_event_paranoid", 99);
}

/* The rate the kernel will take: it refuses (EINVAL) a frequency above
 * kernel.perf_event_max_sample_rate, which it also lowers by itself when
 * sampling takes too long. */
static int clamp_rate(int rate_hz)
{
	int max = read_sysctl_int("/proc/sys/kernel/perf_event_max_sample_rate", 0);
	return max > 0 && rate_hz > max ? max : rate_hz;
}

static const char *errno_name(int err)
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

/* One line that names the setting in the way and what to run. */
static void explain_refusal(int err, struct strbuf *why)
{
	int paranoid = read_paranoid();
	char setting[96];
	if (paranoid == 99)
		snprintf(setting, sizeof(setting), "/proc/sys/kernel/perf_event_paranoid is unreadable");
	else
		snprintf(setting, sizeof(setting), "kernel.perf_event_paranoid is %d", paranoid);
	if (err == ENOSYS) {
		strbuf_addf(why, "perf_event_open is not available (ENOSYS): a seccomp filter (a "
				 "container runtime's default profile) blocks it, or the kernel lacks "
				 "CONFIG_PERF_EVENTS (%s); run the container with --security-opt "
				 "seccomp=unconfined and --cap-add PERFMON, or profile on the host",
			    setting);
	} else if ((err == EACCES || err == EPERM) && paranoid > 2 && geteuid() != 0) {
		strbuf_addf(why, "perf_event_open was refused (%s): %s; run `sysctl "
				 "kernel.perf_event_paranoid=1`, or run sonde as root or with CAP_PERFMON",
			    errno_name(err), setting);
	} else if (err == EACCES || err == EPERM) {
		strbuf_addf(why, "perf_event_open was refused (%s) although %s allows it: a seccomp "
				 "filter or security module (container runtime) blocks it; run with "
				 "--security-opt seccomp=unconfined, as root or with CAP_PERFMON, or try "
				 "`sysctl kernel.perf_event_paranoid=1`",
			    errno_name(err), setting);
	} else {
		strbuf_addf(why, "perf_event_open failed (%s; %s)", errno_name(err), setting);
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

/* Fills attr for this machine: cycles when the hardware counts them, else
 * cpu-clock; kernel frames when allowed. Tries the event on sonde itself.
 * Returns 0, or an errno (with why filled). */
static int choose_event(struct perf_event_attr *attr, const char *event, int rate_hz, int dwarf,
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
	explain_refusal(err, why);
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
static int choose_group(struct cpu_state *cs, const char *leader_name, struct strbuf *why)
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

static struct cpu_proc *proc_get(struct cpu_state *cs, pid_t pid, int create)
{
	int64_t *idx = hashmap_get(&cs->proc_ids, &pid, sizeof(pid));
	if (idx)
		return &cs->procs[*idx];
	if (!create)
		return NULL;
	if (cs->nprocs == cs->allocprocs) {
		cs->allocprocs = cs->allocprocs ? 2 * cs->allocprocs : 16;
		cs->procs = xrealloc(cs->procs, cs->allocprocs * sizeof(*cs->procs));
	}
	struct cpu_proc *pr = &cs->procs[cs->nprocs];
	memset(pr, 0, sizeof(*pr));
	pr->pid = pid;
	hashmap_put(&cs->proc_ids, &pid, sizeof(pid), (int64_t)cs->nprocs++);
	return pr;
}

/* The process's entry when its records are the target's: in per-CPU mode only
 * covered processes (the others are the rest of the machine); else every
 * process, as only the target's events write to the rings. */
static struct cpu_proc *target_proc(struct cpu_state *cs, pid_t pid)
{
	if (!cs->percpu)
		return proc_get(cs, pid, 1);
	struct cpu_proc *pr = proc_get(cs, pid, 0);
	return pr && pr->covered ? pr : NULL;
}

static void proc_maps_changed(struct cpu_proc *pr)
{
	pr->maps_known = 1;
	if (pr->uw)
		unwinder_set_maps(pr->uw, &pr->maps);
}

/* ---- reading the ring buffers ---- */

static void on_mmap2(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_mmap2 m;
	if (perf_decode_mmap2(rec, size, &m) || !(m.prot & PROT_EXEC))
		return;
	struct cpu_proc *pr = target_proc(cs, (pid_t)m.pid);
	if (!pr)
		return;
	/* "//anon" and friends: anonymous executable memory (JIT). */
	maps_insert(&pr->maps, m.addr, m.addr + m.len, m.pgoff,
		    !strncmp(m.filename, "//anon", 6) ? "" : m.filename);
	proc_maps_changed(pr);
}

static void on_comm(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_comm c;
	if (perf_decode_comm(rec, size, &c))
		return;
	struct cpu_proc *pr = target_proc(cs, (pid_t)c.pid);
	if (!pr)
		return;
	thread_names_set(&cs->names, (pid_t)c.pid, (pid_t)c.tid, c.comm);
	const char *name = thread_names_first_use(&cs->names, (pid_t)c.pid, (pid_t)c.tid);
	if (name)
		stack_thread_name(cs->sw, (pid_t)c.pid, (pid_t)c.tid, name);
	if (!c.exec)
		return;
	/* exec replaced the address space: the mmap records that follow describe it.
	 * Read /proc too, in case some came before this record. */
	pr->gated = 0;
	maps_clear(&pr->maps);
	maps_read_pid(&pr->maps, (pid_t)c.pid);
	proc_maps_changed(pr);
}

static void on_fork(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_fork f;
	if (perf_decode_fork(rec, size, &f))
		return;
	struct cpu_proc *parent = target_proc(cs, (pid_t)f.ppid);
	if (!parent)
		return; /* per-CPU mode: a process outside the target forked */
	thread_names_fork(&cs->names, (pid_t)f.pid, (pid_t)f.tid, (pid_t)f.ppid, (pid_t)f.ptid);
	if (f.pid == f.ppid)
		return; /* a new thread */
	struct maps copy = MAPS_INIT;
	for (size_t i = 0; i < parent->maps.n; i++)
		maps_insert(&copy, parent->maps.v[i].start, parent->maps.v[i].end,
			    parent->maps.v[i].pgoff, parent->maps.v[i].path);
	struct cpu_proc *child = proc_get(cs, (pid_t)f.pid, 1); /* may move parent */
	maps_release(&child->maps);
	child->maps = copy;
	child->covered = 1;
	proc_maps_changed(child);
}

/* A process's main thread exited: its unwinder (open ELF files, CFI) is no
 * longer needed; its maps stay, as they are small. */
static void on_exit_record(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_fork f;
	if (perf_decode_fork(rec, size, &f) || f.pid != f.tid)
		return;
	struct cpu_proc *pr = proc_get(cs, (pid_t)f.pid, 0);
	if (pr && pr->uw) {
		unwinder_free(pr->uw);
		pr->uw = NULL; /* made again if a straggling thread is sampled */
	}
}

static void raw_resolve(struct cpu_state *cs, struct cpu_proc *pr, uint64_t pc,
			struct raw_frame *out)
{
	struct map_entry *e = (struct map_entry *)maps_find(&pr->maps, pc);
	if (!e || !e->path[0]) {
		*out = (struct raw_frame){ RAW_ANON, (int32_t)pr->pid, pc };
		return;
	}
	if (e->tag < 0)
		e->tag = symbolizer_module(cs->sym, e->path, pr->pid);
	if (e->tag < 0) {
		*out = (struct raw_frame){ RAW_ANON, (int32_t)pr->pid, pc };
		return;
	}
	*out = (struct raw_frame){ e->tag, 0, pc - e->start + e->pgoff };
}

/* Reads pid's perf map again when it was not read for CPU_JIT_RELOAD_NS.
 * 1 when it did. */
static int jit_reread(struct cpu_state *cs, pid_t pid)
{
	int64_t now = clock_mono_ns();
	int64_t *at = hashmap_get(&cs->jit_read, &pid, sizeof(pid));
	if (at && now - *at < CPU_JIT_RELOAD_NS)
		return 0;
	hashmap_put(&cs->jit_read, &pid, sizeof(pid), now);
	symbolizer_jit_load(cs->sym, pid);
	return 1;
}

/* Frame ids (outermost first) for one raw frame, cached unless it is an
 * anonymous address no perf map names yet. */
static size_t frame_ids(struct cpu_state *cs, const struct raw_frame *rf, int64_t *ids,
			size_t max)
{
	int64_t *hit = hashmap_get(&cs->frame_cache, rf, sizeof(*rf));
	if (hit) {
		size_t n = (size_t)(*hit & 0xff), at = (size_t)(*hit >> 8);
		if (n > max)
			n = max;
		memcpy(ids, &cs->frame_pool[at], n * sizeof(*ids));
		return n;
	}
	struct sym_frame sf[SYMBOLIZER_MAX_INLINE + 1];
	size_t n;
	const char *module = NULL;
	int unresolved = 0;
	if (rf->module == RAW_KERNEL) {
		symbolizer_kernel(cs->sym, rf->addr, &sf[0], &module);
		n = 1;
	} else if (rf->module == RAW_ANON) {
		symbolizer_jit(cs->sym, (pid_t)rf->pid, rf->addr, &sf[0], &module);
		if (!strcmp(module, "[anon]") && jit_reread(cs, (pid_t)rf->pid))
			symbolizer_jit(cs->sym, (pid_t)rf->pid, rf->addr, &sf[0], &module);
		unresolved = !strcmp(module, "[anon]");
		n = 1;
	} else {
		n = symbolizer_lookup(cs->sym, rf->module, rf->addr, sf, SYMBOLIZER_MAX_INLINE + 1);
		module = symbolizer_module_path(cs->sym, rf->module);
	}
	int64_t got[SYMBOLIZER_MAX_INLINE + 1];
	for (size_t i = 0; i < n; i++) {
		/* sf is innermost first; ids go outermost first. */
		const struct sym_frame *f = &sf[n - 1 - i];
		struct frame_info fi = {
			.function = f->function,
			.file = f->file,
			.line = f->line,
			.module = module,
			.kind = rf->module == RAW_KERNEL ? "kernel" : f->inlined ? "inlined" : "native",
		};
		got[i] = stack_frame(cs->sw, &fi);
	}
	if (unresolved) { /* named later, perhaps */
		cs->unresolved = 1;
		n = n > max ? max : n;
		memcpy(ids, got, n * sizeof(*ids));
		return n;
	}
	if (cs->npool + n > cs->allocpool) {
		cs->allocpool = cs->allocpool ? 2 * cs->allocpool : 4096;
		while (cs->allocpool < cs->npool + n)
			cs->allocpool *= 2;
		cs->frame_pool = xrealloc(cs->frame_pool, cs->allocpool * sizeof(*cs->frame_pool));
	}
	memcpy(&cs->frame_pool[cs->npool], got, n * sizeof(*got));
	hashmap_put(&cs->frame_cache, rf, sizeof(*rf), (int64_t)((cs->npool << 8) | n));
	cs->npool += n;
	if (n > max)
		n = max;
	memcpy(ids, got, n * sizeof(*ids));
	return n;
}

static void name_thread(struct cpu_state *cs, pid_t pid, pid_t tid)
{
	const char *name = thread_names_first_use(&cs->names, pid, tid);
	if (name)
		stack_thread_name(cs->sw, pid, tid, name);
}

/* Queues one sample whose frames (innermost first) are raw[0..n). Its stack is
 * interned as raw frames now; symbolizing waits for flush_pending, so a slow
 * first look at a big library never keeps the rings from being read. */
static uint32_t intern_raw_stack(struct cpu_state *cs, const struct raw_frame *raw, size_t n)
{
	uint32_t stack = CPU_EMPTY_STACK;
	if (n) {
		int64_t *hit = hashmap_get(&cs->stack_cache, raw, n * sizeof(*raw));
		if (hit) {
			stack = (uint32_t)*hit;
		} else if (cs->nstacks < CPU_EMPTY_STACK) {
			if (cs->nstacks == cs->allocstacks) {
				cs->allocstacks = cs->allocstacks ? 2 * cs->allocstacks : 1024;
				cs->stacks = xrealloc(cs->stacks, cs->allocstacks * sizeof(*cs->stacks));
			}
			if (cs->nraw + n > cs->allocraw) {
				cs->allocraw = cs->allocraw ? 2 * cs->allocraw : 16384;
				while (cs->allocraw < cs->nraw + n)
					cs->allocraw *= 2;
				cs->raw = xrealloc(cs->raw, cs->allocraw * sizeof(*cs->raw));
			}
			memcpy(&cs->raw[cs->nraw], raw, n * sizeof(*raw));
			cs->stacks[cs->nstacks] = (struct raw_stack){ cs->nraw, n, -1 };
			cs->nraw += n;
			stack = (uint32_t)cs->nstacks++;
			hashmap_put(&cs->stack_cache, raw, n * sizeof(*raw), stack);
		}
	}
	return stack;
}

static void push_pending(struct cpu_state *cs, const struct pending_sample *ps)
{
	/* Inherited events follow children too; --no-subprocesses keeps the first. */
	if (cs->only_pid && ps->pid != cs->only_pid) {
		cs->dropped_subprocess_samples++;
		return;
	}
	if (cs->npending == cs->allocpending) {
		cs->allocpending = cs->allocpending ? 2 * cs->allocpending : 4096;
		cs->pending = xrealloc(cs->pending, cs->allocpending * sizeof(*cs->pending));
	}
	cs->pending[cs->npending++] = *ps;
	name_thread(cs, ps->pid, ps->tid);
}

static void queue_interval(struct cpu_state *cs, const struct offcpu_interval *iv)
{
	struct pending_sample ps = { iv->t_ns, iv->pid, iv->tid, iv->stack, iv->state, iv->dur_ns };
	push_pending(cs, &ps);
}

static int64_t symbolize_stack(struct cpu_state *cs, const struct raw_stack *rs)
{
	int64_t ids[CPU_MAX_OUT_FRAMES];
	size_t nids = 0;
	for (size_t i = rs->n; i-- > 0 && nids < CPU_MAX_OUT_FRAMES;)
		nids += frame_ids(cs, &cs->raw[rs->at + i], ids + nids, CPU_MAX_OUT_FRAMES - nids);
	return stack_intern(cs->sw, ids, nids);
}

/* Writes queued samples in order, symbolizing new stacks until budget_ns is
 * spent (< 0: no limit; a single library load is never cut short). */
static void flush_pending(struct cpu_state *cs, int64_t budget_ns)
{
	int64_t deadline = budget_ns < 0 ? INT64_MAX : clock_mono_ns() + budget_ns;
	size_t i = 0;
	for (; i < cs->npending; i++) {
		const struct pending_sample *ps = &cs->pending[i];
		int64_t node = 0;
		if (ps->stack != CPU_EMPTY_STACK) {
			struct raw_stack *rs = &cs->stacks[ps->stack];
			if (rs->node < 0) {
				if (clock_mono_ns() > deadline)
					break;
				cs->unresolved = 0;
				node = symbolize_stack(cs, rs);
				if (!cs->unresolved)
					rs->node = node;
			} else {
				node = rs->node;
			}
		}
		struct sample_info si = { .t_ns = ps->t_ns, .pid = ps->pid, .tid = ps->tid,
					  .node = node, .source = ps->state ? "offcpu" : "cpu",
					  .weight = ps->weight, .on_cpu = !ps->state, .gil = -1 };
		stack_sample(cs->sw, &si);
		if (ps->state) {
			struct offcpu_interval iv = { .pid = ps->pid, .tid = ps->tid,
						      .t_ns = ps->t_ns, .dur_ns = ps->weight,
						      .state = ps->state, .stack = ps->stack };
			offcpu_tracker_account(cs->trk, &iv, node);
			cs->off_samples++;
		} else {
			cs->samples++;
		}
	}
	if (i && i < cs->npending)
		memmove(cs->pending, cs->pending + i, (cs->npending - i) * sizeof(*cs->pending));
	cs->npending -= i;
}

/* User frames from a DWARF unwind of the sample's stack copy. */
static size_t unwind_user(struct cpu_state *cs, struct cpu_proc *pr, const struct perf_sample *ps,
			  struct raw_frame *raw, size_t max)
{
	if (!ps->abi || ps->nregs != CPU_NREGS)
		return 0;
	/* perf order ax bx cx dx si di bp sp ip r8..r15 -> DWARF numbering */
	static const int to_dwarf[CPU_NREGS] = { 0, 3, 2, 1, 4, 5, 6, 7, 16,
						 8, 9, 10, 11, 12, 13, 14, 15 };
	struct unwind_input in = { .tid = (pid_t)ps->tid, .stack = ps->stack,
				   .stack_len = (size_t)ps->stack_len };
	for (int i = 0; i < CPU_NREGS; i++)
		in.regs[to_dwarf[i]] = ps->regs[i];
	if (!pr->uw) {
		pr->uw = unwinder_new(pr->pid);
		unwinder_set_maps(pr->uw, &pr->maps);
	}
	uint64_t pcs[CPU_MAX_FRAMES];
	size_t npcs = unwinder_unwind(pr->uw, &in, pcs, max < CPU_MAX_FRAMES ? max : CPU_MAX_FRAMES);
	if (npcs > 1)
		cs->unwound_dwarf++;
	for (size_t i = 0; i < npcs; i++)
		raw_resolve(cs, pr, pcs[i], &raw[i]);
	return npcs;
}

/* The sample's frames, innermost first, in raw (room for 2 * CPU_MAX_FRAMES + 2). */
static size_t sample_frames(struct cpu_state *cs, const struct perf_sample *sp,
			    struct raw_frame *raw, size_t cap)
{
	const struct perf_sample ps = *sp;
	pid_t pid = (pid_t)ps.pid;
	struct cpu_proc *pr = proc_get(cs, pid, 1);
	if (!pr->maps_known) { /* its fork record was lost: ask /proc, once */
		maps_read_pid(&pr->maps, pid);
		proc_maps_changed(pr);
	}
	size_t n = 0;
	int user = 0, first_user = 1;
	for (uint64_t i = 0; i < ps.nr && n < CPU_MAX_FRAMES; i++) {
		uint64_t pc = perf_u64(ps.chain + i * 8);
		if (pc >= (uint64_t)PERF_CONTEXT_MAX) {
			user = pc == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (!user) {
			raw[n++] = (struct raw_frame){ RAW_KERNEL, 0, pc };
			continue;
		}
		/* Return addresses point after the call: step back into it. */
		raw_resolve(cs, pr, first_user ? pc : pc - 1, &raw[n++]);
		first_user = 0;
	}
	if (cs->dwarf)
		n += unwind_user(cs, pr, &ps, raw + n, cap - n);
	if (n == 0 && ps.ip)
		raw_resolve(cs, pr, ps.ip, &raw[n++]);
	return n;
}

/* Charges the group's counts since the thread's previous sample on the same
 * event (the same CPU) to the sampled stack. */
static void count_group(struct cpu_state *cs, const struct perf_sample *ps, uint32_t stack)
{
	const struct perf_read *rd = &ps->read;
	uint64_t now[CPU_GROUP_MAX] = { 0 };
	if (!rd->n) {
		cs->group_unread++;
		return;
	}
	for (size_t i = 0; i < rd->n; i++) {
		int64_t *k = hashmap_get(&cs->group_ids, &rd->v[i].id, sizeof(uint64_t));
		if (!k) {
			cs->group_unread++;
			return;
		}
		now[*k] = rd->v[i].value;
	}
	/* Per-CPU events count every task on the CPU: the delta since the CPU's
	 * previous sample is what ran there, charged to this sample's stack. */
	uint64_t key[2] = { cs->percpu ? 0 : ps->tid, rd->v[0].id };
	int64_t *at = hashmap_get(&cs->group_last, key, sizeof(key));
	if (!at) {
		if (cs->nprev == cs->allocprev) {
			cs->allocprev = cs->allocprev ? 2 * cs->allocprev : 256;
			cs->prev = xrealloc(cs->prev, cs->allocprev * sizeof(*cs->prev));
		}
		memset(&cs->prev[cs->nprev], 0, sizeof(cs->prev[0]));
		at = hashmap_put(&cs->group_last, key, sizeof(key), (int64_t)cs->nprev++);
	}
	struct group_prev *pv = &cs->prev[*at];
	if (stack != CPU_EMPTY_STACK) {
		if (stack >= cs->alloccounts) {
			size_t old = cs->alloccounts;
			cs->alloccounts = old ? 2 * old : 1024;
			while (cs->alloccounts <= stack)
				cs->alloccounts *= 2;
			cs->counts = xrealloc(cs->counts, cs->alloccounts * sizeof(*cs->counts));
			memset(cs->counts + old, 0, (cs->alloccounts - old) * sizeof(*cs->counts));
		}
		struct stack_counts *sc = &cs->counts[stack];
		for (size_t k = 0; k < cs->ngroup; k++)
			sc->v[k] += now[k] >= pv->v[k] ? now[k] - pv->v[k] : now[k];
		sc->samples++;
	}
	memcpy(pv->v, now, sizeof(now));
}

static void on_sample(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_sample ps;
	if (perf_decode_sample_read(rec, size, cs->attr.sample_type, cs->attr.read_format,
				    cs->attr.sample_regs_user, &ps)) {
		cs->malformed++;
		return;
	}
	if (cs->percpu) {
		struct cpu_proc *pr = target_proc(cs, (pid_t)ps.pid);
		if (!pr || pr->gated) {
			cs->foreign_samples++;
			return;
		}
	}
	/* --no-subprocesses: a child's sample is dropped before it is unwound. */
	if (cs->only_pid && (pid_t)ps.pid != cs->only_pid) {
		cs->dropped_subprocess_samples++;
		return;
	}
	struct raw_frame raw[2 * CPU_MAX_FRAMES + 2];
	size_t n = sample_frames(cs, &ps, raw, sizeof(raw) / sizeof(raw[0]));
	uint32_t stack = intern_raw_stack(cs, raw, n);
	if (cs->ngroup)
		count_group(cs, &ps, stack);
	struct pending_sample pd = { (int64_t)ps.time - cs->start_ns, (pid_t)ps.pid, (pid_t)ps.tid,
				     stack, 0, 1 };
	push_pending(cs, &pd);
}

/* A switch-out: the thread's stack and state as it leaves the CPU. */
static void on_switch_sample(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_sample ps;
	if (perf_decode_sample(rec, size, cs->off_attr.sample_type, cs->off_attr.sample_regs_user,
			       &ps)) {
		cs->off_malformed++;
		return;
	}
	struct raw_frame raw[2 * CPU_MAX_FRAMES + 2];
	size_t n = sample_frames(cs, &ps, raw, sizeof(raw) / sizeof(raw[0]));
	offcpu_tracker_out(cs->trk, (pid_t)ps.pid, (pid_t)ps.tid, (int64_t)ps.time - cs->start_ns,
			   offcpu_state_from_raw(ps.raw, ps.raw_size, cs->off_state_offset),
			   intern_raw_stack(cs, raw, n));
}

static void on_switch_record(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_switch sw;
	struct offcpu_interval iv;
	if (perf_decode_switch(rec, size, cs->off_attr.sample_type, &sw)) {
		cs->off_malformed++;
		return;
	}
	if (offcpu_tracker_switch(cs->trk, (pid_t)sw.pid, (pid_t)sw.tid,
				  (int64_t)sw.time - cs->start_ns, sw.out, sw.preempt, &iv))
		queue_interval(cs, &iv);
}

static void on_record(struct cpu_state *cs, const uint8_t *rec, size_t size, int switch_ring)
{
	uint32_t type;
	uint16_t misc;
	uint64_t lost;
	if (perf_record_header(rec, size, &type, &misc))
		return;
	if (switch_ring) {
		if (type == PERF_RECORD_SAMPLE)
			on_switch_sample(cs, rec, size);
		else if (type == PERF_RECORD_SWITCH)
			on_switch_record(cs, rec, size);
		else if ((type == PERF_RECORD_LOST || type == PERF_RECORD_LOST_SAMPLES) &&
			 !perf_decode_lost(rec, size, &lost))
			cs->off_lost += lost;
		return;
	}
	switch (type) {
	case PERF_RECORD_SAMPLE: on_sample(cs, rec, size); break;
	case PERF_RECORD_MMAP2: on_mmap2(cs, rec, size); break;
	case PERF_RECORD_COMM: on_comm(cs, rec, size); break;
	case PERF_RECORD_FORK: on_fork(cs, rec, size); break;
	case PERF_RECORD_EXIT:
		on_exit_record(cs, rec, size);
		if (cs->trk) {
			struct perf_fork f;
			if (!perf_decode_fork(rec, size, &f) && target_proc(cs, (pid_t)f.pid))
				offcpu_tracker_exit(cs->trk, (pid_t)f.tid,
						    (int64_t)f.time - cs->start_ns);
		}
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		if (!perf_decode_lost(rec, size, &lost))
			cs->lost += lost;
		break;
	case PERF_RECORD_THROTTLE: cs->throttled++; break;
	default: break;
	}
}

/* Reads every ring and handles the records in time order: an exec or mmap
 * seen on one CPU must apply to the samples that follow it on another. The
 * rings are taken again every CPU_RETAKE_RECORDS records, so a long drain
 * (DWARF unwinding on a busy machine) frees the kernel's rings as it goes.
 * budget_ns >= 0: stops once that is spent, leaving the rest staged for the
 * next drain; < 0: handles every record written before the call. */
static void drain_all(struct cpu_state *cs, int64_t budget_ns)
{
	size_t nrings = cs->offcpu ? 2 * cs->ncpus : cs->ncpus;
	int64_t now = clock_mono_ns();
	int64_t deadline = budget_ns < 0 ? INT64_MAX : now + budget_ns;
	int64_t until = budget_ns < 0 ? now : INT64_MAX;
	for (size_t handled = 0;; handled++) {
		if (handled % CPU_RETAKE_RECORDS == 0) {
			if (handled && clock_mono_ns() > deadline)
				break;
			for (size_t i = 0; i < nrings; i++)
				perf_ring_take(&cs->rings[i]);
		}
		size_t best = SIZE_MAX;
		const uint8_t *best_rec = NULL;
		size_t best_size = 0;
		int64_t best_t = INT64_MAX;
		for (size_t i = 0; i < nrings; i++) {
			size_t size;
			const uint8_t *rec = perf_ring_peek(&cs->rings[i], &size);
			if (!rec)
				continue;
			int64_t t = perf_record_time(rec, size,
						     i < cs->ncpus ? cs->attr.sample_type
								   : cs->off_attr.sample_type);
			if (t < best_t) { /* no time (-1): handle it first */
				best_t = t;
				best = i;
				best_rec = rec;
				best_size = size;
			}
		}
		if (best == SIZE_MAX || (best_t > until && best_t != INT64_MAX))
			break;
		on_record(cs, best_rec, best_size, best >= cs->ncpus);
		perf_ring_next(&cs->rings[best]);
	}
}

static void *pump_rings(void *arg)
{
	struct cpu_state *cs = arg;
	struct timespec nap = { 0, CPU_PUMP_NS };
	while (!__atomic_load_n(&cs->pump_stop, __ATOMIC_ACQUIRE)) {
		for (size_t i = 0; i < 2 * cs->ncpus; i++)
			perf_ring_pump(&cs->rings[i]);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static void pump_start(struct cpu_state *cs)
{
	cs->pump_running = !pthread_create(&cs->pump, NULL, pump_rings, cs);
	if (!cs->pump_running)
		log_debug("no thread to read the rings: they are read by the poll only");
}

static void pump_stop(struct cpu_state *cs)
{
	if (!cs->pump_running)
		return;
	__atomic_store_n(&cs->pump_stop, 1, __ATOMIC_RELEASE);
	pthread_join(cs->pump, NULL);
	cs->pump_running = 0;
}

/* ---- opening events ---- */

/* Data pages per CPU ring: room for well over one poll period of samples at a
 * high rate (dwarf samples carry the stack copy: 8 MiB per CPU, 64 MiB in all
 * at most). */
static size_t ring_pages(const struct cpu_state *cs)
{
	long page = sysconf(_SC_PAGESIZE);
	if (!cs->dwarf)
		return 128;
	size_t pages = 2048;
	while (pages > 128 && pages * (size_t)page * cs->ncpus > CPU_DWARF_RINGS_BYTES)
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
static int choose_percpu(struct cpu_state *cs, struct strbuf *why)
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
			    errno_name(errno));
		return 0;
	}
	close((int)fd);
	a.disabled = 0;
	cs->attr = a;
	return 1;
}

/* Opens the per-CPU sampling events, each writing into its CPU's ring.
 * 0, or the errno of the first CPU that refused one (offline CPUs are skipped). */
static int open_percpu(struct cpu_state *cs)
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

static void process_add(struct cpu_state *cs, pid_t pid)
{
	if (cs->no_subprocesses && !cs->first_process_seen)
		cs->only_pid = pid;
	drain_all(cs, -1); /* fork records tell which new processes we already cover */
	struct cpu_proc *pr = proc_get(cs, pid, 1);
	if (pr->covered)
		return;
	pr->covered = 1;
	int pre_exec = !cs->first_process_seen && is_pre_exec(pid);
	cs->first_process_seen = 1;
	pr->gated = pre_exec && cs->percpu;
	if (!pre_exec) {
		maps_clear(&pr->maps);
		maps_read_pid(&pr->maps, pid);
		proc_maps_changed(pr);
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

/* ---- the probe ---- */

static int resolve_dwarf(const struct probe_config *cfg, struct strbuf *how)
{
	if (cfg->call_graph == PROBE_CALL_GRAPH_FP)
		return 0;
	if (cfg->call_graph == PROBE_CALL_GRAPH_DWARF)
		return 1;
	char prog[4096];
	if (!cfg->argv || !cfg->argv[0] ||
	    fpcheck_resolve_program(cfg->argv[0], prog, sizeof(prog))) {
		strbuf_addstr(how, "auto: program not found, frame pointers");
		return 0;
	}
	int fp = fpcheck_elf(prog);
	strbuf_addf(how, "auto: %s %s frame pointers", prog,
		    fp > 0 ? "keeps" : fp == 0 ? "omits" : "unreadable, assuming");
	return fp == 0;
}

static int cpu_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct perf_event_attr a;
	const char *name;
	int kernel;
	int rate = clamp_rate(ctx->cfg->rate_hz > 0 ? ctx->cfg->rate_hz : 99);
	return choose_event(&a, ctx->cfg->event, rate, 0, 0, &name, &kernel, why) ? -1 : 0;
}

static int cpu_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct cpu_state *cs = xcalloc(1, sizeof(*cs));
	p->state = cs;
	const struct probe_config *cfg = ctx->cfg;
	cs->no_subprocesses = cfg->no_subprocesses;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&cs->lock, NULL);
	pthread_mutex_init(&cs->qlock, NULL);
	cs->locks_made = 1;
	int asked = cfg->rate_hz > 0 ? cfg->rate_hz : 99, rate = clamp_rate(asked);
	struct strbuf how = STRBUF_INIT;
	if (rate != asked) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "--rate %d is above kernel.perf_event_max_sample_rate; sampling at "
				 "%d Hz (sysctl kernel.perf_event_max_sample_rate=%d to allow it)",
			    asked, rate, asked);
		record_note(ctx->rec, 0, "cpu", "warning", sb.buf);
		log_warn("%s", sb.buf);
		strbuf_release(&sb);
	}
	/* Late-found processes take one event per thread and CPU: allow many files.
	 * The target was forked already and keeps its own limit. */
	struct rlimit nofile;
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	cs->dwarf = resolve_dwarf(cfg, &how);
	int stack_bytes = cfg->stack_dump_bytes > 0 ? cfg->stack_dump_bytes : CPU_DEFAULT_STACK_BYTES;
	stack_bytes = (stack_bytes + 7) & ~7;
	if (choose_event(&cs->attr, cfg->event, rate, cs->dwarf, stack_bytes, &cs->event_name,
			 &cs->kernel, why)) {
		strbuf_release(&how);
		return -1;
	}
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	cs->ncpus = ncpus > 0 ? (size_t)ncpus : 1;
	cs->rings = xcalloc(2 * cs->ncpus, sizeof(*cs->rings));
	for (size_t i = 0; i < 2 * cs->ncpus; i++)
		cs->rings[i] = (struct perf_ring)PERF_RING_INIT;
	struct strbuf pwhy = STRBUF_INIT;
	cs->percpu = choose_percpu(cs, &pwhy);
	struct strbuf gwhy = STRBUF_INIT;
	if (choose_group(cs, cs->event_name, &gwhy))
		record_note(ctx->rec, 0, "cpu", "info", gwhy.buf);
	strbuf_release(&gwhy);
	int err = cs->percpu ? open_percpu(cs) : 0;
	if (err) {
		strbuf_addf(why, "cannot open the per-CPU sampling events: %s", strerror(err));
		strbuf_release(&pwhy);
		strbuf_release(&how);
		return -1;
	}
	cs->sw = recorder_stacks(ctx->rec);
	if (!cs->sw) {
		strbuf_addstr(why, "cannot create the stack tables in the recording");
		strbuf_release(&pwhy);
		strbuf_release(&how);
		return -1;
	}
	cs->sym = symbolizer_new();
	cs->start_ns = ctx->start_ns;
	record_meta(ctx->rec, "cpu_sampling", cs->percpu ? "per-cpu" : "per-task");
	/* CLOCK_MONOTONIC of t = 0, to line samples up with outside clocks. */
	record_meta_int(ctx->rec, "cpu_clock_origin_ns", ctx->start_ns);
	if (pwhy.len)
		record_note(ctx->rec, 0, "cpu", "info", pwhy.buf);
	strbuf_release(&pwhy);
	record_meta(ctx->rec, "cpu_event", cs->event_name);
	record_meta_int(ctx->rec, "cpu_rate_hz", rate);
	record_meta(ctx->rec, "cpu_call_graph", cs->dwarf ? "dwarf" : "fp");
	if (how.len)
		record_meta(ctx->rec, "cpu_call_graph_reason", how.buf);
	if (cs->dwarf)
		record_meta_int(ctx->rec, "cpu_stack_dump_bytes", stack_bytes);
	record_meta_int(ctx->rec, "cpu_kernel_frames", cs->kernel);
	if (cs->ngroup) {
		struct strbuf names = STRBUF_INIT;
		for (size_t k = 1; k < cs->ngroup; k++)
			strbuf_addf(&names, "%s%s", k > 1 ? "," : "", cs->group_names[k]);
		record_meta(ctx->rec, "cpu_sample_counters", names.buf);
		strbuf_release(&names);
	}
	if (!cs->kernel)
		record_note(ctx->rec, 0, "cpu", "info",
			    "kernel frames are not sampled: kernel.perf_event_paranoid is above 1 "
			    "and sonde is not root (sysctl kernel.perf_event_paranoid=1 to see them)");
	log_info("sampling %s at %d Hz, %s stacks%s%s", cs->event_name, rate,
		 cs->dwarf ? "dwarf" : "frame-pointer", how.len ? " - " : "", how.buf);
	strbuf_release(&how);
	p->next_poll_ns = clock_mono_ns() + (cs->dwarf ? CPU_POLL_DWARF_NS : CPU_POLL_NS);
	cpu_running = cs;
	pump_start(cs);
	return 0;
}

int cpu_offcpu_enable(struct probe_ctx *ctx, struct strbuf *why)
{
	struct cpu_state *cs = cpu_running;
	if (!cs) {
		strbuf_addstr(why, "needs the cpu probe, whose rings and symbols it shares "
				   "(it is off or unavailable)");
		return -1;
	}
	/* The same stacks as the cpu samples (fp or dwarf). */
	struct perf_event_attr like = cs->attr; /* switch samples read no counters */
	like.sample_type &= ~(uint64_t)PERF_SAMPLE_READ;
	like.read_format = 0;
	if (offcpu_choose_event(&cs->off_attr, &like, &cs->off_event, &cs->off_state_offset,
				why))
		return -1;
	cs->trk = offcpu_tracker_new();
	cs->offcpu = 1;
	record_meta(ctx->rec, "offcpu_event", cs->off_event);
	record_meta_int(ctx->rec, "offcpu_state_known", cs->off_state_offset >= 0);
	if (cs->off_state_offset < 0)
		record_note(ctx->rec, 0, "offcpu", "info",
			    strcmp(cs->off_event, "context-switches")
				? "blocked states (sleeping S, I/O D) are not recorded: the "
				  "sched_switch tracepoint's raw data needs root or CAP_PERFMON"
				: "blocked states (sleeping S, I/O D) are not recorded: the "
				  "sched:sched_switch tracepoint is not available (no tracefs), so "
				  "the context-switches event is used");
	log_info("off-CPU time from %s", cs->off_event);
	return 0;
}

static void queue_handle(struct cpu_state *cs);

/* One round of the worker: returns when the next is due. */
static int64_t work_round(struct cpu_state *cs)
{
	drain_all(cs, CPU_DRAIN_BUDGET_NS);
	/* Samples reach the recording (committed once a second) as they come, so a
	 * sonde killed outright leaves them behind. New stacks are symbolized
	 * within a budget: loading a library's DWARF (libc's compressed debug info
	 * takes a good part of a second) is never cut short, but the rings are
	 * read again before the next one. */
	int64_t now = clock_mono_ns();
	if (cs->npending > CPU_MAX_PENDING) {
		flush_pending(cs, -1);
	} else if (now >= cs->next_flush_ns) {
		flush_pending(cs, CPU_FLUSH_BUDGET_NS);
		cs->next_flush_ns = now + CPU_FLUSH_PERIOD_NS;
	}
	/* Symbolizing may take a while: the next round counts from its end. */
	return clock_mono_ns() + (cs->dwarf ? CPU_POLL_DWARF_NS : CPU_POLL_NS);
}

static void *worker_main(void *arg)
{
	struct cpu_state *cs = arg;
	pthread_mutex_lock(&cs->lock);
	for (;;) {
		queue_handle(cs);
		int64_t next = work_round(cs);
		pthread_mutex_lock(&cs->qlock);
		int queued = cs->nqueue > 0, stop = cs->worker_stop;
		pthread_mutex_unlock(&cs->qlock);
		if (stop)
			break;
		if (queued)
			continue;
		/* A wake-up between here and the wait is missed: the round
		 * after it is at most a poll period late. */
		struct timespec ts = { (time_t)(next / NS_PER_S), (long)(next % NS_PER_S) };
		pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

/* The first poll starts the worker: every probe has started by then (the
 * offcpu probe adds its switch rings in its start). The session loop does
 * not poll this probe again. Without a thread, the rounds run here. */
static void cpu_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	(void)ctx;
	(void)now_ns;
	struct cpu_state *cs = p->state;
	if (!cs->worker_running && !cs->worker_stop &&
	    !pthread_create(&cs->worker, NULL, worker_main, cs)) {
		cs->worker_running = 1;
		p->next_poll_ns = INT64_MAX;
		return;
	}
	pthread_mutex_lock(&cs->lock);
	queue_handle(cs);
	p->next_poll_ns = work_round(cs);
	pthread_mutex_unlock(&cs->lock);
}

static void worker_join(struct cpu_state *cs)
{
	if (!cs->worker_running) {
		cs->worker_stop = 1;
		return;
	}
	pthread_mutex_lock(&cs->qlock);
	cs->worker_stop = 1;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->qlock);
	pthread_join(cs->worker, NULL);
	cs->worker_running = 0;
}

static void process_exiting(struct cpu_state *cs, const struct cpu_queued *q)
{
	if (q->jit_map)
		symbolizer_jit_parse(cs->sym, q->pid, q->jit_map, q->jit_len);
	drain_all(cs, -1);
}

/* What the session loop queued, handled in order (with lock held, or after
 * the worker stopped). */
static void queue_handle(struct cpu_state *cs)
{
	pthread_mutex_lock(&cs->qlock);
	struct cpu_queued *q = cs->queue;
	size_t n = cs->nqueue;
	cs->queue = NULL;
	cs->nqueue = cs->allocqueue = 0;
	pthread_mutex_unlock(&cs->qlock);
	for (size_t i = 0; i < n; i++) {
		if (q[i].exiting)
			process_exiting(cs, &q[i]);
		else
			process_add(cs, q[i].pid);
		free(q[i].jit_map);
	}
	free(q);
}

static void queue_push(struct cpu_state *cs, pid_t pid, int exiting)
{
	struct cpu_queued q = { pid, exiting, NULL, 0 };
	struct strbuf map = STRBUF_INIT;
	/* The perf map is read now, while /proc/PID (its root, its owner) is there. */
	if (exiting && !symbolizer_jit_read(pid, &map) && map.len) {
		q.jit_len = map.len;
		q.jit_map = strbuf_detach(&map);
	}
	strbuf_release(&map);
	pthread_mutex_lock(&cs->qlock);
	if (cs->nqueue == cs->allocqueue) {
		cs->allocqueue = cs->allocqueue ? 2 * cs->allocqueue : 64;
		cs->queue = xrealloc(cs->queue, cs->allocqueue * sizeof(*cs->queue));
	}
	cs->queue[cs->nqueue++] = q;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->qlock);
}

/* The first process (the command before its exec, or the attached one) is
 * added at once: its exec must find it covered and gated. Later ones are
 * queued: the worker may be busy loading a library's DWARF for a while. */
static void cpu_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	(void)ctx;
	struct cpu_state *cs = p->state;
	if (cs->worker_running && cs->first_process_seen) {
		queue_push(cs, pid, 0);
		return;
	}
	pthread_mutex_lock(&cs->lock);
	queue_handle(cs);
	process_add(cs, pid);
	pthread_mutex_unlock(&cs->lock);
}

static void cpu_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	(void)ctx;
	struct cpu_state *cs = p->state;
	queue_push(cs, pid, 1);
	if (!cs->worker_running)
		queue_handle(cs);
}

static const char sample_counters_schema[] =
	"CREATE TABLE IF NOT EXISTS sample_counters(node INTEGER, event TEXT, value INTEGER,"
	" samples INTEGER);";

/* The counts charged to each symbolized stack, one row per stack and event. */
static void write_sample_counters(struct cpu_state *cs, struct recorder *rec)
{
	sqlite3_stmt *q = NULL;
	if (!cs->ngroup)
		return;
	if (recorder_schema(rec, sample_counters_schema) || !recorder_db(rec) ||
	    sqlite3_prepare_v2(recorder_db(rec), "INSERT INTO sample_counters VALUES(?,?,?,?)", -1,
			       &q, NULL) != SQLITE_OK) {
		log_warn("cannot write the sample_counters table");
		return;
	}
	for (size_t s = 0; s < cs->nstacks && s < cs->alloccounts; s++) {
		const struct stack_counts *sc = &cs->counts[s];
		if (!sc->samples || cs->stacks[s].node < 0)
			continue;
		for (size_t k = 0; k < cs->ngroup; k++) {
			sqlite3_bind_int64(q, 1, cs->stacks[s].node);
			sqlite3_bind_text(q, 2, cs->group_names[k], -1, SQLITE_STATIC);
			sqlite3_bind_int64(q, 3, (int64_t)sc->v[k]);
			sqlite3_bind_int64(q, 4, (int64_t)sc->samples);
			recorder_step(rec, q);
		}
	}
	sqlite3_finalize(q);
	record_meta_int(rec, "cpu_sample_counters_unmatched", (int64_t)cs->group_unread);
}

/* A thread that ran and was never sampled still has its name recorded: the
 * counters probe reports every thread. */
static void name_unsampled(void *sw, pid_t pid, pid_t tid, const char *name)
{
	stack_thread_name(sw, pid, tid, name);
}

static void cpu_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct cpu_state *cs = p->state;
	worker_join(cs);
	queue_handle(cs);
	pump_stop(cs);
	for (size_t i = 0; i < 2 * cs->ncpus; i++)
		if (cs->rings[i].fd >= 0)
			ioctl(cs->rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; i < cs->nfds; i++)
		ioctl(cs->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	drain_all(cs, -1);
	if (cs->trk) { /* threads still waiting at the end (attach, -d) */
		struct offcpu_interval iv;
		while (offcpu_tracker_finish(cs->trk, clock_mono_ns() - ctx->start_ns, &iv))
			queue_interval(cs, &iv);
	}
	int64_t sym_start = clock_mono_ns();
	flush_pending(cs, -1);
	int64_t sym_ns = clock_mono_ns() - sym_start;
	thread_names_each_unused(&cs->names, name_unsampled, cs->sw);
	struct recorder *rec = ctx->rec;
	write_sample_counters(cs, rec);
	record_meta_int(rec, "cpu_symbolize_ns", sym_ns);
	record_meta_int(rec, "cpu_distinct_stacks", (int64_t)cs->nstacks);
	record_meta_int(rec, "cpu_samples", (int64_t)cs->samples);
	if (cs->percpu)
		record_meta_int(rec, "cpu_other_processes_samples", (int64_t)cs->foreign_samples);
	record_meta_int(rec, "cpu_lost_records", (int64_t)cs->lost);
	record_meta_int(rec, "cpu_throttle_events", (int64_t)cs->throttled);
	record_meta_int(rec, "cpu_processes_not_sampled", (int64_t)cs->not_opened);
	record_meta_int(rec, "cpu_malformed_records", (int64_t)cs->malformed);
	if (cs->dwarf)
		record_meta_int(rec, "cpu_dwarf_unwound", (int64_t)cs->unwound_dwarf);
	if (cs->trk) {
		offcpu_tracker_write(cs->trk, rec);
		record_meta_int(rec, "offcpu_samples", (int64_t)cs->off_samples);
		record_meta_int(rec, "offcpu_malformed_records", (int64_t)cs->off_malformed);
		record_meta_int(rec, "offcpu_lost_records", (int64_t)cs->off_lost);
	}
	int64_t t = clock_mono_ns() - ctx->start_ns;
	struct strbuf sb = STRBUF_INIT;
	if (cs->lost) {
		strbuf_addf(&sb, "%llu cpu samples were lost (ring buffer full); the profile "
				 "undercounts busy moments, lower --rate",
			    (unsigned long long)cs->lost);
		record_note(rec, t, "cpu", "warning", sb.buf);
		strbuf_reset(&sb);
	}
	if (cs->throttled) {
		strbuf_addf(&sb, "the kernel throttled cpu sampling %llu times (sampling took too "
				 "long; see kernel.perf_cpu_time_max_percent); lower --rate",
			    (unsigned long long)cs->throttled);
		record_note(rec, t, "cpu", "warning", sb.buf);
		strbuf_reset(&sb);
	}
	if (cs->not_opened) {
		strbuf_addf(&sb, "%llu processes of the target could not be sampled",
			    (unsigned long long)cs->not_opened);
		record_note(rec, t, "cpu", "warning", sb.buf);
	}
	strbuf_release(&sb);
	log_info("%llu samples, %llu lost, %llu throttled; %zu distinct stacks symbolized in %.3f s",
		 (unsigned long long)cs->samples, (unsigned long long)cs->lost,
		 (unsigned long long)cs->throttled, cs->nstacks, ns_to_s(sym_ns));
}

static void cpu_free(struct probe *p)
{
	struct cpu_state *cs = p->state;
	if (!cs)
		return;
	worker_join(cs);
	pump_stop(cs);
	if (cs->locks_made) {
		pthread_mutex_destroy(&cs->lock);
		pthread_mutex_destroy(&cs->qlock);
		pthread_cond_destroy(&cs->wake);
	}
	free(cs->queue);
	for (size_t i = 0; i < cs->nfds; i++)
		close(cs->fds[i]);
	free(cs->fds);
	for (size_t i = 0; i < 2 * cs->ncpus && cs->rings; i++)
		perf_ring_release(&cs->rings[i]);
	offcpu_tracker_free(cs->trk);
	if (cpu_running == cs)
		cpu_running = NULL;
	free(cs->rings);
	for (size_t i = 0; i < cs->nprocs; i++) {
		maps_release(&cs->procs[i].maps);
		unwinder_free(cs->procs[i].uw);
	}
	free(cs->procs);
	hashmap_release(&cs->proc_ids);
	hashmap_release(&cs->frame_cache);
	hashmap_release(&cs->stack_cache);
	free(cs->stacks);
	free(cs->raw);
	free(cs->pending);
	thread_names_release(&cs->names);
	hashmap_release(&cs->jit_read);
	hashmap_release(&cs->group_ids);
	hashmap_release(&cs->group_last);
	free(cs->prev);
	free(cs->counts);
	free(cs->frame_pool);
	symbolizer_free(cs->sym);
	free(cs);
	p->state = NULL;
}

const struct probe_ops probe_cpu = {
	.name = "cpu",
	.summary = "on-CPU sampling with native call stacks (perf_event)",
	.enabled_by_default = 1,
	.available = cpu_available,
	.start = cpu_start,
	.process_added = cpu_process_added,
	.process_exiting = cpu_process_exiting,
	.poll = cpu_poll,
	.stop = cpu_stop,
	.free = cpu_free,
};
