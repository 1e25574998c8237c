/* cpu_records: the cpu probe's reading of its rings. The records of every CPU
 * are handled in time order (mmap, comm and exec, fork, exit, samples, and
 * with offcpu the switch samples and records); they keep each process's
 * address space, give each sample its frames (frame pointers, or a DWARF
 * unwind of its stack copy) and charge the counters read with it. A thread
 * copies the rings aside while the worker is busy. */
#define LOG_DOMAIN "cpu"
#include "cpu_probe.h"
#include "perf_record.h"
#include "perf_ring.h"
#include "../record/stacks.h"
#include "../symbols/unwind.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct cpu_proc *cpu_proc_get(struct cpu_state *cs, pid_t pid, int create)
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
		return cpu_proc_get(cs, pid, 1);
	struct cpu_proc *pr = cpu_proc_get(cs, pid, 0);
	return pr && pr->covered ? pr : NULL;
}

void cpu_proc_maps_changed(struct cpu_proc *pr)
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
	cpu_proc_maps_changed(pr);
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
	cpu_proc_maps_changed(pr);
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
	struct cpu_proc *child = cpu_proc_get(cs, (pid_t)f.pid, 1); /* may move parent */
	maps_release(&child->maps);
	child->maps = copy;
	child->covered = 1;
	cpu_proc_maps_changed(child);
}

/* A process's main thread exited: its unwinder (open ELF files, CFI) is no
 * longer needed; its maps stay, as they are small. */
static void on_exit_record(struct cpu_state *cs, const uint8_t *rec, size_t size)
{
	struct perf_fork f;
	if (perf_decode_fork(rec, size, &f) || f.pid != f.tid)
		return;
	struct cpu_proc *pr = cpu_proc_get(cs, (pid_t)f.pid, 0);
	if (pr && pr->uw) {
		unwinder_free(pr->uw);
		pr->uw = NULL; /* made again if a straggling thread is sampled */
	}
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
		cpu_raw_resolve(cs, pr, pcs[i], &raw[i]);
	return npcs;
}

/* The sample's frames, innermost first, in raw (room for 2 * CPU_MAX_FRAMES + 2). */
static size_t sample_frames(struct cpu_state *cs, const struct perf_sample *sp,
			    struct raw_frame *raw, size_t cap)
{
	const struct perf_sample ps = *sp;
	pid_t pid = (pid_t)ps.pid;
	struct cpu_proc *pr = cpu_proc_get(cs, pid, 1);
	if (!pr->maps_known) { /* its fork record was lost: ask /proc, once */
		maps_read_pid(&pr->maps, pid);
		cpu_proc_maps_changed(pr);
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
		cpu_raw_resolve(cs, pr, first_user ? pc : pc - 1, &raw[n++]);
		first_user = 0;
	}
	if (cs->dwarf)
		n += unwind_user(cs, pr, &ps, raw + n, cap - n);
	if (n == 0 && ps.ip)
		cpu_raw_resolve(cs, pr, ps.ip, &raw[n++]);
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
	uint32_t stack = cpu_intern_raw_stack(cs, raw, n);
	if (cs->ngroup)
		count_group(cs, &ps, stack);
	struct pending_sample pd = { (int64_t)ps.time - cs->start_ns, (pid_t)ps.pid, (pid_t)ps.tid,
				     stack, 0, 1 };
	cpu_push_pending(cs, &pd);
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
			   cpu_intern_raw_stack(cs, raw, n));
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
		cpu_queue_interval(cs, &iv);
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
void cpu_drain_all(struct cpu_state *cs, int64_t budget_ns)
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

void cpu_pump_start(struct cpu_state *cs)
{
	cs->pump_running = !pthread_create(&cs->pump, NULL, pump_rings, cs);
	if (!cs->pump_running)
		log_debug("no thread to read the rings: they are read by the poll only");
}

void cpu_pump_stop(struct cpu_state *cs)
{
	if (!cs->pump_running)
		return;
	__atomic_store_n(&cs->pump_stop, 1, __ATOMIC_RELEASE);
	pthread_join(cs->pump, NULL);
	cs->pump_running = 0;
}
