/* sonde compare: what changed between two runs, A (before) and B (after):
 * compare.md and diff.svg in an output directory, the top changes on the
 * terminal. Neither run directory is ever written. */
#include "cli.h"
#include "repeat.h"
#include "suggest.h"
#include "../analysis/compare.h"
#include "../record/reader.h"
#include "../render/compare_view.h"
#include "../util/safefile.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One side: a run directory, or a family of runs (`sonde run --repeat`:
 * DIR/1, DIR/2, ... and no DIR/profile.db); every recording opened, and the
 * first run's report model (NULL when it has none). */
struct compare_input {
	const char *dir;
	sqlite3 *dbs[COMPARE_RUNS_MAX];
	size_t n;
	json_t *report;
	mode_t mode;
};

/* How many runs DIR/1, DIR/2, ... hold a recording; 0 when DIR has its own. */
static size_t family_size(const char *dir)
{
	struct strbuf path = STRBUF_INIT;
	struct stat st;
	size_t n = 0;
	strbuf_addf(&path, "%s/profile.db", dir);
	int own = !lstat(path.buf, &st);
	/* A family made again with --force may keep more old runs than it says. */
	size_t said = repeat_runs_read(dir);
	while (!own && n < (said ? said : COMPARE_RUNS_MAX) && n < COMPARE_RUNS_MAX) {
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/%zu/profile.db", dir, n + 1);
		if (lstat(path.buf, &st))
			break;
		n++;
	}
	strbuf_release(&path);
	return n;
}

static int input_open(struct compare_input *in)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT, run = STRBUF_INIT;
	int ret = -1;
	if (!cli_is_run_dir(in->dir))
		goto out;
	size_t family = family_size(in->dir);
	for (size_t k = 0; k < (family ? family : 1); k++) {
		strbuf_reset(&run);
		if (family)
			strbuf_addf(&run, "%s/%zu", in->dir, k + 1);
		else
			strbuf_addstr(&run, in->dir);
		strbuf_reset(&path);
		if (cli_recording_path(run.buf, &path, &in->mode))
			goto out;
		if (recording_open(path.buf, &in->dbs[in->n], &err)) {
			cli_error("%s", err.buf);
			goto out;
		}
		in->n++;
	}
	strbuf_reset(&path);
	strbuf_addf(&path, "%s%s/report.json", in->dir, family ? "/1" : "");
	in->report = json_load_file(path.buf, 0, NULL);
	if (!in->report)
		cli_error("warning: %s cannot be read: phases and memory are not compared "
			  "('sonde report %s' writes it)",
			  path.buf, family ? path.buf : in->dir);
	ret = 0;
out:
	strbuf_release(&path);
	strbuf_release(&err);
	strbuf_release(&run);
	return ret;
}

static void input_release(struct compare_input *in)
{
	for (size_t k = 0; k < in->n; k++)
		sqlite3_close(in->dbs[k]);
	json_decref(in->report);
}

/* The default output directory: compare-<A's name>-<B's name> beside B. */
static void default_out_dir(const char *a, const char *b, struct strbuf *out)
{
	char *ca = xstrdup(a), *cb = xstrdup(b), *cp = xstrdup(b);
	strbuf_addf(out, "%s/compare-%s-%s", dirname(cp), basename(ca), basename(cb));
	free(ca);
	free(cb);
	free(cp);
}

/* Creates out_dir when missing; refuses A, B or any directory holding a
 * recording. Returns an open descriptor of it, or -1 with the error printed. */
static int out_dir_open(const char *out_dir, const char *const dirs[2], mode_t mode)
{
	char real[PATH_MAX], run[PATH_MAX];
	struct strbuf db = STRBUF_INIT;
	struct stat st;
	int fd = -1;
	if (mkdir(out_dir, SAFEFILE_DIR_MODE(mode)) && errno != EEXIST) {
		cli_error("%s: %s", out_dir, strerror(errno));
		goto out;
	}
	strbuf_addf(&db, "%s/profile.db", out_dir);
	if (!lstat(db.buf, &st)) {
		cli_error("%s holds a recording: compare never writes into a run directory "
			  "(choose another -o)",
			  out_dir);
		goto out;
	}
	for (int r = 0; r < 2 && realpath(out_dir, real); r++)
		if (realpath(dirs[r], run) && !strcmp(real, run)) {
			cli_error("%s is run %s: compare never writes into a run directory",
				  out_dir, r ? "B" : "A");
			goto out;
		}
	fd = safe_dir_open(out_dir);
	if (fd < 0) {
		cli_error("%s: %s", out_dir, strerror(-fd));
		fd = -1;
	}
out:
	strbuf_release(&db);
	return fd;
}

/* Writes one file of the comparison (through a temporary: a link at its
 * name is replaced, never written through). 0, or -1 with the error printed. */
static int out_write(int dirfd, const char *out_dir, const char *name, mode_t mode,
		     int (*write)(void *arg, FILE *f), void *arg)
{
	struct strbuf tmp = STRBUF_INIT;
	int ret = -1, fd = safe_tmp_create(dirfd, name, mode, &tmp);
	if (fd < 0) {
		cli_error("%s/%s: %s", out_dir, name, strerror(-fd));
		goto out;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlinkat(dirfd, tmp.buf, 0);
		cli_error("%s/%s: %s", out_dir, name, strerror(errno));
		goto out;
	}
	int rc = write(arg, f);
	if (fclose(f) || rc < 0) {
		unlinkat(dirfd, tmp.buf, 0);
		cli_error("%s/%s: could not be written", out_dir, name);
		goto out;
	}
	if (rc > 0) { /* nothing to draw */
		unlinkat(dirfd, tmp.buf, 0);
		ret = 0;
		goto out;
	}
	int err = safe_tmp_commit(dirfd, tmp.buf, name);
	if (err) {
		cli_error("%s/%s: %s", out_dir, name, strerror(-err));
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&tmp);
	return ret;
}

