/* sonde export: a run, or a slice of it, in another tool's format, the
 * exporter chosen by name from export_table (src/render/exporter_list.h). */
#include "cli.h"
#include "cliopt.h"
#include "filter.h"
#include "suggest.h"
#include "../analysis/analysis.h"
#include "../record/reader.h"
#include "../record/slice.h"
#include "../render/render.h"
#include "../util/safefile.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void export_usage(FILE *out)
{
	fputs(
	    "usage: sonde export [options] DIR --format NAME\n\n"
	    "Writes the run in DIR (from DIR/profile.db), or a slice of it, in another\n"
	    "tool's format. Times in a slice count from its start.\n\n"
	    "options:\n"
	    "  -f, --format NAME  the format: 'sonde export --format help' lists them\n" FILTER_HELP
	    "      --tid N        only thread N (of --pid, or of its own process)\n"
	    "  -o, --output FILE  where to write ('-': standard output); default the\n"
	    "                     format's file name in the current directory\n"
	    "  -q, --quiet        say nothing when it worked\n"
	    "  -h, --help         this help\n",
	    out);
}

static void formats_list(FILE *out)
{
	fputs("formats (sonde export DIR --format NAME):\n", out);
	for (size_t i = 0; export_table[i]; i++)
		fprintf(out, "  %-11s %s (%s)\n", export_table[i]->name, export_table[i]->description,
			export_table[i]->renderer->file);
}

const struct exporter *cli_export_format(const char *name)
{
	const struct exporter *e = exporter_find(name);
	if (e)
		return e;
	struct suggest near;
	suggest_init(&near, name, strlen(name));
	for (size_t i = 0; export_table[i]; i++)
		suggest_try(&near, export_table[i]->name);
	if (suggest_result(&near))
		cli_error("'%s' is not an export format (did you mean '%s'? see 'sonde export "
			  "--format help')",
			  name, suggest_result(&near));
	else
		cli_error("'%s' is not an export format (see 'sonde export --format help')", name);
	return NULL;
}

/* Writes through a temporary beside file, renamed over it: nothing planted at
 * the name is written through. 0, 1 (nothing to write) or -1 (err filled). */
static int export_to_file(const struct exporter *e, const struct render_ctx *ctx, const char *file,
			  struct strbuf *err)
{
	struct strbuf dir = STRBUF_INIT, tmp = STRBUF_INIT;
	const char *slash = strrchr(file, '/');
	const char *base = slash ? slash + 1 : file;
	int ret = -1, dirfd = -1;
	if (!*base) {
		strbuf_addf(err, "%s: not a file name", file);
		goto out;
	}
	if (slash)
		strbuf_add(&dir, file, slash == file ? 1 : (size_t)(slash - file));
	else
		strbuf_addstr(&dir, ".");
	dirfd = safe_dir_open(dir.buf);
	if (dirfd < 0) {
		strbuf_addf(err, "%s: %s", dir.buf, strerror(-dirfd));
		goto out;
	}
	int fd = safe_tmp_create(dirfd, base, ctx->file_mode, &tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		strbuf_addf(err, "%s: %s", file, strerror(fd < 0 ? -fd : errno));
		if (fd >= 0) {
			close(fd);
			unlinkat(dirfd, tmp.buf, 0);
		}
		goto out;
	}
	struct strbuf why = STRBUF_INIT;
	int rc = e->renderer->render(ctx, f, &why);
	int werr = ferror(f);
	if (fclose(f) || werr) {
		strbuf_addf(err, "%s: write failed", file);
		rc = -1;
	} else if (rc < 0) {
		strbuf_addf(err, "%s: %s", file, strbuf_str(&why));
	}
	strbuf_release(&why);
	if (rc) {
		unlinkat(dirfd, tmp.buf, 0);
		ret = rc < 0 ? -1 : 1;
		goto out;
	}
	int cerr = safe_tmp_commit(dirfd, tmp.buf, base);
	if (cerr) {
		strbuf_addf(err, "%s: %s", file, strerror(-cerr));
		goto out;
	}
	ret = 0;
out:
	if (dirfd >= 0)
		close(dirfd);
	strbuf_release(&dir);
	strbuf_release(&tmp);
	return ret;
}

