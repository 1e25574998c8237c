/* cliopt: getopt_long as the subcommands share it: getopt's own messages
 * off, -h/--help printing the command's usage, a bad option answered with
 * one line naming the nearest valid one (cli_bad_option), and, for the
 * commands that read a slice, the filter options applied. */
#ifndef SONDE_CLI_CLIOPT_H
#define SONDE_CLI_CLIOPT_H

#include <stdio.h>

struct option;
struct slice_filter;

struct cli_getopt {
	const char *cmd;       /* "doctor": named in the errors */
	const char *shortopts; /* getopt_long's, starting with ':' (or "+:") */
	const struct option *longopts;
	void (*usage)(FILE *out);    /* what -h prints */
	struct slice_filter *filter;   /* NULL, or where --from/--to/--pid/--tid/--during go */
	int exit_code;		     /* after CLI_GETOPT_EXIT: what the command returns */
	int started;
};

#define CLI_GETOPT_EXIT (-2)

/* The command's next option (optarg set for its value); -1 after the last,
 * with optind at the first operand; CLI_GETOPT_EXIT when the command returns
 * g->exit_code now: 0 with the usage printed for -h, CLI_USAGE with the error
 * printed. The first call starts at argv[1]. */
int cli_getopt(struct cli_getopt *g, int argc, char **argv);

#endif
