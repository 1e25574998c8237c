/* bench: the pieces of sonde bench (src/cli/bench*.c), shared among its files. */
#ifndef SONDE_CLI_BENCH_H
#define SONDE_CLI_BENCH_H

#include "../util/stats.h"

#include <stddef.h>

struct strbuf;

/* One run of one command. */
struct bench_sample {
	double wall_s, user_s, sys_s;
	double max_rss_kib; /* ru_maxrss of the command's process tree */
	int exit_status;    /* as in a shell: 128 + signal when killed */
	double metric;	    /* NAN when no --metric or no match */
};

/* --metric 'TEXT {float} TEXT': the text around the number. */
struct bench_metric {
	char *prefix, *suffix; /* NULL prefix: no metric */
};

/* Splits pattern at its one "{float}". 0, or -1 with why in err. */
int bench_metric_parse(const char *pattern, struct bench_metric *out, struct strbuf *err);
void bench_metric_release(struct bench_metric *m);
/* The first number the pattern matches in text[0..len), or NAN. */
double bench_metric_find(const struct bench_metric *m, const char *text, size_t len);

/* Runs argv with stdin from /dev/null and stdout and stderr captured (copied
 * to sonde's stderr when verbose), waits, and fills *out. 0; or -1 with why in
 * err when the command could not be started at all. */
int bench_run_once(char *const *argv, const struct bench_metric *metric, int verbose,
		   struct bench_sample *out, struct strbuf *err);

/* One variant's runs and their statistics, for one --param value. */
struct bench_variant {
	char **argv;   /* NULL-terminated, {name} already substituted */
	char *label;   /* "A", "B", ... */
	char *command; /* argv joined by spaces, for people */
	struct bench_sample *runs;
	size_t n_runs;
	double *values; /* what is compared: the metric if given, else wall_s */
	struct stats_summary summary, wall;
	/* Against variant A (unset for A itself). */
	struct stats_ci ratio; /* median(A) / median(this): > 1 means this is faster */
	struct stats_mwu test;
	int compared;
	int significant;
};

/* One table row: every variant at one --param value. */
struct bench_row {
	const char *param_value; /* NULL without --param */
	struct bench_variant *variants;
	size_t n_variants;
};

struct bench_result {
	const char *param_name;	    /* NULL without --param */
	const char *metric_pattern; /* NULL: wall time is compared */
	struct bench_row *rows;
	size_t n_rows;
	long runs, warmup;
};

/* "B is faster than A by 1.83x (95% CI 1.71-1.95, p=0.0002)" or "no
 * significant difference (...)", appended to sb. */
void bench_verdict(const struct bench_variant *a, const struct bench_variant *v, struct strbuf *sb);

/* Write the result as JSON or as a Markdown table to path. 0, or -1 with why
 * in err. */
int bench_write_json(const struct bench_result *r, const char *path, struct strbuf *err);
int bench_write_markdown(const struct bench_result *r, const char *path, struct strbuf *err);

#endif
