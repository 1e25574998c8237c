/* rundir: where a run's files go, and refusing to clobber an earlier run. */
#include "rundir.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUNDIR_DEFAULT_BASE "profile_output"

const char *const rundir_artifacts[] = {
	"profile.db", "profile.db-wal", "profile.db-shm", "profile.db-journal", "report.md",
	"report.json", "output.log",	"flamegraph.svg", "offcpu.svg",	       "memory.svg",
	"stacks.folded", NULL,
};

static int check_writable(const char *dir, struct strbuf *err)
{
	if (access(dir, W_OK | X_OK)) {
		strbuf_addf(err, "cannot write to %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int prepare_requested(const char *dir, int force, struct strbuf *err)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			strbuf_addf(err, "%s exists and is not a directory", dir);
			return -1;
		}
		if (check_writable(dir, err))
			return -1;
		struct strbuf p = STRBUF_INIT;
		int clash = 0;
		for (size_t i = 0; rundir_artifacts[i]; i++) {
			strbuf_reset(&p);
			strbuf_addf(&p, "%s/%s", dir, rundir_artifacts[i]);
			if (access(p.buf, F_OK))
				continue;
			if (!force) {
				clash = 1;
				break;
			}
			if (unlink(p.buf)) {
				strbuf_addf(err, "cannot remove %s: %s", p.buf, strerror(errno));
				strbuf_release(&p);
				return -1;
			}
		}
		strbuf_release(&p);
		if (clash) {
			strbuf_addf(err,
				    "%s already holds a sonde run; use --force to replace it, or "
				    "choose another -o",
				    dir);
			return -1;
		}
		return 0;
	}
	if (errno != ENOENT) {
		strbuf_addf(err, "cannot use %s: %s", dir, strerror(errno));
		return -1;
	}
	int rc = dir_create_parents(dir, 0755);
	if (rc) {
		strbuf_addf(err, "cannot create %s: %s", dir,
			    rc == -ENOTDIR ? "a parent exists and is not a directory" : strerror(-rc));
		return -1;
	}
	return check_writable(dir, err);
}

static void command_name(const char *command, struct strbuf *out)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", command);
	const char *base = basename(buf);
	for (const char *p = base; *p && out->len < 40; p++)
		strbuf_addch(out, isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-'
					  ? *p
					  : '_');
	if (!out->len)
		strbuf_addstr(out, "run");
}

int rundir_prepare(const char *requested, const char *command, int force, struct strbuf *path,
		   struct strbuf *err)
{
	if (requested) {
		if (!*requested) {
			strbuf_addstr(err, "-o needs a directory");
			return -1;
		}
		if (prepare_requested(requested, force, err))
			return -1;
		strbuf_addstr(path, requested);
		return 0;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	struct strbuf name = STRBUF_INIT;
	command_name(command, &name);
	int rc = dir_create_parents(RUNDIR_DEFAULT_BASE, 0755);
	if (rc) {
		strbuf_addf(err, "cannot create %s/: %s", RUNDIR_DEFAULT_BASE, strerror(-rc));
		strbuf_release(&name);
		return -1;
	}
	for (int i = 1; i < 1000; i++) {
		strbuf_reset(path);
		strbuf_addf(path, "%s/%s-%s", RUNDIR_DEFAULT_BASE, stamp, name.buf);
		if (i > 1)
			strbuf_addf(path, "-%d", i);
		if (mkdir(path->buf, 0755) == 0) {
			strbuf_release(&name);
			return 0;
		}
		if (errno != EEXIST) {
			strbuf_addf(err, "cannot create %s: %s", path->buf, strerror(errno));
			break;
		}
	}
	if (!err->len)
		strbuf_addf(err, "cannot find a free run directory under %s/", RUNDIR_DEFAULT_BASE);
	strbuf_release(&name);
	return -1;
}

void rundir_link_latest(const char *path)
{
	struct strbuf tmp = STRBUF_INIT;
	const char *slash = strrchr(path, '/');
	strbuf_addf(&tmp, "%s/.latest.%d", RUNDIR_DEFAULT_BASE, (int)getpid());
	unlink(tmp.buf);
	if (symlink(slash ? slash + 1 : path, tmp.buf) == 0 &&
	    rename(tmp.buf, RUNDIR_DEFAULT_BASE "/latest"))
		unlink(tmp.buf);
	strbuf_release(&tmp);
}
