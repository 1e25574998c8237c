/* filter: the options that choose a slice of a recording (--from, --to,
 * --pid, --tid, --during), shared by `sonde report` and `sonde export`.
 * --during names one of the program's phases (report.json's phases): the
 * slice is its window, found by filter_resolve() from the recording. */
#ifndef SONDE_CLI_FILTER_H
#define SONDE_CLI_FILTER_H

#include "../record/slice.h"

#include <getopt.h>

struct strbuf;

enum { FILTER_OPT_FROM = 300, FILTER_OPT_TO, FILTER_OPT_PID, FILTER_OPT_TID, FILTER_OPT_DURING };

#define FILTER_LONG_OPTIONS                                                                        \
	{ "from", required_argument, NULL, FILTER_OPT_FROM },                                      \
	    { "to", required_argument, NULL, FILTER_OPT_TO },                                      \
	    { "pid", required_argument, NULL, FILTER_OPT_PID },                                    \
	{                                                                                          \
		"during", required_argument, NULL, FILTER_OPT_DURING                               \
	}


#define FILTER_HELP                                                                                \
	"      --from S       only from S seconds on the run's clock (the times\n"                 \
	"                     report.json and trace.json give); default 0\n"                       \
	"      --to S         only until S seconds; default the run's end\n"                       \
	"      --pid N        only process N (see the report's Processes table)\n"                \
	"      --during PHASE only while the program's phase PHASE ran (its name\n"                \
	"                     in the report's Phases; NAME#2: the second of that\n"                \
	"                     name)\n"

/* Applies getopt_long's answer c with its argument to f. Returns 1 when c is a
 * filter option and arg is valid, -1 when it is one and arg is not (the error
 * printed), 0 when c is not a filter option. */
int filter_option(struct slice_filter *f, int c, const char *arg);

/* getopt_long(argc, argv, shortopts, opts), with the filter options applied
 * to f: returns the next other option's character (or -1 at the end), or
 * FILTER_BAD when a filter option's value is bad (the error printed). */
#define FILTER_BAD (-2)
int filter_getopt(int argc, char **argv, const char *shortopts, const struct option *opts,
		  struct slice_filter *f);

/* 1 when f selects less than the whole recording. */
int filter_is_set(const struct slice_filter *f);

/* A short name for the slice, usable as a file name: "2.5s-4s_pid123",
 * "during_load_pid123". */
void filter_name(const struct slice_filter *f, struct strbuf *out);

struct report_options;

/* With --during (f->phase): finds the phase in the recording at db_path (the
 * phases report.json lists, found with opts' pattern when given) and sets f's
 * window to it, and its thread when the phase is one thread's (an NVTX push
 * range) and no --tid was given. 0, or -1 with the error printed: no such
 * phase (its phases named, the nearest first), a name used more than once
 * without #N, or --during given with --from or --to. */
int filter_resolve(const char *db_path, struct slice_filter *f, const struct report_options *opts);

#endif
