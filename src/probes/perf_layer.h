/* perf_layer: the one perf_event layer of a run, shared by the probes that
 * sample with perf events (cpu, offcpu). It owns the per-CPU rings of every
 * event set, the pump thread that copies them aside, the reading of all of
 * them in time order, and hands each record to the handlers registered for
 * its set and kind, as perf's `struct perf_tool` does. Probes never call one
 * another: each registers with the layer.
 *
 * The counters probe reads rings of its own (per task, not per CPU) through
 * perf_layer_ring_read(), with the same handlers per record kind.
 *
 * The cpu probe registers the sampling set and the stacks (struct
 * perf_stacks: the processes' address spaces, unwinding, symbols, the samples
 * table); it drives the layer from its worker thread (perf_layer_drain) and
 * ends it in its stop. The offcpu probe registers the switch set, its record
 * handlers and a struct perf_user, and asks the stacks for a sample's stack.
 *
 * Contract:
 * - One layer per run (probe_ctx.perf), made and freed by the session after
 *   every probe; a probe holds its pointer from start() to free().
 * - Sets, handlers, stacks and users are registered from start(), before the
 *   first drain. Handlers of one kind run in the order they were registered.
 * - perf_layer_drain() and every callback run on one thread at a time (the
 *   stacks owner's worker, or its stop); the pump runs on a thread of its own
 *   and calls only the sets' filters.
 * - perf_layer_reset() (by the stacks owner's free) forgets every set, handler,
 *   user and the stacks, and closes the rings and the events. */
#ifndef SONDE_PERF_LAYER_H
#define SONDE_PERF_LAYER_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct perf_layer;
struct perf_ring;
struct perf_ring_filter;
struct perf_sample;
struct recorder;

/* The event sets of a run: one ring per CPU each. */
enum perf_layer_set {
	PERF_LAYER_SAMPLES,  /* the cpu probe's sampling events, with mmap/comm/task records */
	PERF_LAYER_SWITCHES, /* the offcpu probe's switch events and records */
	PERF_LAYER_SYS_ENTER, /* the syscalls probe's raw_syscalls:sys_enter */
	PERF_LAYER_SYS_EXIT,  /* and sys_exit */
	PERF_LAYER_NSETS,
};

#define PERF_LAYER_MAX_FDS 65536 /* events: CPUs x processes (x threads when attached late) */

struct perf_layer *perf_layer_new(void);
void perf_layer_free(struct perf_layer *l);
void perf_layer_reset(struct perf_layer *l);

/* The CPUs the rings are for (sysconf's configured CPUs). */
size_t perf_layer_ncpus(const struct perf_layer *l);

/* Registers set with the attr of its events (copied: its sample_type tells a
 * record's time, its stack copy the rings' size) and an optional filter for
 * the pump (copied). 0, or -1 when the set is registered already. */
int perf_layer_set_add(struct perf_layer *l, enum perf_layer_set set,
		       const struct perf_event_attr *attr, const struct perf_ring_filter *filter);
/* The set's attr, or NULL when it is not registered. */
const struct perf_event_attr *perf_layer_set_attr(const struct perf_layer *l,
						  enum perf_layer_set set);
/* The set's ncpus rings (NULL when not registered). */
struct perf_ring *perf_layer_rings(struct perf_layer *l, enum perf_layer_set set);
/* Data pages per ring of the set: room for well over a poll period of samples. */
size_t perf_layer_ring_pages(const struct perf_layer *l, enum perf_layer_set set);

typedef void (*perf_layer_fn)(void *arg, const uint8_t *rec, size_t size);
/* Calls fn(arg, rec, size) for every record of kind type (PERF_RECORD_*) of
 * set. At most 16 handlers per set. 0, or -1 when full. */
int perf_layer_on(struct perf_layer *l, enum perf_layer_set set, uint32_t type, perf_layer_fn fn,
		  void *arg);

/* A handler of one record kind, in a probe's table of them. */
struct perf_layer_handler {
	uint32_t type; /* PERF_RECORD_* */
	perf_layer_fn fn;
};
/* perf_layer_on() for each of h[0, n), with arg. 0, or -1 when full. */
int perf_layer_on_each(struct perf_layer *l, enum perf_layer_set set,
		       const struct perf_layer_handler *h, size_t n, void *arg);
/* Adds the records the kernel lost in set's rings (PERF_RECORD_LOST and
 * PERF_RECORD_LOST_SAMPLES) to *count. 0, or -1 when full. */
