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

/* Fills attr with the sampling event for this machine: event (--event, no
 * fallback) or cycles, else cpu-clock; kernel frames when allowed (*kernel);
 * dwarf: registers and stack_bytes of the user stack with each sample.
 * Inherited, disabled, with mmap, comm and task records, CLOCK_MONOTONIC.
 * *name gets the event's name. Returns 0, or an errno with why filled. */
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
