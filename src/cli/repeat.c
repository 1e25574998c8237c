/* repeat: `sonde run --repeat N` (see repeat.h). */
#include "repeat.h"
#include "cli.h"
#include "rundir.h"
#include "../util/safefile.h"
#include "../util/stats.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* run's report.json: its target's wall_s and exit_code into the family's lists. */
static int run_collect(const char *run, json_t *walls, json_t *codes)
{
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/report.json", run);
	json_t *r = json_load_file(path.buf, 0, NULL);
	strbuf_release(&path);
	json_t *t = json_object_get(r, "target");
	if (!t) {
		json_decref(r);
		return -1;
	}
	json_t *wall = json_object_get(t, "wall_s"), *code = json_object_get(t, "exit_code");
	json_array_append_new(walls, json_is_number(wall) ? json_real(json_number_value(wall))
							  : json_null());
	json_array_append(codes, json_is_integer(code) ? code : json_null());
	json_decref(r);
	return 0;
}

static json_t *wall_summary(json_t *walls)
{
	size_t n = 0, i;
	json_t *w;
	double *x = xcalloc(json_array_size(walls) + 1, sizeof(double));
	json_array_foreach(walls, i, w) if (json_is_number(w)) x[n++] = json_number_value(w);
	struct stats_summary s;
	json_t *out = json_null();
	if (!stats_summarize(x, n, &s))
		out =
		    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "median", s.median, "mean", s.mean,
			      "stddev", s.stddev, "cov", s.cov, "min", s.min, "max", s.max);
	free(x);
	return out;
}

/* DIR/repeat.json, through a temporary (a link at its name is replaced). */
static int family_write(const char *dir, mode_t mode, json_t *family)
{
	struct strbuf tmp = STRBUF_INIT;
	int ret = -1, dirfd = safe_dir_open(dir);
	int fd = dirfd < 0 ? dirfd : safe_tmp_create(dirfd, "repeat.json", mode, &tmp);
	if (fd >= 0) {
		FILE *f = fdopen(fd, "w");
		int bad = !f || json_dumpf(family, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (f)
			bad |= fputc('\n', f) == EOF;
		bad |= f ? fclose(f) != 0 : close(fd) != 0;
		if (bad)
			unlinkat(dirfd, tmp.buf, 0);
		else
			ret = safe_tmp_commit(dirfd, tmp.buf, "repeat.json") ? -1 : 0;
	}
	if (ret)
		cli_error("cannot write %s/repeat.json: %s", dir,
			  fd < 0 ? strerror(-fd) : "write failed");
	if (dirfd >= 0)
		close(dirfd);
	strbuf_release(&tmp);
	return ret;
}

static void family_print(const char *dir, json_t *family)
{
	json_t *wall = json_object_get(family, "wall");
	size_t n = (size_t)json_integer_value(json_object_get(family, "runs"));
	fprintf(stderr, "sonde: %zu run%s in %s/1 ... %s/%zu", n, n == 1 ? "" : "s", dir, dir, n);
	if (json_is_object(wall))
		fprintf(stderr, ": wall median %.3f s (CoV %.1f%%, min %.3f s, max %.3f s)",
			json_number_value(json_object_get(wall, "median")),
			100 * json_number_value(json_object_get(wall, "cov")),
			json_number_value(json_object_get(wall, "min")),
			json_number_value(json_object_get(wall, "max")));
	fprintf(stderr, "\nsonde: 'sonde compare %s OTHER' tests what changed across the runs\n",
		dir);
}

int repeat_execute(struct profile_args *a, const char *name, const char *command_line)
{
	struct strbuf err = STRBUF_INIT, dir = STRBUF_INIT, run = STRBUF_INIT;
	mode_t mode = a->share ? SAFEFILE_MODE_SHARED : SAFEFILE_MODE_PRIVATE;
	int ret = CLI_USAGE, quiet = a->quiet;
	json_t *walls = json_array(), *codes = json_array(), *dirs = json_array();
	if (rundir_prepare(a->out_dir, name, a->force, mode, &dir, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (!a->out_dir)
		rundir_link_latest(dir.buf);
	ret = 0;
	for (int k = 1; k <= a->repeat; k++) {
		strbuf_reset(&run);
		strbuf_addf(&run, "%s/%d", dir.buf, k);
		a->out_dir = run.buf;
		a->quiet = 1; /* one summary for the family, at the end */
		if (!quiet)
			fprintf(stderr, "sonde: run %d of %d into %s\n", k, a->repeat, run.buf);
		int rc = profile_execute(a, name, command_line);
		if (run_collect(run.buf, walls, codes)) {
			cli_error("run %d left no report: the family stops at %d run%s", k, k - 1,
				  k == 2 ? "" : "s");
			ret = ret ? ret : (rc ? rc : 1);
			break;
		}
		json_array_append_new(dirs, json_sprintf("%d", k));
		if (!ret && rc)
			ret = rc;
		if (rc == 128 + SIGINT || rc == 128 + SIGTERM) {
			cli_error("run %d was interrupted: the family stops there", k);
			break;
		}
	}
	json_t *family =
	    json_pack("{s:s, s:i, s:I, s:O, s:O, s:O, s:o}", "command", command_line, "requested",
		      a->repeat, "runs", (json_int_t)json_array_size(dirs), "dirs", dirs, "wall_s",
		      walls, "exit_codes", codes, "wall", wall_summary(walls));
	if (family && family_write(dir.buf, mode, family) && !ret)
		ret = 1;
	if (family && !quiet)
		family_print(dir.buf, family);
	json_decref(family);
out:
	json_decref(walls);
	json_decref(codes);
	json_decref(dirs);
	strbuf_release(&err);
	strbuf_release(&dir);
	strbuf_release(&run);
	return ret;
}

size_t repeat_runs_read(const char *dir)
{
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/repeat.json", dir);
	json_t *family = json_load_file(path.buf, 0, NULL);
	strbuf_release(&path);
	json_int_t n = json_integer_value(json_object_get(family, "runs"));
	json_decref(family);
	return n > 0 ? (size_t)n : 0;
}
