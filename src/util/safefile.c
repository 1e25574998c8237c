/* safefile: openat-based creation and atomic replacement that never follows a
 * link sonde did not make. */
#include "safefile.h"
#include "strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SAFEFILE_TRIES 64

void safe_random(void *buf, size_t n)
{
	unsigned char *p = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, GRND_NONBLOCK);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got == n)
		return;
	/* No entropy yet (early boot): unpredictable enough with O_EXCL behind it. */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned long long x = (unsigned long long)ts.tv_nsec * 6364136223846793005ULL ^
			       (unsigned long long)getpid() << 32 ^ (unsigned long long)ts.tv_sec;
	for (; got < n; got++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		p[got] = (unsigned char)(x >> 56);
	}
}

static void random_name(struct strbuf *out, const char *name)
{
	static const char alphabet[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char r[8];
	safe_random(r, sizeof(r));
	strbuf_reset(out);
	strbuf_addf(out, ".%s.", name);
	for (size_t i = 0; i < sizeof(r); i++)
		strbuf_addch(out, alphabet[r[i] % (sizeof(alphabet) - 1)]);
}

int safe_dir_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

int safe_tmp_create(int dirfd, const char *name, mode_t mode, struct strbuf *tmp_name)
{
	for (int i = 0; i < SAFEFILE_TRIES; i++) {
		random_name(tmp_name, name);
		int fd = openat(dirfd, tmp_name->buf,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int safe_tmp_commit(int dirfd, const char *tmp_name, const char *name)
{
	if (renameat(dirfd, tmp_name, dirfd, name) == 0)
		return 0;
	int err = -errno;
	unlinkat(dirfd, tmp_name, 0);
	return err;
}

int safe_create_excl(int dirfd, const char *name, mode_t mode)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	return fd >= 0 ? fd : -errno;
}

int safe_symlink_replace(int dirfd, const char *target, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode))
		return -EEXIST;
	struct strbuf tmp = STRBUF_INIT;
	int ret = -EEXIST;
	for (int i = 0; i < SAFEFILE_TRIES; i++) {
		random_name(&tmp, name);
		if (symlinkat(target, dirfd, tmp.buf) == 0) {
			ret = safe_tmp_commit(dirfd, tmp.buf, name);
			goto out;
		}
		if (errno != EEXIST) {
			ret = -errno;
			goto out;
		}
	}
out:
	strbuf_release(&tmp);
	return ret;
}
