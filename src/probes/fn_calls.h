/* fn_calls: native calls put together from their uprobe (entry) and
 * uretprobe (return) events, one fn_calls row each, with the caller named
 * from the return address.
 *
 * Contract:
 * - Events are handed in time order (the caller merges the CPUs' rings).
 *   Each thread keeps a stack of its open calls, so recursion and nested
 *   targets pair right; a return with no entry (the call began before the
 *   probe) is counted, not timed.
 * - A caller is symbolized once per (target, process, address): through
 *   the process's maps while it lives, else, for an address in the probed
 *   file itself, through the load bias its entries showed (a process that
 *   exited before sonde read its maps still names its callers there).
 * - Rows past FN_TABLE_ROWS_MAX are counted, not written. */
#ifndef SONDE_FN_CALLS_H
#define SONDE_FN_CALLS_H

#include <stdint.h>
#include <sys/types.h>

struct recorder;

struct fn_calls_target {
	int id;		  /* fn_targets.id */
	const char *file; /* the ELF file probed */
	uint64_t vaddr;	  /* the function's link-time address */
};

struct fn_event {
	int64_t t_ns; /* CLOCK_MONOTONIC */
	uint64_t ip;  /* entry: the function's address; return: the return address */
	uint32_t pid, tid;
	uint32_t target; /* index into the targets given */
	uint32_t is_return;
	uint64_t seq; /* order of arrival, for equal times */
};

struct fn_calls_counts {
	int64_t entries, timed, unpaired_returns, open_at_end, rows_dropped;
};

struct fn_calls;

/* targets (n of them) are copied. start_ns: the run's t = 0. NULL when the
 * statements cannot be prepared (the recorder failed). */
struct fn_calls *fn_calls_new(struct recorder *rec, int64_t start_ns,
			      const struct fn_calls_target *targets, size_t n);
void fn_calls_event(struct fn_calls *fc, const struct fn_event *ev);
/* A process is about to go: its maps are read now, while they are there. */
void fn_calls_process_seen(struct fn_calls *fc, pid_t pid);
/* Counts for target index i; call after the last event. */
void fn_calls_counts(const struct fn_calls *fc, size_t i, struct fn_calls_counts *out);
/* Counts the calls still open (the run ended inside them). */
void fn_calls_end(struct fn_calls *fc);
void fn_calls_free(struct fn_calls *fc);

#endif
