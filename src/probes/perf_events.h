/* perf_events: the perf event names sonde samples on (--event), as perf
 * spells them, and whether this machine counts them.
 *
 * Contract: names are perf's generic hardware and software events (cycles,
 * cache-misses, branch-misses, page-faults, cpu-clock, ...). Nothing here
 * keeps state; every call may open and close a perf event on sonde itself. */
#ifndef SONDE_PERF_EVENTS_H
#define SONDE_PERF_EVENTS_H

#include <stdint.h>
#include <sys/types.h>

struct perf_event_attr;
struct strbuf;

/* Zeroes *attr and sets its size, type and config. */
void perf_event_attr_init(struct perf_event_attr *attr, uint32_t type, uint64_t config);
/* perf_event_open(2), close-on-exec: the fd, or -1 with errno set. */
int perf_event_open_cloexec(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd);

/* Opens and closes a counting event of type and config on sonde itself (user
 * space only, so no privilege is needed): 0, or the errno it failed with. */
int perf_event_try_open(uint32_t type, uint64_t config);
/* 0 with *type and *config filled, or -1 when the name is not known. */
int perf_event_lookup(const char *name, uint32_t *type, uint64_t *config);
/* Appends every known name, comma separated. */
void perf_event_names(struct strbuf *sb);
/* 1 when SONDE_COUNTERS_EVENTS=software asks the counting paths (the counters
 * probe, the cpu probe's sample groups) for software stand-ins of the
 * hardware events, so that they can be tested on a machine without a PMU. */
int perf_events_software(void);
/* 0 when the event opens here (counting, on sonde itself), else -1 with one
 * line in why naming the event, the reason and the events that do open. */
int perf_event_check(const char *name, struct strbuf *why);

/* kernel.perf_event_paranoid, or 99 when it cannot be read. */
int perf_event_paranoid(void);
/* errno's name as perf users know it (EACCES, ENOENT, ...), else strerror. */
const char *perf_errno_name(int err);
/* Appends one line naming why perf_event_open of attr (named name; either
 * may be NULL) failed with err, and what to run: the one explanation of a
 * refusal for every probe and `sonde doctor`. It names the setting in the
 * way: no PMU for a hardware event (a VM), a seccomp filter (ENOSYS, or a
 * refusal the paranoid level does not explain), the paranoid level (above 1
 * for an event that counts in the kernel, above 2 for any) and the
 * privileges that lift it (root, CAP_PERFMON). */
void perf_event_explain_refusal(int err, const struct perf_event_attr *attr, const char *name,
				struct strbuf *why);

#endif
