/* sonde instrument: timing code inserted into the user's Python source for
 * the functions named (pyedit.h), recorded in the manifest (manifest.h) for
 * `sonde clean` and each run's Part B. All or nothing: a function not found
 * or a file refused leaves every file as it was. */
#include "cli.h"
#include "manifest.h"
#include "srcfile.h"
#include "suggest.h"
#include "../util/pyedit.h"
#include "../util/pyscan.h"
#include "../util/sha256.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void instrument_usage(FILE *out)
{
	fputs("usage: sonde instrument FILE.py:FUNCTION...\n\n"
	      "Inserts timing code into your Python source for each function named\n"
	      "(path/mod.py:func, path/mod.py:Class.method, path/mod.py:outer.inner):\n"
	      "a decorator right above its def that makes each call a region, and once\n"
	      "per file a four-line import of it that costs nothing without sonde\n"
	      "(docs/regions.md). Every inserted line ends with '" PYEDIT_MARK "'.\n" MANIFEST_PATH
	      " records the lines and each file's SHA-256\n"
	      "before and after; every run started in this directory lists them in its\n"
	      "report's Part B, and 'sonde clean' removes them, byte for byte.\n\n"
	      "Under 'sonde run', each call is then a region (a phase of the report with\n"
	      "its wall and CPU time) when the program can import the sonde module\n"
	      "(python/sonde in sonde's tree: copy it next to your code or set PYTHONPATH).\n\n"
	      "Nothing is changed when a function is not found or a file is refused: not\n"
	      "writable, a symbolic link out of this directory, several hard links, or\n"
	      "edited since sonde instrumented it.\n\n"
	      "options:\n"
	      "  -h, --help  this help\n\n"
	      "Exit status: 0 when every function is instrumented; 1 when nothing was\n"
	      "changed; 2 on a usage error.\n",
	      out);
}

/* One file to instrument: what it holds now, what it held before sonde,
 * and what it will hold. */
struct job {
	const char *path; /* as first named */
	struct srcfile f;
	struct pyedit_target *targets;
	size_t ntargets;
	struct strbuf base, out;
	struct pyedit_lines lines;
	char before[SHA256_HEX_LEN + 1];
	int written;
};

static void job_release(struct job *j)
{
	srcfile_release(&j->f);
	for (size_t i = 0; i < j->ntargets; i++) {
		free((char *)j->targets[i].qualname);
		free((char *)j->targets[i].region);
	}
	free(j->targets);
	strbuf_release(&j->base);
	strbuf_release(&j->out);
	pyedit_lines_release(&j->lines);
}

static void job_target_add(struct job *j, const char *qualname, const char *region)
{
	for (size_t i = 0; i < j->ntargets; i++)
		if (!strcmp(j->targets[i].qualname, qualname))
			return;
	j->targets = xrealloc(j->targets, (j->ntargets + 1) * sizeof(*j->targets));
	j->targets[j->ntargets++] = (struct pyedit_target){ xstrdup(qualname), xstrdup(region) };
}

/* A qualified name: dotted identifiers, "<locals>" parts allowed. */
static int qualname_valid(const char *q)
{
	if (!*q || *q == '.' || q[strlen(q) - 1] == '.' || strstr(q, ".."))
		return 0;
	for (; *q; q++)
		if (!strchr("._<>", *q) && !((*q | 0x20) >= 'a' && (*q | 0x20) <= 'z') &&
		    !(*q >= '0' && *q <= '9') && (unsigned char)*q < 0x80)
			return 0;
	return 1;
}

/* Adds SPEC (FILE:QUALNAME) to its file's job, reading the file the first
 * time. 0, or -1 with the error printed. */
