/* perf_choose: the one choice of the perf events a run opens, each tried on
 * sonde itself first: the sampling event (cycles when every CPU counts them,
 * else cpu-clock; kernel frames when allowed; the rate the kernel takes), the
 * switch event (the sched:sched_switch tracepoint, else context-switches) and
 * counting events (kernel mode when allowed). A refusal is explained in one
 * line by perf_event_explain_refusal() (perf_events.h): paranoid level,
 * capabilities, seccomp, missing PMU. Nothing here keeps state. */
#ifndef SONDE_PERF_CHOOSE_H
#define SONDE_PERF_CHOOSE_H

#include <linux/perf_event.h>
#include <stdint.h>

struct strbuf;

#define PERF_CHOOSE_MAX_FRAMES 127 /* kernel's sample_max_stack default */
/* Registers asked for with dwarf unwinding: ax bx cx dx si di bp sp ip r8..r15. */
#define PERF_CHOOSE_REGS_MASK (0x1ffULL | (0xffULL << 16))
/* Sample layout (PERF_SAMPLE_* bits in order): ip, pid/tid, time, callchain,
 * [regs_user, stack_user]. */
#define PERF_CHOOSE_SAMPLE_BASE \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN)

/* The rate the kernel will take: rate_hz, or kernel.perf_event_max_sample_rate
 * when that is lower (the kernel refuses a higher frequency with EINVAL). */
int perf_choose_rate(int rate_hz);

/* The sampling period of a timer event (cpu-clock, task-clock) at rate_hz.
 * Such a timer keeps its phase against the kernel's scheduler tick, which
 * lies on a 1 ms grid (HZ 1000, 500, 250, 200, 100). When the period puts
 * its samples on fewer than PERF_CHOOSE_TICK_PLACES places of that grid
 * (1000 Hz: one, 4000 Hz: four), it is stretched by 1/PERF_CHOOSE_TICK_STRETCH
 * (1000 Hz becomes 996 Hz), so its samples sweep the tick's period about
 * every 0.26 s. In step, on a CPU that switches between the target and other
 * busy tasks at the tick, per-CPU samples skew both the sample count (95% to
 * 114% of the CPU time) and the split between functions (2.5 to 7 points
 * off in 3 s at 1000 Hz beside four busy loops, within 1.3 at 997 Hz; perf's
 * per-task timers were within 2 in the same runs). 99 Hz is kept: its
 * samples fall on 99 places. 0 for a rate of 0 or less. */
#define PERF_CHOOSE_TICK_PLACES 50
#define PERF_CHOOSE_TICK_STRETCH 256
uint64_t perf_choose_timer_period_ns(int rate_hz);

/* 1 when a samples on a timer (cpu-clock, task-clock): by period, not rate. */
int perf_choose_is_timer(const struct perf_event_attr *a);

/* Fills attr with the sampling event for this machine: event (--event, no
 * fallback) or cycles, else cpu-clock; kernel frames when allowed (*kernel);
 * dwarf: registers and stack_bytes of the user stack with each sample.
 * Inherited, disabled, with mmap, comm and task records, CLOCK_MONOTONIC.
 * A timer event samples every perf_choose_timer_period_ns(rate_hz), others
 * at rate_hz (the kernel adjusts their period). *name gets the event's
 * name. Returns 0, or an errno with why filled. */
int perf_choose_sampling(struct perf_event_attr *attr, const char *event, int rate_hz, int dwarf,
			 int stack_bytes, const char **name, int *kernel, struct strbuf *why);

/* Fills attr with the switch event for this machine, sampling stacks as
 * `like` does (sample_type, user registers and stack copy; plus RAW when the
 * tracepoint is used); *event_name gets "sched:sched_switch" or
 * "context-switches", *state_offset the byte offset of prev_state in the raw
 * data (-1: no state). As root, mounts tracefs where it is missing: *mounted
 * (may be NULL) is set to 1 then (it stays mounted; the caller may unmount
 * it, as the event stays valid). Returns 0, or -1 with one line in why. */
int perf_choose_switches(struct perf_event_attr *attr, const struct perf_event_attr *like,
			 const char **event_name, int *state_offset, int *mounted,
			 struct strbuf *why);

/* Byte offsets in the raw_syscalls tracepoints' raw data: sys_enter's id
 * and args[6], sys_exit's ret (its id is at the same offset as sys_enter's);
 * -1 when unknown. */
struct perf_syscall_fields {
	int id, args, ret;
};

/* User stack copied with each system call's exit, with the stack and
 * instruction pointers alone (x86_64's registers 7 and 8): where the
 * wrapper's return address and a few more are. */
#define PERF_CHOOSE_SYSCALL_STACK 128
#define PERF_CHOOSE_REG_SP 7
#define PERF_CHOOSE_REG_IP 8

/* Fills enter and exit with the raw_syscalls:sys_enter and sys_exit
 * tracepoints (tid, time and raw data; when `like` samples stacks, the
 * exit also the user stack and instruction pointers and
 * PERF_CHOOSE_SYSCALL_STACK bytes of the stack), inherited like the other
 * sets, and fields with where their fields are. As root, mounts tracefs
 * where it is missing (*mounted = 1, as perf_choose_switches). Returns 0,
 * or -1 with one line in why. */
int perf_choose_syscalls(struct perf_event_attr *enter, struct perf_event_attr *exit,
			 const struct perf_event_attr *like, struct perf_syscall_fields *fields,
			 int *mounted, struct strbuf *why);

/* Whether the counting event name (type, config) opens here, on sonde:
 * with kernel mode, else (EACCES, EPERM) without it (*exclude_kernel = 1).
 * Returns 0, or -1 with one line in why. */
int perf_choose_counting(const char *name, uint32_t type, uint64_t config, int *exclude_kernel,
			 struct strbuf *why);

#endif
