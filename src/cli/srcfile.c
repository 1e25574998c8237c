/* srcfile: a user's source file, read and replaced safely (srcfile.h). */
#include "srcfile.h"
#include "../util/fileio.h"
#include "../util/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether path lies in the tree under dir (both absolute, resolved). */
static int path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return 1;
	return !strncmp(path, dir, n) && path[n] == '/';
}

int srcfile_read(const char *path, struct srcfile *f, struct strbuf *err)
{
	struct stat lst;
	char *cwd = NULL;
	int fd = -1, ret = -1;
	if (lstat(path, &lst)) {
		ret = errno == ENOENT ? -ENOENT : -1;
		strbuf_addf(err, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	f->real = realpath(path, NULL);
	if (!f->real) {
		strbuf_addf(err, "cannot resolve %s: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISLNK(lst.st_mode)) {
		cwd = realpath(".", NULL);
		if (!cwd || !path_under(f->real, cwd)) {
			strbuf_addf(err,
				    "%s is a symbolic link to %s, outside the current directory: "
				    "sonde does not write through it (name the file itself)",
				    path, f->real);
			goto out;
		}
	}
	fd = file_open_regular(f->real, O_NOFOLLOW);
	if (fd < 0) {
		strbuf_addf(err, "cannot read %s: %s", path,
			    fd == -EFTYPE_SONDE ? "not a regular file" : strerror(-fd));
		goto out;
	}
	if (fstat(fd, &f->st)) {
		strbuf_addf(err, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	ssize_t n = file_read_fd_strbuf(fd, &f->text, SRCFILE_MAX_BYTES + 1);
	if (n < 0 || n > SRCFILE_MAX_BYTES) {
		strbuf_addf(err, "cannot read %s: %s", path,
			    n < 0 ? strerror((int)-n) : "larger than 16 MiB, not a source file");
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(cwd);
	if (ret)
		srcfile_release(f);
	return ret;
}

int srcfile_check_writable(const struct srcfile *f, const char *path, struct strbuf *err)
{
	if (!(f->st.st_mode & 0222) || access(f->real, W_OK)) {
		strbuf_addf(err, "%s is not writable (mode %04o): nothing changed", path,
			    (unsigned)(f->st.st_mode & 07777));
		return -1;
	}
	if (f->st.st_nlink > 1) {
		strbuf_addf(err,
			    "%s has %lu hard links: sonde does not edit it (replacing it would "
			    "split them)",
			    path, (unsigned long)f->st.st_nlink);
		return -1;
	}
	return 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int srcfile_replace(struct srcfile *f, const char *path, const char *data, size_t len,
		    struct strbuf *err)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct strbuf tmp = STRBUF_INIT;
	struct stat now;
	int dirfd = -1, fd = -1, r, ret = -1;
	snprintf(dir, sizeof(dir), "%s", f->real);
	snprintf(base, sizeof(base), "%s", f->real);
	dirfd = safe_dir_open(dirname(dir));
	if (dirfd < 0) {
		strbuf_addf(err, "cannot write %s: %s", path, strerror(-dirfd));
		goto out;
	}
	const char *name = basename(base);
	if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) || !same_file(&now, &f->st)) {
		strbuf_addf(err, "%s changed while sonde was editing it: left as it is", path);
		goto out;
	}
	fd = safe_tmp_create(dirfd, name, 0600, &tmp);
	if (fd < 0) {
		strbuf_addf(err, "cannot write beside %s: %s", path, strerror(-fd));
		goto out;
	}
	if ((now.st_uid != geteuid() || now.st_gid != getegid()) &&
	    fchown(fd, now.st_uid, now.st_gid)) {
		/* Not ours to give away: the file keeps sonde's owner. */
	}
	if ((r = write_all(fd, data, len)) || (r = fchmod(fd, now.st_mode & 07777) ? -errno : 0) ||
	    (r = fsync(fd) ? -errno : 0)) {
		strbuf_addf(err, "cannot write %s: %s", path, strerror(-r));
		unlinkat(dirfd, tmp.buf, 0);
		goto out;
	}
	if ((r = safe_tmp_commit(dirfd, tmp.buf, name))) {
		strbuf_addf(err, "cannot replace %s: %s", path, strerror(-r));
		goto out;
	}
	if (fstat(fd, &f->st))
		f->st = now;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	strbuf_release(&tmp);
	return ret;
}

void srcfile_release(struct srcfile *f)
{
	free(f->real);
	strbuf_release(&f->text);
	*f = (struct srcfile)SRCFILE_INIT;
}