static int export_run(const char *dir, const struct exporter *e, struct slice_filter *f,
		      const char *file, int quiet)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	sqlite3 *db = NULL;
	json_t *report = NULL;
	mode_t mode = SAFEFILE_MODE_PRIVATE;
	int ret = 1, sliced = filter_is_set(f);
	if (cli_recording_path(dir, &path, &mode) || filter_resolve(path.buf, f, NULL))
		goto out;
	if (sliced ? slice_open(path.buf, f, &db, &err) : recording_open(path.buf, &db, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (e->needs_report && !(report = report_build(db, &err))) {
		cli_error("%s: %s", path.buf, err.len ? err.buf : "no analysis could run");
		goto out;
	}
	strbuf_reset(&err);
	struct render_ctx ctx = {
		.report = report, .db = db, .dir = dir, .file_mode = mode, .sliced = sliced
	};
	int rc;
	if (!strcmp(file, "-")) {
		rc = e->renderer->render(&ctx, stdout, &err);
		if (fflush(stdout) && rc >= 0) {
			strbuf_addf(&err, "standard output: %s", strerror(errno));
			rc = -1;
		}
	} else {
		rc = export_to_file(e, &ctx, file, &err);
	}
	if (rc < 0)
		cli_error("%s", err.buf);
	else if (rc > 0 && err.len)
		cli_error("nothing to export as %s: %s", e->name, err.buf);
	else if (rc > 0)
		cli_error("nothing to export as %s: the %s has no data for it (%s)", e->name,
			  sliced ? "slice" : "recording", e->description);
	else if (!quiet && strcmp(file, "-"))
		fprintf(stderr, "sonde: wrote %s (%s)\n", file, e->name);
	ret = rc ? 1 : 0;
out:
	json_decref(report);
	sqlite3_close(db);
	strbuf_release(&path);
	strbuf_release(&err);
	return ret;
}

int cli_export_into_run(const char *dir, const struct exporter *e, int quiet)
{
	struct slice_filter whole = SLICE_FILTER_INIT;
	struct strbuf file = STRBUF_INIT;
	strbuf_addf(&file, "%s/%s", dir, e->renderer->file);
	int rc = export_run(dir, e, &whole, file.buf, quiet);
	strbuf_release(&file);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = { { "format", required_argument, NULL, 'f' },
					      { "output", required_argument, NULL, 'o' },
					      { "quiet", no_argument, NULL, 'q' },
					      { "help", no_argument, NULL, 'h' },
					      FILTER_LONG_OPTIONS,
					      { "tid", required_argument, NULL, FILTER_OPT_TID },
					      { NULL, 0, NULL, 0 } };
	struct slice_filter filter = SLICE_FILTER_INIT;
	struct cli_getopt g = { .cmd = "export",
				.shortopts = ":f:o:qh",
				.longopts = opts,
				.usage = export_usage,
				.filter = &filter };
	const char *format = NULL, *file = NULL;
	int quiet = 0, c;
	while ((c = cli_getopt(&g, argc, argv)) >= 0) {
		if (c == 'f')
			format = optarg;
		else if (c == 'o')
			file = optarg;
		else
			quiet = 1; /* 'q' */
	}
	if (c == CLI_GETOPT_EXIT)
		return g.exit_code;
	if (format && !strcmp(format, "help")) {
		formats_list(stdout);
		return 0;
	}
	if (!format) {
		cli_error("export needs --format NAME (see 'sonde export --format help')");
		return CLI_USAGE;
	}
	const struct exporter *e = cli_export_format(format);
	if (!e)
		return CLI_USAGE;
	const char *dir = cli_run_dir_arg(
		argc, argv, optind,
		"export needs exactly one run directory (usage: sonde export DIR --format NAME)");
	if (!dir)
		return CLI_USAGE;
	return export_run(dir, e, &filter, file ? file : e->renderer->file, quiet);
}
