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
/* Appends one line naming why perf_event_open failed with err (the setting in
 * the way: paranoid level, seccomp, privileges) and what to run. */
void perf_event_explain_refusal(int err, struct strbuf *why);

#endif
