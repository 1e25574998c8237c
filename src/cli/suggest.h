/* suggest: the nearest valid name to a mistyped one (an option, a probe, a
 * subcommand), for errors that say "did you mean ...". */
#ifndef SONDE_CLI_SUGGEST_H
#define SONDE_CLI_SUGGEST_H

#include <stddef.h>

struct option;

/* Collects the candidate nearest to word[0..len) by edit distance (insert,
 * delete, replace, swap of two neighbours: one step each). */
struct suggest {
	const char *word;
	size_t len;
	const char *best; /* NULL until a candidate is close enough */
	size_t dist;
};

void suggest_init(struct suggest *s, const char *word, size_t len);
void suggest_try(struct suggest *s, const char *candidate);
/* The nearest candidate when it is close: at most a third of the longer
 * name's letters differ (at least 1, at most 3); else NULL. */
const char *suggest_result(const struct suggest *s);

/* For getopt_long: the long option nearest to arg ("--qiet", "--qiet=1",
 * "-quiet"), or NULL. */
const char *suggest_option(const char *arg, const struct option *opts);

/* The one-line usage error for getopt_long's answer c (':' a missing value,
 * else an unknown or ambiguous option) in `sonde cmd`, with the nearest valid
 * option named when there is one. arg is argv[optind - 1]. */
void cli_bad_option(const char *cmd, int c, int optopt, const char *arg,
		    const struct option *opts);

#endif
