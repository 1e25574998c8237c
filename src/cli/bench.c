/* sonde bench: run commands repeatedly, interleaved, and say with statistics
 * whether one is faster than another (median ratio, bootstrap CI, U test). */
#include "bench.h"
#include "cli.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_RESAMPLES	       10000
#define BENCH_SEED	       0x50de5eedULL /* fixed: the same runs give the same CI */
#define BENCH_MAX_VARIANTS     26
#define BENCH_MAX_PARAM_VALUES 64

static void bench_usage(FILE *out)
{
	fputs("usage: sonde bench [options] -- CMD_A [ARGS] [--vs CMD_B [ARGS] ...]\n\n"
	      "Runs each command RUNS times after WARMUP untimed runs, interleaved\n"
	      "(A B A B ...), and prints per command the median, mean, stddev, CoV,\n"
	      "min, max and outliers (beyond 3 scaled MADs from the median) of the\n"
	      "wall time (or of --metric), with user and sys CPU time and max RSS.\n"
	      "Each --vs command is compared with A: the ratio of medians with a 95%\n"
	      "bootstrap CI (10000 resamples, fixed seed) and a two-sided Mann-Whitney\n"
	      "U test. 'B is faster than A' is said only when the CI excludes 1 and\n"
	      "p < 0.05; otherwise 'no significant difference'.\n\n"
	      "options:\n"
	      "  -n, --runs RUNS      timed runs of each command (default 10, 2 to 10000)\n"
	      "  -w, --warmup N       untimed runs of each command first (default 1)\n"
	      "  -m, --metric PATTERN compare the number the commands print instead of the\n"
	      "                       wall time: 'ITER_MS: {float}' takes the first number\n"
	      "                       after 'ITER_MS: ' in stdout or stderr (lower is better)\n"
	      "  -p, --param NAME=V1,V2,...  run once per value, with {NAME} in the\n"
	      "                       commands replaced by it: one table row per value\n"
	      "      --json FILE      also write the results as JSON\n"
	      "      --markdown FILE  also write the results as a Markdown table\n"
	      "  -v, --verbose        pass the commands' output through (to stderr)\n"
	      "  -h, --help           this help\n\n"
	      "Example: sonde bench -n 20 -- python3 old.py --vs python3 new.py\n"
	      "Exit status: 0 when every run exited 0; 1 when a command failed or could\n"
	      "not run; 2 on a usage error.\n",
	      out);
}

