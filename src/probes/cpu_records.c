/* cpu_records: the cpu probe's handlers of its set's records, which the perf
 * layer hands over in time order across the CPUs (mmap, comm and exec, fork,
 * exit, samples); they keep each process's address space, give each sample
 * its frames (frame pointers, or a DWARF unwind of its stack copy) and charge
 * the counters read with it. The same frames serve the layer's other users
 * (struct perf_stacks: offcpu's switch-outs), and in per-CPU mode the pump's
 * filter drops the rest of the machine's records. */
#define LOG_DOMAIN "cpu"
#include "cpu_probe.h"
#include "perf_record.h"
#include "perf_ring.h"
#include "../record/stacks.h"
#include "../symbols/unwind.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

static void on_mmap2(void *arg, const uint8_t *rec, size_t size)
{
	struct cpu_state *cs = arg;
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

static void on_comm(void *arg, const uint8_t *rec, size_t size)
{
	struct cpu_state *cs = arg;
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

static void process_event_add(struct cpu_state *cs, const struct perf_fork *f, int exited)
{
	if (cs->nprocess_events >= CPU_PROCESS_EVENTS_MAX)
		return;
	if (cs->nprocess_events == cs->allocprocess_events) {
		cs->allocprocess_events = cs->allocprocess_events ? 2 * cs->allocprocess_events : 16;
		cs->process_events = xrealloc(cs->process_events, cs->allocprocess_events *
									  sizeof(*cs->process_events));
	}
	cs->process_events[cs->nprocess_events++] = (struct cpu_process_event){
		(int64_t)f->time - cs->start_ns, (pid_t)f->pid, (pid_t)f->ppid, exited
	};
}

static void on_fork(void *arg, const uint8_t *rec, size_t size)
{
	struct cpu_state *cs = arg;
	struct perf_fork f;
	if (perf_decode_fork(rec, size, &f))
		return;
	struct cpu_proc *parent = target_proc(cs, (pid_t)f.ppid);
	if (!parent)
		return; /* per-CPU mode: a process outside the target forked */
	thread_names_fork(&cs->names, (pid_t)f.pid, (pid_t)f.tid, (pid_t)f.ppid, (pid_t)f.ptid);
	if (f.pid == f.ppid)
		return; /* a new thread */
	process_event_add(cs, &f, 0);
	struct maps copy = MAPS_INIT;
	for (size_t i = 0; i < parent->maps.n; i++)
		maps_insert(&copy, parent->maps.v[i].start, parent->maps.v[i].end,
			    parent->maps.v[i].pgoff, parent->maps.v[i].path);
	struct cpu_proc *child = cpu_proc_get(cs, (pid_t)f.pid, 1); /* may move parent */
	maps_release(&child->maps);
	child->maps = copy;
	child->covered = 1;
	cpu_pid_mark(cs, (pid_t)f.pid);
	cpu_proc_maps_changed(child);
}

/* A process's main thread exited: its unwinder (open ELF files, CFI) is no
 * longer needed; its maps stay, as they are small. */
static void on_exit_record(void *arg, const uint8_t *rec, size_t size)
{
	struct cpu_state *cs = arg;
	struct perf_fork f;
	if (perf_decode_fork(rec, size, &f) || f.pid != f.tid)
		return;
	struct cpu_proc *pr = cpu_proc_get(cs, (pid_t)f.pid, 0);
	if (pr)
		process_event_add(cs, &f, 1);
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

/* A sample with the user stack and instruction pointers alone and a short
 * copy of the stack (a system call's exit): the leaf at the instruction
 * pointer, then the words of the copy that land in code, innermost first:
 * the return address into the leaf's caller (a libc wrapper keeps no frame
 * pointer) and a few more. A stale pointer left in a frame can pass for
 * one; the site findings name is the innermost frame of the program's own,
 * which the first of them is. */
static size_t scan_frames(struct cpu_state *cs, struct cpu_proc *pr, const struct perf_sample *ps,
			  struct raw_frame *out, size_t cap)
{
	size_t n = 0;
	cpu_raw_resolve(cs, pr, ps->regs[1], &out[n++]);
	for (uint64_t at = 0; at + 8 <= ps->stack_len && n < cap && n < CPU_SCAN_FRAMES; at += 8) {
		uint64_t word = perf_u64(ps->stack + at);
		if (word < 4096)
			continue;
		cpu_raw_resolve(cs, pr, word - 1, &out[n]);
		if (out[n].module == RAW_ANON)
			continue;
		if (out[n].module == out[n - 1].module && out[n].addr == out[n - 1].addr)
			continue;
		n++;
	}
	return n;
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
	if (!ps.nr && ps.stack_len > 0 && ps.nregs == 2)
		return scan_frames(cs, pr, &ps, raw, cap);
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

static void on_sample(void *arg, const uint8_t *rec, size_t size)
{
	struct cpu_state *cs = arg;
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

void cpu_pid_mark(struct cpu_state *cs, pid_t pid)
{
	if (cs->pid_bits && pid > 0 && (size_t)pid < cs->pid_bits_max)
		__atomic_fetch_or(&cs->pid_bits[pid / 8], (uint8_t)(1u << (pid % 8)),
				  __ATOMIC_RELAXED);
}

/* 1 when pid is marked, or cannot be (beyond pid_max: kept, judged later). */
static int pid_marked(const struct cpu_state *cs, uint32_t pid)
{
	if (pid >= cs->pid_bits_max)
		return 1;
	return (__atomic_load_n(&cs->pid_bits[pid / 8], __ATOMIC_RELAXED) >> (pid % 8)) & 1;
}

static uint32_t rec_type(const uint8_t *rec)
{
	struct perf_event_header h;
	memcpy(&h, rec, sizeof(h));
	return h.type;
}

/* The pid a record is about, at its offset: samples after the identifier and
 * ip (when asked for), mmap2 and comm first thing. 0: no pid to judge by. */
static int record_pid(const struct cpu_state *cs, const uint8_t *rec, size_t size, uint32_t *pid)
{
	size_t at = sizeof(struct perf_event_header);
	uint32_t type = rec_type(rec);
	if (type == PERF_RECORD_SAMPLE) {
		uint64_t st = cs->attr.sample_type;
		if (!(st & PERF_SAMPLE_TID))
			return 0;
		at += (st & PERF_SAMPLE_IDENTIFIER ? 8 : 0) + (st & PERF_SAMPLE_IP ? 8 : 0);
	} else if (type != PERF_RECORD_MMAP2 && type != PERF_RECORD_COMM) {
		return 0;
	}
	if (at + sizeof(*pid) > size)
		return 0;
	memcpy(pid, rec + at, sizeof(*pid));
	return 1;
}

/* A fork by a marked process marks the child (before its first sample is
 * judged, on whichever CPU it runs). */
static void pump_see(const uint8_t *rec, size_t size, void *arg)
{
	struct cpu_state *cs = arg;
	struct perf_fork f;
	if (rec_type(rec) == PERF_RECORD_FORK && !perf_decode_fork(rec, size, &f) &&
	    pid_marked(cs, f.ppid))
		cpu_pid_mark(cs, (pid_t)f.pid);
}

static int pump_keep(const uint8_t *rec, size_t size, void *arg)
{
	struct cpu_state *cs = arg;
	uint32_t pid;
	if (!record_pid(cs, rec, size, &pid) || pid_marked(cs, pid))
		return 1;
	cs->pump_foreign += rec_type(rec) == PERF_RECORD_SAMPLE;
	return 0;
}

static void on_throttle(void *arg, const uint8_t *rec, size_t size)
{
	struct cpu_state *cs = arg;
	(void)rec;
	(void)size;
	cs->throttled++;
}

/* perf_stacks.stack_of: the frames of a sample of another set (a switch-out). */
static uint32_t stack_of(void *arg, const struct perf_sample *ps)
{
	struct cpu_state *cs = arg;
	struct raw_frame raw[2 * CPU_MAX_FRAMES + 2];
	size_t n = sample_frames(cs, ps, raw, sizeof(raw) / sizeof(raw[0]));
	return cpu_intern_raw_stack(cs, raw, n);
}

/* perf_stacks.weighted: queued with the samples, written in time order. */
static void weighted(void *arg, const struct perf_weighted *w)
{
	struct pending_sample ps = { w->t_ns, w->pid, w->tid, w->stack, w->state, w->weight };
	cpu_push_pending(arg, &ps);
}

/* perf_stacks.node_of: a stack of another set's, for a probe's own tables. */
static int64_t node_of(void *arg, uint32_t stack)
{
	return cpu_stack_node(arg, stack);
}

void cpu_layer_join(struct cpu_state *cs)
{
	struct perf_layer *l = cs->perf;
	struct perf_ring_filter keep_target = { pump_see, pump_keep, cs };
	static const struct perf_layer_handler handlers[] = {
		{ PERF_RECORD_SAMPLE, on_sample }, { PERF_RECORD_MMAP2, on_mmap2 },
		{ PERF_RECORD_COMM, on_comm },	   { PERF_RECORD_FORK, on_fork },
		{ PERF_RECORD_EXIT, on_exit_record }, { PERF_RECORD_THROTTLE, on_throttle },
	};
	perf_layer_set_add(l, PERF_LAYER_SAMPLES, &cs->attr, cs->pid_bits ? &keep_target : NULL);
	perf_layer_on_each(l, PERF_LAYER_SAMPLES, handlers, sizeof(handlers) / sizeof(handlers[0]),
			   cs);
	perf_layer_on_lost(l, PERF_LAYER_SAMPLES, &cs->lost);
	struct perf_stacks stacks = { stack_of, weighted, node_of, cs };
	perf_layer_stacks_set(l, &stacks);
}
