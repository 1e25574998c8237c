/* profile: what `sonde run` and `sonde attach` share: their common options,
 * the run directory, the recording, the session and the report. */
#ifndef SONDE_CLI_PROFILE_H
#define SONDE_CLI_PROFILE_H

#include "../session/session.h"

#include <stdio.h>

struct profile_args {
	const char *out_dir;
	int force, quiet, verbose;
	int share; /* --share: outputs readable by others as the umask allows */
	int repeat; /* run --repeat N: N > 1 makes a family of runs (repeat.h) */
	const char *formats; /* --format: export names, comma separated, checked; NULL: none */
	int json; /* --json: report.json on stdout, one line, at the end */
	int live; /* run --live: the live view on the terminal while the command runs */
	pid_t pid; /* attach --pid */
	const char *python_mode; /* --mode: wall, cpu or gil; stored in meta */
	const char *phase_pattern; /* --phase, stored in meta; NULL: built-in markers */
	unsigned focus;		   /* --focus: enum focus_dimension bits; 0: sonde chooses */
	char focus_probes[512];	   /* --probes plus the probes --focus adds (focus.h) */
	struct session_options so;
};

/* Parses the options of run (attach = 0) or attach (1), up to the first
 * non-option (or --). Returns -1 to go on, with optind at the first operand;
 * otherwise the exit code (0 for --help/--version, CLI_USAGE after a one-line
 * error). usage prints the command's help. */
int profile_args_parse(int argc, char **argv, int attach, void (*usage)(FILE *out),
		       struct profile_args *a);

/* The option lines both commands print in their --help. */
void profile_args_help(FILE *out, int attach);

/* Prepares the run directory, records, renders. name names the default run
 * directory (the command or the process). Returns sonde's exit code. */
int profile_execute(struct profile_args *a, const char *name, const char *command_line);

#endif