struct md_args {
	const struct compare *c;
	json_t *reports[2];
	const char *names[2];
};

static int md_write(void *arg, FILE *f)
{
	struct md_args *a = arg;
	compare_md_write(a->c, a->reports, a->names, f);
	return ferror(f) ? -1 : 0;
}

static int svg_write(void *arg, FILE *f)
{
	return compare_svg_write(arg, f);
}

/* A warning when A and B ran different programs: the comparison still runs. */
static void program_check(struct compare_input in[2])
{
	char *pa = compare_program(in[0].report), *pb = compare_program(in[1].report);
	if (pa && pb && strcmp(pa, pb))
		cli_error("warning: %s ran '%s' and %s ran '%s': the functions compared may "
			  "have little in common",
			  in[0].dir, pa, in[1].dir, pb);
	free(pa);
	free(pb);
}

static int compare_runs(const char *const dirs[2], const char *out_dir, int quiet)
{
	struct compare_input in[2] = { { .dir = dirs[0] }, { .dir = dirs[1] } };
	struct compare c = COMPARE_INIT;
	struct strbuf err = STRBUF_INIT, want = STRBUF_INIT;
	int ret = 1, dirfd = -1, built = 0;
	if (input_open(&in[0]) || input_open(&in[1]))
		goto out;
	program_check(in);
	sqlite3 *const *const dbs[2] = {in[0].dbs, in[1].dbs};
	const size_t n[2] = {in[0].n, in[1].n};
	if (compare_build_runs(dbs, n, dirs, &c, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	built = 1;
	if (c.run[0].source && c.run[1].source && strcmp(c.run[0].source, c.run[1].source))
		cli_error("warning: %s counts its '%s' samples and %s its '%s' samples: their "
			  "stacks may differ in depth",
			  dirs[0], c.run[0].source, dirs[1], c.run[1].source);
	if (!out_dir) {
		default_out_dir(dirs[0], dirs[1], &want);
		out_dir = want.buf;
	}
	dirfd = out_dir_open(out_dir, dirs, in[1].mode);
	if (dirfd < 0)
		goto out;
	struct md_args md = { &c, { in[0].report, in[1].report }, { dirs[0], dirs[1] } };
	int failed = out_write(dirfd, out_dir, "compare.md", in[1].mode, md_write, &md);
	failed |= out_write(dirfd, out_dir, "diff.svg", in[1].mode, svg_write, &c);
	ret = failed ? 1 : 0;
out:
	if (built && !quiet) {
		compare_terminal(&c, dirs, stderr);
		if (dirfd >= 0)
			fprintf(stderr, "sonde: the comparison is in %s/\n", out_dir);
	}
	if (dirfd >= 0)
		close(dirfd);
	compare_release(&c);
	input_release(&in[0]);
	input_release(&in[1]);
	strbuf_release(&err);
	strbuf_release(&want);
	return ret;
}

static void compare_usage(FILE *out)
{
	fputs("usage: sonde compare [options] A B\n\n"
	      "Compares two run directories, A (before) and B (after): each function's\n"
	      "self and total time (seconds and share of the samples, from the stacks\n"
	      "the reports count), the phases matched by name, the peak RSS, the heap\n"
	      "by allocating function (runs made with --memory) and, when both ran\n"
	      "some, each GPU kernel's time. Prints each side's machine\n"
	      "warnings (a busy machine, throttling, ...), what changed most and the\n"
	      "top changes, and writes compare.md and diff.svg (B's flame graph, red\n"
	      "where a function grew, blue where it shrank).\n\n"
	      "A or B may be a family of runs ('sonde run --repeat N': DIR/1 ... DIR/N):\n"
	      "times are then the mean per run, and with two runs or more on both sides\n"
	      "each change of 1% of a run or more gets a Mann-Whitney U test over the\n"
	      "runs and a bootstrap CI of its ratio (Holm-Bonferroni over the functions);\n"
	      "what is not significant is said to be so. Five runs a side or more give\n"
	      "the test its power; a family against one run gets no test.\n\n"
	      "The output goes to compare-<A>-<B>/ beside B unless -o says where;\n"
	      "A and B are only read. Runs of different programs get a warning.\n\n"
	      "options:\n"
	      "  -o, --output OUTDIR  write compare.md and diff.svg there (created when\n"
	      "                     missing; an earlier comparison there is replaced;\n"
	      "                     a run directory is refused)\n"
	      "  -q, --quiet        print no summary\n"
	      "  -h, --help         this help\n",
	      out);
}

int cmd_compare(int argc, char **argv)
{
	static const struct option opts[] = { { "quiet", no_argument, NULL, 'q' },
					      { "help", no_argument, NULL, 'h' },
					      { "output", required_argument, NULL, 'o' },
					      { NULL, 0, NULL, 0 } };
	const char *out_dir = NULL;
	int quiet = 0, c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":qho:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out_dir = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			compare_usage(stdout);
			return 0;
		default:
			cli_bad_option("compare", c, optopt, argv[optind - 1], opts);
			return CLI_USAGE;
		}
	}
	if (optind != argc - 2) {
		cli_error("compare needs two run directories (usage: sonde compare A B)");
		return CLI_USAGE;
	}
	const char *const dirs[2] = { argv[optind], argv[optind + 1] };
	return compare_runs(dirs, out_dir, quiet);
}