static const struct option bench_options[] = {
	{ "runs", required_argument, NULL, 'n' },
	{ "warmup", required_argument, NULL, 'w' },
	{ "metric", required_argument, NULL, 'm' },
	{ "param", required_argument, NULL, 'p' },
	{ "json", required_argument, NULL, 'J' },
	{ "markdown", required_argument, NULL, 'M' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct bench_options {
	long runs, warmup;
	int verbose;
	const char *metric, *param, *json_path, *markdown_path;
};

/* argv[first..argc) split at each "--vs" into commands. */
struct bench_commands {
	char **starts[BENCH_MAX_VARIANTS];
	size_t lens[BENCH_MAX_VARIANTS];
	size_t n;
};

static int commands_split(int argc, char **argv, int first, struct bench_commands *out)
{
	struct bench_commands c = { .n = 0 };
	int start = first;
	for (int i = first; i <= argc; i++) {
		if (i < argc && strcmp(argv[i], "--vs"))
			continue;
		if (i == start) {
			cli_error("bench: %s",
				  c.n ? "'--vs' must be followed by a command"
				      : "no command to run: sonde bench -- CMD [--vs CMD ...]");
			return -1;
		}
		if (c.n == BENCH_MAX_VARIANTS) {
			cli_error("bench: at most %d commands", BENCH_MAX_VARIANTS);
			return -1;
		}
		c.starts[c.n] = argv + start;
		c.lens[c.n++] = (size_t)(i - start);
		start = i + 1;
	}
	*out = c;
	return 0;
}

/* s with every "{name}" replaced by value (both may be NULL: a copy). */
static char *substitute(const char *s, const char *name, const char *value)
{
	struct strbuf sb = STRBUF_INIT;
	struct strbuf key = STRBUF_INIT;
	if (name)
		strbuf_addf(&key, "{%s}", name);
	for (const char *p = s; *p;) {
		const char *hit = name ? strstr(p, key.buf) : NULL;
		if (!hit) {
			strbuf_addstr(&sb, p);
			break;
		}
		strbuf_add(&sb, p, (size_t)(hit - p));
		strbuf_addstr(&sb, value);
		p = hit + key.len;
	}
	strbuf_release(&key);
	return strbuf_detach(&sb);
}

static void variant_init(struct bench_variant *v, size_t index, char **args, size_t n_args,
			 const char *name, const char *value, long runs)
{
	memset(v, 0, sizeof(*v));
	v->argv = xcalloc(n_args + 1, sizeof(char *));
	struct strbuf cmd = STRBUF_INIT;
	for (size_t i = 0; i < n_args; i++) {
		v->argv[i] = substitute(args[i], name, value);
		strbuf_addf(&cmd, "%s%s", i ? " " : "", v->argv[i]);
	}
	v->command = strbuf_detach(&cmd);
	v->label = xmalloc(2);
	v->label[0] = (char)('A' + index);
	v->label[1] = '\0';
	v->runs = xcalloc((size_t)runs, sizeof(*v->runs));
	v->values = xcalloc((size_t)runs, sizeof(double));
}

static void variant_release(struct bench_variant *v)
{
	for (size_t i = 0; v->argv && v->argv[i]; i++)
		free(v->argv[i]);
	free(v->argv);
	free(v->command);
	free(v->label);
	free(v->runs);
	free(v->values);
}

/* Runs every variant of row warmup + runs times, interleaved. 0, or 1 with
 * the error printed (a command that failed or could not start). */
static int row_run(struct bench_row *row, const struct bench_options *o,
		   const struct bench_metric *metric)
{
	for (long r = 0; r < o->warmup + o->runs; r++) {
		for (size_t i = 0; i < row->n_variants; i++) {
			struct bench_variant *v = &row->variants[i];
			struct bench_sample s;
			struct strbuf err = STRBUF_INIT;
			if (bench_run_once(v->argv, metric, o->verbose, &s, &err)) {
				cli_error("bench: %s: %s", v->command, err.buf);
				strbuf_release(&err);
				return 1;
			}
			if (s.exit_status) {
				cli_error("bench: %s (%s) exited with status %d on run %ld%s",
					  v->label, v->command, s.exit_status, r + 1,
					  o->verbose ? "" : " (-v shows its output)");
				return 1;
			}
			if (metric->prefix && isnan(s.metric)) {
				cli_error(
				    "bench: %s (%s) printed nothing that matches --metric '%s'",
				    v->label, v->command, o->metric);
				return 1;
			}
			if (r < o->warmup)
				continue;
			v->runs[v->n_runs] = s;
			v->values[v->n_runs++] = metric->prefix ? s.metric : s.wall_s;
		}
	}
	return 0;
}

static void row_analyse(struct bench_row *row, size_t row_index)
{
	for (size_t i = 0; i < row->n_variants; i++) {
		struct bench_variant *v = &row->variants[i];
		double *wall = xcalloc(v->n_runs, sizeof(double));
		for (size_t k = 0; k < v->n_runs; k++)
			wall[k] = v->runs[k].wall_s;
		stats_summarize(v->values, v->n_runs, &v->summary);
		stats_summarize(wall, v->n_runs, &v->wall);
		free(wall);
		if (!i)
			continue;
		const struct bench_variant *a = &row->variants[0];
		uint64_t seed = BENCH_SEED + row_index * BENCH_MAX_VARIANTS + i;
		if (stats_bootstrap_ratio(a->values, a->n_runs, v->values, v->n_runs,
					  BENCH_RESAMPLES, 0.95, seed, &v->ratio))
			continue; /* a median of 0: no ratio */
		stats_mann_whitney(a->values, a->n_runs, v->values, v->n_runs, &v->test);
		v->compared = 1;
		v->significant = stats_differ(&v->test, &v->ratio, STATS_ALPHA);
	}
}

void bench_verdict(const struct bench_variant *a, const struct bench_variant *v, struct strbuf *sb)
{
	if (!v->compared) {
		strbuf_addf(sb, "%s cannot be compared with %s (a median of 0)", v->label,
			    a->label);
		return;
	}
	double r = v->ratio.point, lo = v->ratio.lo, hi = v->ratio.hi;
	if (!v->significant) {
		strbuf_addf(sb, "no significant difference (ratio %.2f, 95%% CI %.2f-%.2f, ", r, lo,
			    hi);
	} else if (r >= 1) {
		strbuf_addf(sb, "%s is faster than %s by %.2fx (95%% CI %.2f-%.2f, ", v->label,
			    a->label, r, lo, hi);
	} else {
		strbuf_addf(sb, "%s is slower than %s by %.2fx (95%% CI %.2f-%.2f, ", v->label,
			    a->label, 1 / r, 1 / hi, 1 / lo);
	}
	stats_p_format(v->test.p, sb);
	strbuf_addch(sb, ')');
}

/* The unit of what is compared: seconds (shown as ms) or the metric's own. */
static void print_variant(const struct bench_variant *v, int metric)
{
	const struct stats_summary *s = &v->summary;
	double k = metric ? 1 : 1000;
	const char *unit = metric ? "" : " ms";
	printf("  %s: %s\n", v->label, v->command);
	printf("     median %.4g%s  mean %.4g%s ± %.3g  CoV %.1f%%  min %.4g  max %.4g"
	       "  outliers %zu/%zu\n",
	       s->median * k, unit, s->mean * k, unit, s->stddev * k, s->cov * 100, s->min * k,
	       s->max * k, s->outliers, s->n);
	double user = 0, sys = 0, rss = 0;
	for (size_t i = 0; i < v->n_runs; i++) {
		user += v->runs[i].user_s;
		sys += v->runs[i].sys_s;
		rss = fmax(rss, v->runs[i].max_rss_kib);
	}
	printf("     wall median %.4g ms  user %.4g ms  sys %.4g ms (means)  max RSS %.0f KiB\n",
	       v->wall.median * 1000, user / (double)v->n_runs * 1000,
	       sys / (double)v->n_runs * 1000, rss);
}

/* Warns about a noisy variant, with what most often causes it. */
static void warn_noise(const struct bench_variant *v, long runs)
{
	double cov = v->summary.cov * 100;
	if (cov <= 5)
		return;
	fprintf(stderr, "warning: %s varies by %.1f%% (CoV%s); likely causes:", v->label, cov,
		cov > 10 ? ", above 10%: treat its numbers with care" : " above 5%");
	double load[3];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	FILE *f = fopen("/proc/loadavg", "r");
	if (f && fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) == 3)
		fprintf(stderr, " a busy machine (load average %.2f on %ld CPUs%s);", load[0], cpus,
			load[0] >= (double)cpus * 0.5 ? ", close other work" : "");
	if (f)
		fclose(f);
	fputs(" frequency scaling (set the governor to 'performance');", stderr);
	if (runs < 30)
		fprintf(stderr, " too few runs (%ld: try -n 30 or more)", runs);
	fputc('\n', stderr);
}

static void print_result(const struct bench_result *res)
{
	int metric = res->metric_pattern != NULL;
	printf("sonde bench: %ld runs each after %ld warm-up, interleaved; comparing %s\n",
	       res->runs, res->warmup, metric ? res->metric_pattern : "wall time");
	for (size_t r = 0; r < res->n_rows; r++) {
		const struct bench_row *row = &res->rows[r];
		if (row->param_value)
			printf("\n%s=%s\n", res->param_name, row->param_value);
		else
			putchar('\n');
		for (size_t i = 0; i < row->n_variants; i++)
			print_variant(&row->variants[i], metric);
		for (size_t i = 1; i < row->n_variants; i++) {
			struct strbuf sb = STRBUF_INIT;
			bench_verdict(&row->variants[0], &row->variants[i], &sb);
			printf("  => %s\n", sb.buf);
			strbuf_release(&sb);
		}
		for (size_t i = 0; i < row->n_variants; i++)
			warn_noise(&row->variants[i], res->runs);
	}
	if (res->param_name && res->rows[0].n_variants > 1) {
		printf("\n%-12s", res->param_name);
		for (size_t i = 0; i < res->rows[0].n_variants; i++)
			printf(" %12s", res->rows[0].variants[i].label);
		printf("  verdict\n");
		for (size_t r = 0; r < res->n_rows; r++) {
			const struct bench_row *row = &res->rows[r];
			printf("%-12s", row->param_value);
			for (size_t i = 0; i < row->n_variants; i++)
				printf(" %12.4g",
				       row->variants[i].summary.median * (metric ? 1 : 1000));
			struct strbuf sb = STRBUF_INIT;
			for (size_t i = 1; i < row->n_variants; i++) {
				strbuf_addstr(&sb, i > 1 ? "; " : "  ");
				bench_verdict(&row->variants[0], &row->variants[i], &sb);
			}
			printf("%s\n", sb.buf);
			strbuf_release(&sb);
		}
	}
}

/* optarg as --name's count, from min to 10000: 0, or -1 with the error printed. */
static int count_parse(const char *name, long min, long *out)
{
	if (!parse_long_range(optarg, min, 10000, out))
		return 0;
	cli_error("bench: --%s '%s' must be a whole number from %ld to 10000", name, optarg, min);
	return -1;
}

static int options_parse(int argc, char **argv, struct bench_options *o)
{
	int c;
	optind = 1;
	opterr = 0; /* one line of ours, not getopt's */
	while ((c = getopt_long(argc, argv, "+:n:w:m:p:vh", bench_options, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (count_parse("runs", 2, &o->runs))
				return CLI_USAGE;
			break;
		case 'w':
			if (count_parse("warmup", 0, &o->warmup))
				return CLI_USAGE;
			break;
		case 'm':
			o->metric = optarg;
			break;
		case 'p':
			if (o->param) {
				cli_error("bench: --param may be given once");
				return CLI_USAGE;
			}
			o->param = optarg;
			break;
		case 'J':
			o->json_path = optarg;
			break;
		case 'M':
			o->markdown_path = optarg;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			bench_usage(stdout);
			return 0;
		case ':':
			cli_error("bench: '%s' needs a value (see 'sonde bench --help')",
				  argv[optind - 1]);
			return CLI_USAGE;
		default:
			cli_error("bench: unknown option '%s' (see 'sonde bench --help')",
				  argv[optind - 1]);
			return CLI_USAGE;
		}
	}
	if (strcmp(argv[optind - 1], "--")) {
		cli_error(
		    "bench: put the commands after '--': sonde bench [options] -- CMD [--vs CMD]");
		return CLI_USAGE;
	}
	return -1; /* go on */
}

/* "--param name=v1,v2": name and the values (into values, a copy). */
static int param_split(const char *spec, char **name, char **values_copy, char **values,
		       size_t *n_values)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || !eq[1]) {
		cli_error("bench: --param '%s' must look like NAME=V1,V2,...", spec);
		return -1;
	}
	*name = xstrndup(spec, (size_t)(eq - spec));
	*values_copy = xstrdup(eq + 1);
	*n_values = 0;
	for (char *save = NULL, *tok = strtok_r(*values_copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*n_values == BENCH_MAX_PARAM_VALUES) {
			cli_error("bench: --param takes at most %d values", BENCH_MAX_PARAM_VALUES);
			return -1;
		}
		values[(*n_values)++] = tok;
	}
	if (!*n_values) {
		cli_error("bench: --param '%s' has no values", spec);
		return -1;
	}
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_options o = { .runs = 10, .warmup = 1 };
	int rc = options_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	rc = CLI_USAGE;
	struct bench_commands cmds;
	struct bench_metric metric = { NULL, NULL };
	char *param_name = NULL, *values_copy = NULL, *values[BENCH_MAX_PARAM_VALUES];
	size_t n_values = 1;
	struct bench_result res = { .runs = o.runs,
				    .warmup = o.warmup,
				    .metric_pattern = o.metric };
	struct strbuf err = STRBUF_INIT;
	values[0] = NULL;
	if (commands_split(argc, argv, optind, &cmds))
		goto out;
	if (o.metric && bench_metric_parse(o.metric, &metric, &err)) {
		cli_error("bench: %s", err.buf);
		goto out;
	}
	if (o.param && param_split(o.param, &param_name, &values_copy, values, &n_values))
		goto out;
	res.param_name = param_name;
	res.rows = xcalloc(n_values, sizeof(*res.rows));
	for (size_t r = 0; r < n_values; r++) {
		struct bench_row *row = &res.rows[res.n_rows++];
		row->param_value = values[r];
		row->variants = xcalloc(cmds.n, sizeof(*row->variants));
		row->n_variants = cmds.n;
		for (size_t i = 0; i < cmds.n; i++)
			variant_init(&row->variants[i], i, cmds.starts[i], cmds.lens[i], param_name,
				     values[r], o.runs);
	}
	rc = 1;
	for (size_t r = 0; r < res.n_rows; r++) {
		if (row_run(&res.rows[r], &o, &metric))
			goto out;
		row_analyse(&res.rows[r], r);
	}
	print_result(&res);
	if (o.json_path && bench_write_json(&res, o.json_path, &err)) {
		cli_error("bench: %s", err.buf);
		goto out;
	}
	if (o.markdown_path && bench_write_markdown(&res, o.markdown_path, &err)) {
		cli_error("bench: %s", err.buf);
		goto out;
	}
	rc = 0;
out:
	for (size_t r = 0; r < res.n_rows; r++) {
		for (size_t i = 0; i < res.rows[r].n_variants; i++)
			variant_release(&res.rows[r].variants[i]);
		free(res.rows[r].variants);
	}
	free(res.rows);
	free(param_name);
	free(values_copy);
	bench_metric_release(&metric);
	strbuf_release(&err);
	return rc;
}
