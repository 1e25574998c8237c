/* fileio: bounded reads of small files (mostly /proc) and directory helpers.
 * Nothing here grows without a cap: files fed by the outside world are read
 * into caller-provided buffers or up to an explicit limit. */
#ifndef SONDE_FILEIO_H
#define SONDE_FILEIO_H

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

struct strbuf;

/* What the readers below return for a path that exists but is not a regular
 * file (a FIFO, a device, a directory): it is refused, never opened blocking. */
#define EFTYPE_SONDE EMEDIUMTYPE

/* Opens path for reading (flags may add O_NOFOLLOW, or O_RDWR to write too)
 * without blocking, and only when it is a regular file. Returns an O_CLOEXEC fd or -errno (-EFTYPE_SONDE
 * for anything else: a FIFO, a device, a directory). */
int file_open_regular(const char *path, int flags);

/* Appends up to max_bytes read from fd to sb. Returns bytes read, or -errno. */
ssize_t file_read_fd_strbuf(int fd, struct strbuf *sb, size_t max_bytes);

/* Reads up to cap-1 bytes of path (a regular file) into buf and NUL-terminates it.
 * Returns the number of bytes read, or -errno. */
ssize_t file_read_small(const char *path, char *buf, size_t cap);

/* Appends up to max_bytes of path to sb. Returns bytes read, or -errno. */
ssize_t file_read_strbuf(const char *path, struct strbuf *sb, size_t max_bytes);

/* Writes len bytes to path (created 0600, truncated; a link at path is refused,
 * -ELOOP). Returns 0 or -errno. */
int file_write_all(const char *path, const void *data, size_t len);

/* mkdir -p. Returns 0 or -errno; an existing non-directory is -ENOTDIR. */
int dir_create_parents(const char *path, mode_t mode);

/* 1 when the directory holds no entries but . and .., 0 when it does, -errno on error. */
int dir_is_empty(const char *path);

#endif
