/* sonde report: rebuild a run directory's report from its profile.db alone. */
#include "cli.h"
#include "filter.h"
#include "rundir.h"
#include "suggest.h"
#include "../analysis/analysis.h"
#include "../analysis/phase_markers.h"
#include "../record/reader.h"
#include "../record/slice.h"
#include "../render/render.h"
#include "../util/safefile.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The recording itself, never a link at its name; the report's files get its
 * permissions (a run made with --share stays shared when re-rendered). */
int cli_recording_path(const char *dir, struct strbuf *path, mode_t *mode)
{
	struct strbuf shown = STRBUF_INIT;
	struct stat st;
	char real[PATH_MAX];
	int ret = -1;
	strbuf_addf(&shown, "%s/profile.db", dir);
	if (lstat(shown.buf, &st)) {
		cli_error("%s: %s", shown.buf, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_error("%s is not a regular file%s: sonde reads only the recording itself", shown.buf,
			  S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
		goto out;
	}
	if (!realpath(dir, real)) {
		cli_error("%s: %s", dir, strerror(errno));
		goto out;
	}
	strbuf_addf(path, "%s/profile.db", real);
	*mode = st.st_mode & 0666;
	ret = 0;
out:
	strbuf_release(&shown);
	return ret;
}

/* Builds the report model from db and writes every view into out_dir. */
static int report_write(sqlite3 *db, const char *what, const char *out_dir, mode_t mode, int sliced,
			int quiet, const struct report_options *opts)
{
	struct strbuf err = STRBUF_INIT;
	int ret = 1;
	json_t *report = report_build_with(db, opts, &err);
	if (!report) {
		cli_error("%s: %s", what, err.len ? err.buf : "no analysis could run");
		goto out;
	}
	if (err.len)
		cli_error("%s", err.buf);
	strbuf_reset(&err);
	struct render_ctx ctx = {
		.report = report, .db = db, .dir = out_dir, .file_mode = mode, .sliced = sliced
	};
	int failures = render_all(&ctx, &err);
	for (char *line = err.buf, *nl; failures && line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		cli_error("%s", line);
	}
	/* Even when files could not be written, what was measured reaches the terminal. */
	if (!quiet)
		render_terminal(&ctx, stderr);
	ret = failures ? 1 : 0;
out:
	json_decref(report);
	strbuf_release(&err);
	return ret;
}

int cli_is_run_dir(const char *dir)
{
	struct stat st;
	if (!stat(dir, &st) && S_ISDIR(st.st_mode))
		return 1;
	cli_error("%s is not a run directory", dir);
	return 0;
}

const char *cli_run_dir_arg(int argc, char **argv, int optind, const char *usage)
{
	if (optind != argc - 1) {
		cli_error("%s", usage);
		return NULL;
	}
	return cli_is_run_dir(argv[optind]) ? argv[optind] : NULL;
}

int cli_render_run_dir(const char *dir, int quiet, const struct report_options *opts)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	sqlite3 *db = NULL;
	int ret = 1;
	mode_t mode = SAFEFILE_MODE_PRIVATE;
	if (cli_recording_path(dir, &path, &mode))
		goto out;
	if (recording_open(path.buf, &db, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	ret = report_write(db, path.buf, dir, mode, 0, quiet, opts);
out:
	sqlite3_close(db);
	strbuf_release(&path);
	strbuf_release(&err);
	return ret;
}

/* Where a slice's report goes: out_dir when given (never a run directory: its
 * own report stays), else DIR/slices/NAME; an earlier report there is replaced. */
static int slice_dir_prepare(const char *dir, const char *out_dir, const struct slice_filter *f,
			     mode_t mode, struct strbuf *path)
{
	struct strbuf want = STRBUF_INIT, err = STRBUF_INIT, db = STRBUF_INIT;
	struct stat st;
	int ret = -1;
	if (out_dir) {
		strbuf_addstr(&want, out_dir);
	} else {
		strbuf_addf(&want, "%s/slices/", dir);
		filter_name(f, &want);
	}
	strbuf_addf(&db, "%s/profile.db", want.buf);
	if (!lstat(db.buf, &st)) {
		cli_error("%s holds a recording: a slice's report never replaces a run's (choose "
			  "another -o)",
			  want.buf);
		goto out;
	}
	if (rundir_prepare(want.buf, NULL, 1, mode, path, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&want);
	strbuf_release(&err);
	strbuf_release(&db);
	return ret;
}

/* The report of the slice f selects (or of the whole run, into out_dir). */
static int render_slice(const char *dir, const char *out_dir, struct slice_filter *f, int quiet,
			const struct report_options *opts)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT, out = STRBUF_INIT;
	sqlite3 *db = NULL;
	int ret = 1;
	mode_t mode = SAFEFILE_MODE_PRIVATE;
	if (cli_recording_path(dir, &path, &mode) || filter_resolve(path.buf, f, opts))
		goto out;
	if (slice_open(path.buf, f, &db, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (slice_dir_prepare(dir, out_dir, f, mode, &out))
		goto out;
	ret = report_write(db, path.buf, out.buf, mode, 1, quiet, opts);
	if (!quiet)
		fprintf(stderr, "sonde: the slice's report is in %s/\n", out.buf);
out:
	sqlite3_close(db);
	strbuf_release(&path);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}

int cli_check_phase_pattern(const char *pattern)
{
	struct phase_pattern p;
	struct strbuf err = STRBUF_INIT;
	int ret = phase_pattern_compile(&p, pattern, &err);
	if (ret)
		cli_error("--phase: %s", err.buf);
	else
		phase_pattern_release(&p);
	strbuf_release(&err);
	return ret;
}

static void report_usage(FILE *out)
{
	fputs("usage: sonde report [options] DIR\n\n"
	      "Rebuilds report.md, report.json and every other artifact of the run in\n"
	      "DIR from DIR/profile.db alone, and prints the summary.\n\n"
	      "With --from, --to, --pid or --during it reports a slice of the run\n"
	      "instead, through the same views: written into DIR/slices/NAME/ (NAME\n"
	      "says which slice, e.g. 2s-5s_pid4242 or during_load), or into -o OUTDIR;\n"
	      "DIR's own report is left as it is. Times in a slice's report count from\n"
	      "its start.\n\n"
	      "options:\n" FILTER_HELP
	      "  -o, --output OUTDIR  write the report there (created when missing; a\n"
	      "                     report there is replaced, a recording never)\n"
	      "      --phase REGEX  find the phases with this pattern instead of the one\n"
	      "                     the run used (see 'sonde run --help')\n"
	      "  -q, --quiet        print no summary\n"
	      "  -h, --help         this help\n",
	      out);
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_PHASE = 256 };
	static const struct option opts[] = { { "quiet", no_argument, NULL, 'q' },
					      { "help", no_argument, NULL, 'h' },
					      { "phase", required_argument, NULL, OPT_PHASE },
					      { "output", required_argument, NULL, 'o' },
					      FILTER_LONG_OPTIONS,
					      { NULL, 0, NULL, 0 } };
	struct report_options ro = { NULL };
	struct slice_filter filter = SLICE_FILTER_INIT;
	const char *out_dir = NULL;
	int quiet = 0, c;
	opterr = 0;
	optind = 1;
	while ((c = filter_getopt(argc, argv, ":qho:", opts, &filter)) != -1) {
		switch (c) {
		case FILTER_BAD: return CLI_USAGE;
		case 'o': out_dir = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': report_usage(stdout); return 0;
		case OPT_PHASE:
			if (cli_check_phase_pattern(optarg))
				return CLI_USAGE;
			ro.phase_pattern = optarg;
			break;
		default:
			cli_bad_option("report", c, optopt, argv[optind - 1], opts);
			return CLI_USAGE;
		}
	}
	const char *dir = cli_run_dir_arg(
		argc, argv, optind, "report needs exactly one run directory (usage: sonde report DIR)");
	if (!dir)
		return CLI_USAGE;
	if (filter_is_set(&filter) || out_dir)
		return render_slice(dir, out_dir, &filter, quiet, &ro);
	return cli_render_run_dir(dir, quiet, &ro);
}
