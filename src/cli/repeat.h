/* repeat: `sonde run --repeat N`, the same command profiled N times into one
 * family of runs: DIR/1 ... DIR/N, each a whole run directory (its own
 * recording and report), and DIR/repeat.json, what the family holds:
 * {"command", "requested", "runs" (how many were made), "dirs" (["1", ...]),
 * "wall_s" and "exit_codes" (per run), "wall" (median, mean, stddev, cov,
 * min, max of the wall times)}. `sonde compare` takes such a DIR on either
 * side and tests each change across the runs. */
#ifndef SONDE_CLI_REPEAT_H
#define SONDE_CLI_REPEAT_H

#include "profile.h"

#define REPEAT_MAX 100 /* --repeat's upper bound (compare reads as many) */

/* Runs a->repeat runs of the command (each quiet: one summary at the end).
 * Stops early when a run is interrupted (SIGINT, SIGTERM) or cannot be
 * recorded. Returns the first non-zero exit status of the command, 0 when
 * every run exited 0, or sonde's own error code. */
int repeat_execute(struct profile_args *a, const char *name, const char *command_line);

/* The number of runs DIR/repeat.json says the family holds; 0 when it has none. */
size_t repeat_runs_read(const char *dir);

#endif
