/* uprobe_tracefs: uprobe events made through tracefs's uprobe_events file,
 * which perf_event_open then opens as tracepoints (PERF_TYPE_TRACEPOINT).
 * Unlike an event of the uprobe PMU, such an event is inherited by the
 * threads and children of the task it is opened on (the PMU's own event
 * setup reads the probed path from the opener's memory and asks the task
 * for CAP_PERFMON again at each fork, which fails in the target), so
 * every call of the whole process tree is seen.
 *
 * Contract:
 * - Events are named GROUP/NAME with GROUP "sonde_PID" (sonde's pid): a
 *   later sonde removes the groups of a sonde that is gone
 *   (uprobe_tracefs_sweep) when one was killed before removing its own.
 * - uprobe_events is only ever appended to (a truncating open would remove
 *   every uprobe of the machine).
 * - An event can be removed only once no perf event holds it open. */
#ifndef SONDE_UPROBE_TRACEFS_H
#define SONDE_UPROBE_TRACEFS_H

#include <stddef.h>
#include <stdint.h>

struct strbuf;

/* 0 when uprobe events can be made here, else -1 with why. */
int uprobe_tracefs_available(struct strbuf *why);
/* The group of this sonde's events ("sonde_PID"), in out (cap bytes). */
void uprobe_tracefs_group(char *out, size_t cap);
/* Makes event group/name at file offset off of path (a uretprobe when ret):
 * 0 with *id its tracepoint id, or -1 with why. */
int uprobe_tracefs_add(const char *group, const char *name, const char *path, uint64_t off, int ret,
		       uint64_t *id, struct strbuf *why);
/* Removes event group/name (nothing when it is not there). */
void uprobe_tracefs_remove(const char *group, const char *name);
/* Removes the events of every "sonde_PID" group whose PID is not running. */
void uprobe_tracefs_sweep(void);

#endif
