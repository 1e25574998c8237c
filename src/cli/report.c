/* sonde report: rebuild a run directory's report from its profile.db alone. */
#include "cli.h"
#include "suggest.h"
#include "../analysis/analysis.h"
#include "../analysis/phase_markers.h"
#include "../record/reader.h"
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

/* The recording itself, never a link at its name; the report's files get its
 * permissions (a run made with --share stays shared when re-rendered). */
static int recording_path(const char *dir, struct strbuf *path, mode_t *mode)
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

int cli_render_run_dir(const char *dir, int quiet, const struct report_options *opts)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	sqlite3 *db = NULL;
	json_t *report = NULL;
	int ret = 1;
	mode_t mode = SAFEFILE_MODE_PRIVATE;
	if (recording_path(dir, &path, &mode))
		goto out;
	if (recording_open(path.buf, &db, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	report = report_build_with(db, opts, &err);
	if (!report) {
		cli_error("%s: %s", path.buf, err.len ? err.buf : "no analysis could run");
		goto out;
	}
	if (err.len)
		cli_error("%s", err.buf);
	strbuf_reset(&err);
	struct render_ctx ctx = { .report = report, .db = db, .dir = dir, .file_mode = mode };
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
	sqlite3_close(db);
	strbuf_release(&path);
	strbuf_release(&err);
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
	      "options:\n"
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
					      { NULL, 0, NULL, 0 } };
	struct report_options ro = { NULL };
	int quiet = 0, c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
		switch (c) {
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
	if (optind != argc - 1) {
		cli_error("report needs exactly one run directory (usage: sonde report DIR)");
		return CLI_USAGE;
	}
	const char *dir = argv[optind];
	struct stat st;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		cli_error("%s is not a run directory", dir);
		return CLI_USAGE;
	}
	return cli_render_run_dir(dir, quiet, &ro);
}
