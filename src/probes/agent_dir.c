/* agent_dir: agents' files and their record directory (agent_dir.h). */
#define LOG_DOMAIN "agent"
#include "agent_dir.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Record directories carry the lock protocol above; older sondes'
 * directories (sonde-alloc-*) are never touched, as they may belong to a
 * live run. */
#define AGENT_DIR_PREFIX "sonde-agent-"

/* Seconds an unlocked, empty record directory is left alone: the moment
 * between another sonde's mkdtemp and its flock. */
#define AGENT_LEFTOVER_GRACE_S 60

int agent_find(const char *env_var, const char *name, struct strbuf *path)
{
	const char *env = getenv(env_var);
	if (env && *env) {
		strbuf_addstr(path, env);
		return access(path->buf, R_OK) ? -1 : 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	static const char *const rel[] = { "", "/../lib/sonde", "/../lib" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		strbuf_reset(path);
		strbuf_addf(path, "%s%s/%s", exe, rel[i], name);
		if (!access(path->buf, R_OK))
			return 0;
	}
	strbuf_reset(path);
	strbuf_addf(path, "%s/%s", exe, name);
	return -1;
}

/* Removes one leftover directory when no sonde holds its lock. */
static void leftover_remove(int tmpfd, const char *name)
{
	int fd = openat(tmpfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_uid != geteuid() || flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return; /* someone else's, or a live run's */
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	int files = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			files++;
	if (files || time(NULL) - st.st_mtime > AGENT_LEFTOVER_GRACE_S) {
		rewinddir(d);
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0); /* a file or a link, never followed */
		if (!unlinkat(tmpfd, name, AT_REMOVEDIR))
			log_info("removed %s, left by a sonde that was killed", name);
	}
	closedir(d); /* and the lock */
}

/* Directories of runs whose sonde was killed (no one holds their lock): the
 * agents in surviving images remove their own files, this catches the rest. */
static void leftovers_clean(const char *tmp)
{
	int tmpfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmpfd < 0)
		return;
	DIR *d = fdopendir(dup(tmpfd));
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, AGENT_DIR_PREFIX, strlen(AGENT_DIR_PREFIX)) &&
		    (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN))
			leftover_remove(tmpfd, de->d_name);
	if (d)
		closedir(d);
	close(tmpfd);
}

static struct {
	char *path;
	int lock_fd;
	int refs;
} shared = { NULL, -1, 0 };

const char *agent_dir_acquire(struct strbuf *why)
{
	if (shared.refs) {
		shared.refs++;
		return shared.path;
	}
	const char *tmp = getenv("TMPDIR");
	tmp = tmp && *tmp ? tmp : "/tmp";
	leftovers_clean(tmp);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/" AGENT_DIR_PREFIX "XXXXXX", tmp);
	if (!mkdtemp(sb.buf)) {
		strbuf_addf(why, "cannot create a directory for the agents' records in %s: %s", tmp,
			    strerror(errno));
		strbuf_release(&sb);
		return NULL;
	}
	shared.path = strbuf_detach(&sb);
	shared.lock_fd = open(shared.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (shared.lock_fd >= 0)
		flock(shared.lock_fd, LOCK_EX);
	shared.refs = 1;
	return shared.path;
}

void agent_dir_release(void)
{
	if (!shared.refs || --shared.refs)
		return;
	int fd = open(shared.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	rmdir(shared.path);
	if (shared.lock_fd >= 0)
		close(shared.lock_fd);
	free(shared.path);
	shared.path = NULL;
	shared.lock_fd = -1;
}
