/* fileio: small, bounded file reads and writes; reads refuse what is not a
 * regular file, so a FIFO planted where a file is expected never blocks. */
#include "fileio.h"
#include "strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_open_regular(const char *path, int flags)
{
	/* O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -EFTYPE_SONDE : 0;
	if (err) {
		close(fd);
		return err;
	}
	/* A regular file never blocks; plain reads from here on. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

ssize_t file_read_small(const char *path, char *buf, size_t cap)
{
	if (!cap)
		return -EINVAL;
	int fd = file_open_regular(path, 0);
	if (fd < 0) {
		buf[0] = '\0';
		return fd;
	}
	size_t got = 0;
	ssize_t ret;
	while (got < cap - 1) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	ret = (ssize_t)got;
out:
	buf[got] = '\0';
	close(fd);
	return ret;
}

ssize_t file_read_strbuf(const char *path, struct strbuf *sb, size_t max_bytes)
{
	int fd = file_open_regular(path, 0);
	if (fd < 0)
		return fd;
	ssize_t ret = file_read_fd_strbuf(fd, sb, max_bytes);
	close(fd);
	return ret;
}

ssize_t file_read_fd_strbuf(int fd, struct strbuf *sb, size_t max_bytes)
{
	size_t got = 0;
	ssize_t ret;
	char chunk[8192];
	while (got < max_bytes) {
		size_t want = max_bytes - got < sizeof(chunk) ? max_bytes - got : sizeof(chunk);
		ssize_t n = read(fd, chunk, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (n == 0)
			break;
		strbuf_add(sb, chunk, (size_t)n);
		got += (size_t)n;
	}
	ret = (ssize_t)got;
out:
	return ret;
}

int file_write_all(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	const char *p = data;
	int ret = 0;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		p += n;
		len -= (size_t)n;
	}
out:
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

int dir_create_parents(const char *path, mode_t mode)
{
	if (!*path)
		return -ENOENT; /* as mkdir(""); the walk below starts past the first byte */
	struct strbuf sb = STRBUF_INIT;
	int ret = 0;
	strbuf_addstr(&sb, path);
	for (char *p = sb.buf + 1;; p++) {
		char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(sb.buf, mode) < 0 && errno != EEXIST) {
			ret = -errno;
			goto out;
		}
		struct stat st;
		if (stat(sb.buf, &st) < 0) {
			ret = -errno;
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			ret = -ENOTDIR;
			goto out;
		}
		*p = c;
		if (!c)
			break;
	}
out:
	strbuf_release(&sb);
	return ret;
}

int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int empty = 1;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	}
	closedir(d);
	return empty;
}
