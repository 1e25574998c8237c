/* cliopt: the option loop of the subcommands (cliopt.h). */
#include "cliopt.h"
#include "cli.h"
#include "filter.h"
#include "suggest.h"

#include <getopt.h>

int cli_getopt(struct cli_getopt *g, int argc, char **argv)
{
	if (!g->started) {
		opterr = 0; /* one line of ours, not getopt's */
		optind = 1;
		g->started = 1;
	}
	int c = g->filter ? filter_getopt(argc, argv, g->shortopts, g->longopts, g->filter)
			  : getopt_long(argc, argv, g->shortopts, g->longopts, NULL);
	switch (c) {
	case 'h':
		g->usage(stdout);
		g->exit_code = 0;
		return CLI_GETOPT_EXIT;
	case FILTER_BAD: /* the error printed */
		g->exit_code = CLI_USAGE;
		return CLI_GETOPT_EXIT;
	case ':':
	case '?':
		cli_bad_option(g->cmd, c, optopt, argv[optind - 1], g->longopts);
		g->exit_code = CLI_USAGE;
		return CLI_GETOPT_EXIT;
	default:
		return c;
	}
}
