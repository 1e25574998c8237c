/* cpu_probe: what the parts of the cpu probe share: its state (struct
 * cpu_state), the processes it samples, the raw frames and stacks it keeps
 * until they are symbolized, and the functions one part calls in another
 * (cpu.c runs the probe and its worker, cpu_events.c chooses and opens the
 * events, cpu_records.c reads the rings and handles their records,
 * cpu_stacks.c interns, symbolizes and writes the stacks and samples).
 * The rings, their pump and their reading in time order are the perf
 * layer's (perf_layer.h): the probe registers its sampling set, its record
 * handlers and the stacks there, and drives the layer from its worker.
 * Private: only cpu*.c include it; the rest of sonde sees probe_cpu
 * (probes.c). */
#ifndef SONDE_CPU_PROBE_H
#define SONDE_CPU_PROBE_H

#include "probe.h"
#include "perf_choose.h"
#include "perf_layer.h"
#include "thread_names.h"
#include "../symbols/maps.h"
#include "../util/clock.h"
#include "../util/hashmap.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CPU_POLL_NS (20 * NS_PER_MS)
#define CPU_POLL_DWARF_NS (10 * NS_PER_MS)
#define CPU_MAX_FRAMES PERF_CHOOSE_MAX_FRAMES
#define CPU_MAX_OUT_FRAMES 512 /* after inlined frames are expanded */
#define CPU_DEFAULT_STACK_BYTES 16384
#define CPU_EMPTY_STACK UINT32_MAX
#define CPU_MAX_PENDING (1u << 20) /* queued samples (24 MiB) before symbolizing catches up */
#define CPU_JIT_RELOAD_NS (200 * NS_PER_MS)
#define CPU_DRAIN_BUDGET_NS (40 * NS_PER_MS)  /* per poll: reading records */
#define CPU_FLUSH_BUDGET_NS (40 * NS_PER_MS)  /* per flush: symbolizing new stacks */
#define CPU_FLUSH_PERIOD_NS (500 * NS_PER_MS) /* samples are written this often */

/* Registers asked for with dwarf unwinding (PERF_CHOOSE_REGS_MASK): ax bx cx
 * dx si di bp sp ip r8..r15. */
#define CPU_NREGS 17
#define CPU_SCAN_FRAMES 4 /* frames of a scanned stack (scan_frames in cpu_records.c) */

#define CPU_GROUP_MAX 3 /* the sampling event and the counters read with it */
#define CPU_GROUP_READ_FORMAT (PERF_FORMAT_GROUP | PERF_FORMAT_ID)

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
	/* Per-CPU mode: the target's pids as bits (set by the worker and the
	 * pump, never cleared), so the pump drops the rest of the machine's
	 * records before they take room in the stage (cpu_pid_mark). */
	uint8_t *pid_bits;
	size_t pid_bits_max;
	uint64_t pump_foreign; /* samples the pump dropped (the pump's own count) */
	struct perf_layer *perf; /* the run's, shared: rings, pump, events (probe_ctx.perf) */
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
	/* The target's forks and exits, written at stop (process_events): the
	 * process_keys pass's exact bound between two processes with a pid. */
	struct cpu_process_event *process_events;
	size_t nprocess_events, allocprocess_events;
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

/* A fork or the exit of a process of the target, at the kernel's time. */
struct cpu_process_event {
	int64_t t_ns; /* from the run's start */
	pid_t pid, ppid;
	int exited;
};

/* At most this many are kept (a long build forks without end). */
#define CPU_PROCESS_EVENTS_MAX (1 << 20)

/* A process the session loop saw join or leave the tree, for the worker. */
struct cpu_queued {
	pid_t pid;
	int exiting;
	char *jit_map; /* exiting: its perf map, read before it is reaped (NULL: none) */
	size_t jit_len;
};

/* Choosing and opening the events (cpu_events.c; the event is perf_choose.h's). */
int cpu_choose_group(struct cpu_state *cs, const char *leader_name, struct strbuf *why);
int cpu_choose_percpu(struct cpu_state *cs, struct strbuf *why);
int cpu_open_percpu(struct cpu_state *cs);
void cpu_process_add(struct cpu_state *cs, pid_t pid);

/* The processes and the records of the rings (cpu_records.c). */
struct cpu_proc *cpu_proc_get(struct cpu_state *cs, pid_t pid, int create);
void cpu_proc_maps_changed(struct cpu_proc *pr);
/* Registers the sampling set (its pump filter in per-CPU mode), the record
 * handlers and the stacks with the layer. */
void cpu_layer_join(struct cpu_state *cs);
/* Per-CPU mode: pid is one of the target's processes (no-op otherwise). */
void cpu_pid_mark(struct cpu_state *cs, pid_t pid);
/* The recording's node of an interned stack, symbolized now if it was not
 * (0 for the empty stack). */
int64_t cpu_stack_node(struct cpu_state *cs, uint32_t stack);

/* Raw stacks, their symbols and the queued samples (cpu_stacks.c). */
void cpu_raw_resolve(struct cpu_state *cs, struct cpu_proc *pr, uint64_t pc,
		     struct raw_frame *out);
uint32_t cpu_intern_raw_stack(struct cpu_state *cs, const struct raw_frame *raw, size_t n);
void cpu_push_pending(struct cpu_state *cs, const struct pending_sample *ps);
void cpu_flush_pending(struct cpu_state *cs, int64_t budget_ns);

#endif
