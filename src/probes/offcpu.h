/* offcpu: off-CPU time from the scheduler's switches. The probe registers
 * its switch events with the run's perf layer (perf_layer.h), which opens
 * them for every task the cpu probe follows and hands their records over in
 * time order; their stacks come from the layer's stacks (the cpu probe's
 * maps, unwinding and symbols). perf_choose_switches() chooses the event
 * (the sched:sched_switch tracepoint, else the context-switches software
 * event); this module turns switch-outs and switch-ins into blocked
 * intervals, per thread.
 *
 * Contract:
 * - Records are fed in time order (the layer merges its rings).
 * - offcpu_tracker_out() is the switch-out sample (the stack at the moment the
 *   thread left the CPU, its state); offcpu_tracker_switch() is a
 *   PERF_RECORD_SWITCH. A switch-in after a switch-out completes an interval,
 *   returned through *done.
 * - Times are nanoseconds since the run's start. */
#ifndef SONDE_OFFCPU_H
#define SONDE_OFFCPU_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>

struct recorder;
struct strbuf;

/* One blocked interval: the thread left the CPU at t_ns in `state` with the
 * stack `stack` (the cpu probe's index) and came back dur_ns later. */
struct offcpu_interval {
	pid_t pid, tid;
	int64_t t_ns, dur_ns;
	char state; /* 'S' sleeping, 'D' uninterruptible (I/O), 'R' preempted, 'I', 'T', '?' */
	uint32_t stack;
};

/* The state letter for a raw sched_switch record, '?' when it cannot be read. */
char offcpu_state_from_raw(const uint8_t *raw, uint32_t raw_size, int state_offset);

struct offcpu_tracker;
struct offcpu_tracker *offcpu_tracker_new(void);
void offcpu_tracker_free(struct offcpu_tracker *t);
void offcpu_tracker_out(struct offcpu_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, char state,
			uint32_t stack);
/* Returns 1 with *done filled when the record completes an interval. */
int offcpu_tracker_switch(struct offcpu_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, int out,
			  int preempt, struct offcpu_interval *done);
/* A thread of pid exited: it will not come back. */
void offcpu_tracker_exit(struct offcpu_tracker *t, pid_t pid, pid_t tid, int64_t t_ns);
/* Threads still off the CPU at the end (and alive): their intervals up to
 * end_ns, one per call; returns 0 when there are no more. */
int offcpu_tracker_finish(struct offcpu_tracker *t, int64_t end_ns, struct offcpu_interval *done);
/* A written interval, for the per-stack state table: node is its stack. */
void offcpu_tracker_account(struct offcpu_tracker *t, const struct offcpu_interval *iv,
			    int64_t node);
/* Writes offcpu_threads and offcpu_states; returns the intervals written. */
uint64_t offcpu_tracker_write(struct offcpu_tracker *t, struct recorder *rec);

#endif