static int spec_add(const char *spec, struct job **jobs, size_t *n)
{
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !qualname_valid(colon + 1)) {
		cli_error("'%s' is not FILE.py:FUNCTION (e.g. app/model.py:Model.forward)", spec);
		return -1;
	}
	char *path = xstrndup(spec, (size_t)(colon - spec));
	struct srcfile f = SRCFILE_INIT;
	struct strbuf err = STRBUF_INIT, region = STRBUF_INIT;
	int ret = -1;
	int r = srcfile_read(path, &f, &err);
	if (r == -ENOENT)
		strbuf_addstr(&err, " (sonde instrument takes a file: path/to/module.py:FUNCTION)");
	if (r || srcfile_check_writable(&f, path, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	struct job *j = NULL;
	for (size_t i = 0; i < *n && !j; i++)
		if (!strcmp((*jobs)[i].f.real, f.real))
			j = &(*jobs)[i];
	if (!j) {
		*jobs = xrealloc(*jobs, (*n + 1) * sizeof(**jobs));
		j = &(*jobs)[(*n)++];
		*j = (struct job){
			.path = xstrdup(path), .f = f, .base = STRBUF_INIT, .out = STRBUF_INIT
		};
		f = (struct srcfile)SRCFILE_INIT;
	}
	strbuf_addf(&region, "%s:%s", strncmp(path, "./", 2) ? path : path + 2, colon + 1);
	job_target_add(j, colon + 1, region.buf);
	ret = 0;
out:
	srcfile_release(&f);
	strbuf_release(&err);
	strbuf_release(&region);
	free(path);
	return ret;
}

/* The text the file held before sonde (what the manifest's lines come out
 * of), and the targets instrumented before, kept. 0, or -1 printed. */
static int job_base(struct job *j, struct manifest *m)
{
	struct strbuf err = STRBUF_INIT;
	char now[SHA256_HEX_LEN + 1];
	sha256_hex(j->f.text.buf, j->f.text.len, now);
	struct manifest_entry *e = manifest_find(m, j->f.real);
	if (!e) {
		if (strstr(j->f.text.buf, "_sonde_region") && strstr(j->f.text.buf, PYEDIT_MARK)) {
			cli_error("%s already holds lines marked " PYEDIT_MARK
				  " that " MANIFEST_PATH " does not list: remove them first",
				  j->path);
			return -1;
		}
		strbuf_add(&j->base, j->f.text.buf, j->f.text.len);
		memcpy(j->before, now, sizeof(now));
		return 0;
	}
	if (strcmp(now, e->sha256_after)) {
		cli_error("%s was edited since sonde instrumented it (its SHA-256 differs from "
			  "the one recorded): run 'sonde clean' first",
			  j->path);
		return -1;
	}
	if (pyedit_strip(j->f.text.buf, j->f.text.len, e->lines.v, e->lines.n, &j->base, &err)) {
		cli_error("%s: %s", j->path, err.buf);
		strbuf_release(&err);
		return -1;
	}
	sha256_hex(j->base.buf, j->base.len, j->before);
	if (strcmp(j->before, e->sha256_before)) {
		cli_error("%s: the recorded lines do not give back the recorded original", j->path);
		return -1;
	}
	/* The earlier targets first, so their lines keep their order. */
	struct pyedit_target *mine = j->targets;
	size_t nmine = j->ntargets;
	j->targets = NULL;
	j->ntargets = 0;
	for (size_t i = 0; i < e->ntargets; i++)
		job_target_add(j, e->targets[i].qualname, e->targets[i].region);
	for (size_t i = 0; i < nmine; i++) {
		job_target_add(j, mine[i].qualname, mine[i].region);
		free((char *)mine[i].qualname);
		free((char *)mine[i].region);
	}
	free(mine);
	return 0;
}

/* A function not found: the nearest name the file defines, if any is close. */
static void not_found(const struct job *j, const char *qualname, const char *why)
{
	struct pyscan scan = PYSCAN_INIT;
	struct strbuf err = STRBUF_INIT;
	struct suggest near;
	suggest_init(&near, qualname, strlen(qualname));
	pyscan_defs(j->base.buf, j->base.len, &scan, &err);
	for (size_t i = 0; i < scan.n; i++)
		if (scan.defs[i].kind == 'd')
			suggest_try(&near, scan.defs[i].qualname);
	if (suggest_result(&near))
		cli_error("%s: %s (did you mean %s?): nothing changed", j->path, why,
			  suggest_result(&near));
	else
		cli_error("%s: %s: nothing changed", j->path, why);
	pyscan_release(&scan);
	strbuf_release(&err);
}

static int job_edit(struct job *j)
{
	struct strbuf err = STRBUF_INIT;
	size_t bad = 0;
	int r = pyedit_instrument(j->base.buf, j->base.len, j->targets, j->ntargets, &j->out,
				  &j->lines, &bad, &err);
	if (r == PYEDIT_NOT_FOUND || r == PYEDIT_NOT_FUNCTION)
		not_found(j, j->targets[bad].qualname, err.buf);
	else if (r)
		cli_error("%s: cannot read it as Python (%s): nothing changed", j->path, err.buf);
	strbuf_release(&err);
	return r ? -1 : 0;
}

/* Puts every written file back as it was before this command. */
static void jobs_undo(struct job *jobs, size_t n)
{
	struct strbuf err = STRBUF_INIT;
	for (size_t i = 0; i < n; i++)
		if (jobs[i].written && srcfile_replace(&jobs[i].f, jobs[i].path, jobs[i].f.text.buf,
						       jobs[i].f.text.len, &err)) {
			cli_error("%s", err.buf);
			strbuf_reset(&err);
		}
	strbuf_release(&err);
}

/* The files as instrumented, then the manifest; on a failure, the files
 * written are put back. 0, or -1 printed. */
static int jobs_commit(struct job *jobs, size_t n, struct manifest *m)
{
	struct strbuf err = STRBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		if (j->out.len == j->f.text.len && !memcmp(j->out.buf, j->f.text.buf, j->out.len))
			continue;
		if (srcfile_replace(&j->f, j->path, j->out.buf, j->out.len, &err))
			goto fail;
		j->written = 1;
	}
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		struct manifest_entry *e = manifest_find(m, j->f.real);
		if (!e)
			e = manifest_add(m, j->f.real, j->path);
		memcpy(e->sha256_before, j->before, sizeof(j->before));
		sha256_hex(j->out.buf, j->out.len, e->sha256_after);
		for (size_t t = 0; t < j->ntargets; t++)
			manifest_target_add(e, j->targets[t].qualname, j->targets[t].region);
		pyedit_lines_release(&e->lines);
		e->lines = j->lines;
		j->lines = (struct pyedit_lines)PYEDIT_LINES_INIT;
	}
	if (manifest_save(m, &err))
		goto fail;
	return 0;
