/* rundir: where a run's files go, and refusing to clobber an earlier run. */
#include "rundir.h"
#include "../util/fileio.h"
#include "../util/safefile.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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
	"stacks.folded", "trace.json", "report.html", "repeat.json", NULL,
};

static int check_writable(const char *dir, struct strbuf *err)
{
	if (access(dir, W_OK | X_OK)) {
		strbuf_addf(err, "cannot write to %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* Anything at an artifact's name counts, a dangling link included (lstat): it
 * is removed with --force (a link is removed, never followed), else refused. */
static int clear_artifacts(const char *dir, int force, struct strbuf *err)
{
	int dirfd = safe_dir_open(dir);
	if (dirfd < 0) {
		strbuf_addf(err, "cannot use %s: %s", dir, strerror(-dirfd));
		return -1;
	}
	int clash = 0;
	for (size_t i = 0; rundir_artifacts[i] && !clash; i++) {
		struct stat st;
		if (fstatat(dirfd, rundir_artifacts[i], &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (!force || S_ISDIR(st.st_mode)) {
			clash = 1;
		} else if (unlinkat(dirfd, rundir_artifacts[i], 0)) {
			strbuf_addf(err, "cannot remove %s/%s: %s", dir, rundir_artifacts[i],
				    strerror(errno));
			close(dirfd);
			return -1;
		}
	}
	close(dirfd);
	return clash;
}

static int prepare_requested(const char *dir, int force, mode_t dir_mode, struct strbuf *err)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			strbuf_addf(err, "%s exists and is not a directory", dir);
			return -1;
		}
		if (check_writable(dir, err))
			return -1;
		int clash = clear_artifacts(dir, force, err);
		if (clash < 0)
			return -1;
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
	int rc = dir_create_parents(dir, dir_mode);
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

/* profile_output in the current directory: made by sonde, or the user's own.
 * A link there is followed only when it belongs to the user (someone else may
 * have planted it in a shared working directory). Returns a directory fd. */
int rundir_open_base(mode_t dir_mode, struct strbuf *err)
{
	struct stat st;
	if (mkdir(RUNDIR_DEFAULT_BASE, dir_mode) && errno != EEXIST) {
		strbuf_addf(err, "cannot create %s/: %s", RUNDIR_DEFAULT_BASE, strerror(errno));
		return -1;
	}
	if (lstat(RUNDIR_DEFAULT_BASE, &st)) {
		strbuf_addf(err, "cannot use %s/: %s", RUNDIR_DEFAULT_BASE, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode) && st.st_uid != geteuid()) {
		strbuf_addf(err,
			    "%s is a symbolic link owned by another user: sonde does not write "
			    "through it (remove it, or choose a directory with -o)",
			    RUNDIR_DEFAULT_BASE);
		return -1;
	}
	int fd = safe_dir_open(RUNDIR_DEFAULT_BASE);
	if (fd < 0)
		strbuf_addf(err, "cannot use %s/: %s", RUNDIR_DEFAULT_BASE,
			    fd == -ENOTDIR ? "not a directory" : strerror(-fd));
	return fd;
}

int rundir_prepare(const char *requested, const char *command, int force, mode_t file_mode,
		   struct strbuf *path, struct strbuf *err)
{
	mode_t dir_mode = SAFEFILE_DIR_MODE(file_mode);
	if (requested) {
		if (!*requested) {
			strbuf_addstr(err, "-o needs a directory");
			return -1;
		}
		if (prepare_requested(requested, force, dir_mode, err))
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
	int basefd = rundir_open_base(dir_mode, err);
	if (basefd < 0) {
		strbuf_release(&name);
		return -1;
	}
	struct strbuf leaf = STRBUF_INIT;
	int ret = -1;
	for (int i = 1; i < 1000; i++) {
		strbuf_reset(&leaf);
		strbuf_addf(&leaf, "%s-%s", stamp, name.buf);
		if (i > 1)
			strbuf_addf(&leaf, "-%d", i);
		strbuf_reset(path);
		strbuf_addf(path, "%s/%s", RUNDIR_DEFAULT_BASE, leaf.buf);
		/* mkdirat never follows a link at the new name: EEXIST, try the next. */
		if (mkdirat(basefd, leaf.buf, dir_mode) == 0) {
			ret = 0;
			goto out;
		}
		if (errno != EEXIST) {
			strbuf_addf(err, "cannot create %s: %s", path->buf, strerror(errno));
			goto out;
		}
	}
	strbuf_addf(err, "cannot find a free run directory under %s/", RUNDIR_DEFAULT_BASE);
out:
	close(basefd);
	strbuf_release(&leaf);
	strbuf_release(&name);
	return ret;
}

void rundir_link_latest(const char *path)
{
	const char *slash = strrchr(path, '/');
	int basefd = open(RUNDIR_DEFAULT_BASE, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (basefd < 0)
		return;
	/* Only a link is replaced (atomically, never followed); a file or a
	 * directory the user put at that name stays. */
	safe_symlink_replace(basefd, slash ? slash + 1 : path, "latest");
	close(basefd);
}