int perf_layer_on_lost(struct perf_layer *l, enum perf_layer_set set, uint64_t *count);
/* For a ring a probe reads on its own, outside the sets (the counters
 * probe's per-task rings of exit reports): takes what the kernel wrote and
 * hands each record to the handlers of its kind in h[0, n), with arg. */
void perf_layer_ring_read(struct perf_ring *r, const struct perf_layer_handler *h, size_t n,
			  void *arg);

/* Keeps an event's fd (closed by perf_layer_reset); -1 when PERF_LAYER_MAX_FDS
 * are kept already (fd not taken). */
int perf_layer_fd_keep(struct perf_layer *l, int fd);
/* Called for each event perf_layer_open_task opens (a sampling leader opens
 * the counters its samples read). */
typedef void (*perf_layer_opened_fn)(void *arg, int fd, pid_t tid, int cpu);
/* Opens task tid's event of set on every CPU (the kernel refuses to map an
 * inherited per-task event with cpu -1), each writing into that CPU's ring;
 * before_exec: enabled at the task's exec. Returns how many CPUs got one, or
 * -errno when none did. */
int perf_layer_open_task(struct perf_layer *l, enum perf_layer_set set, pid_t tid,
			 int before_exec, perf_layer_opened_fn opened, void *arg);
/* Disables every ring's event and every kept event: the last records follow. */
void perf_layer_disable(struct perf_layer *l);

/* Handles the records of every set's rings in time order: an exec or mmap
 * seen on one CPU must apply to the samples that follow it on another. The
 * rings are taken again every PERF_LAYER_RETAKE records, so a long drain
 * frees the kernel's rings as it goes. budget_ns >= 0: stops once that is
 * spent, leaving the rest staged for the next drain; < 0: handles every
 * record written before the call. */
#define PERF_LAYER_RETAKE 256
void perf_layer_drain(struct perf_layer *l, int64_t budget_ns);

/* The pump: a thread copying every set's rings aside every 5 ms, through
 * the set's filter, at raised priority when allowed (copying late is what
 * loses records on a busy machine). */
void perf_layer_pump_start(struct perf_layer *l);
void perf_layer_pump_stop(struct perf_layer *l);

/* A weighted sample with a stack: an off-CPU interval. */
struct perf_weighted {
	pid_t pid, tid;
	int64_t t_ns;	/* since the run's start */
	int64_t weight; /* nanoseconds */
	char state;	/* 'S', 'D', 'R', ... (never 0) */
	uint32_t stack; /* from perf_stacks.stack_of */
};

/* What the stacks owner offers the other users of the layer. */
struct perf_stacks {
	/* The stack of a decoded sample of the calling handler's set: an index
	 * valid for this run (UINT32_MAX: empty). */
	uint32_t (*stack_of)(void *owner, const struct perf_sample *ps);
	/* Queues a weighted sample, written in time order with the owner's own;
	 * once written, the users' written() get it with its stack's node. */
	void (*weighted)(void *owner, const struct perf_weighted *w);
	/* The node in the recording of a stack index from stack_of, symbolized
	 * now when it was not (0: none). Call it from a user's done(). */
	int64_t (*node_of)(void *owner, uint32_t stack);
	void *owner;
};
/* 0, or -1 when stacks are registered already. */
int perf_layer_stacks_set(struct perf_layer *l, const struct perf_stacks *s);
/* The registered stacks, or NULL. */
const struct perf_stacks *perf_layer_stacks(const struct perf_layer *l);

/* A user of the layer's end: its callbacks (each may be NULL) run in the
 * stacks owner's stop. */
struct perf_user {
	/* No record follows: the last chance to queue weighted samples. */
	void (*records_end)(void *arg, int64_t end_ns);
	/* A weighted sample of this user's was written with stack node. */
	void (*written)(void *arg, const struct perf_weighted *w, int64_t node);
	/* Every sample is written: the user writes its own tables. */
	void (*done)(void *arg, struct recorder *rec);
	void *arg;
};
/* Registers u (copied). At most 4 users. 0, or -1 when full. */
int perf_layer_user_add(struct perf_layer *l, const struct perf_user *u);
/* For the stacks owner: calls every user's callback of that name. */
void perf_layer_records_end(struct perf_layer *l, int64_t end_ns);
void perf_layer_written(struct perf_layer *l, const struct perf_weighted *w, int64_t node);
void perf_layer_done(struct perf_layer *l, struct recorder *rec);

#endif