fail:
	cli_error("%s: nothing changed", err.buf);
	jobs_undo(jobs, n);
	strbuf_release(&err);
	return -1;
}

/* Where the sonde module is, in this binary's source tree, for the hint. */
static void module_hint(void)
{
	char exe[PATH_MAX], mod[PATH_MAX + 32];
	char *real = NULL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(mod, sizeof(mod), "%s/../python/sonde/__init__.py", dirname(exe));
		real = realpath(mod, NULL);
	}
	if (real)
		real[strlen(real) - strlen("/sonde/__init__.py")] = '\0';
	printf("Recorded in %s; 'sonde clean' removes the lines.\n"
	       "Under 'sonde run' each call is a region when the program can import sonde",
	       MANIFEST_PATH);
	if (real)
		printf(" (PYTHONPATH=%s).\n", real);
	else
		puts(" (docs/regions.md).");
	free(real);
}

int cmd_instrument(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	struct manifest m = MANIFEST_INIT;
	struct strbuf err = STRBUF_INIT, lines = STRBUF_INIT;
	struct job *jobs = NULL;
	size_t n = 0;
	int c, ret = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			instrument_usage(stdout);
			return 0;
		}
		cli_bad_option("instrument", c, optopt, argv[optind - 1], opts);
		return CLI_USAGE;
	}
	if (optind == argc) {
		cli_error(
		    "sonde instrument needs FILE.py:FUNCTION (see 'sonde instrument --help')");
		return CLI_USAGE;
	}
	if (manifest_load(&m, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	for (int i = optind; i < argc; i++)
		if (spec_add(argv[i], &jobs, &n))
			goto out;
	for (size_t i = 0; i < n; i++)
		if (job_base(&jobs[i], &m) || job_edit(&jobs[i]))
			goto out;
	if (jobs_commit(jobs, n, &m))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct manifest_entry *e = manifest_find(&m, jobs[i].f.real);
		strbuf_reset(&lines);
		manifest_lines_text(e, &lines);
		printf("instrumented %s: ", jobs[i].path);
		for (size_t t = 0; t < e->ntargets; t++)
			printf("%s%s", t ? ", " : "", e->targets[t].qualname);
		printf(" (lines %s)\n", lines.buf);
	}
	module_hint();
	ret = 0;
out:
	for (size_t i = 0; i < n; i++) {
		free((char *)jobs[i].path);
		job_release(&jobs[i]);
	}
	free(jobs);
	manifest_release(&m);
	strbuf_release(&err);
	strbuf_release(&lines);
	return ret;
}
