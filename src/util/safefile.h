/* safefile: creating and replacing files in a directory that someone else may
 * be able to write to, without ever writing through a link planted there.
 *
 * Every name is resolved relative to an open directory (openat) and never
 * followed when it is a symbolic link (O_NOFOLLOW): a planted link makes the
 * call fail (-ELOOP) instead of writing where it points. Temporaries get a
 * random name and O_EXCL, so nothing planted in advance is ever reused.
 * Modes are passed to the kernel as given: the process umask still applies. */
#ifndef SONDE_SAFEFILE_H
#define SONDE_SAFEFILE_H

#include <sys/types.h>

struct strbuf;

/* Modes sonde creates its outputs with: private by default; --share lets the
 * umask decide (0666/0777 minus the umask). */
#define SAFEFILE_MODE_PRIVATE 0600
#define SAFEFILE_MODE_SHARED 0666
#define SAFEFILE_DIR_MODE(file_mode) ((mode_t)((file_mode) | (((file_mode) & 0444) >> 2)))

/* Opens a directory the user named (links in its path are the user's own).
 * Returns an O_CLOEXEC descriptor or -errno (-ENOTDIR for a non-directory). */
int safe_dir_open(const char *path);

/* Creates ".<name>.XXXXXX" (random) in dirfd with O_EXCL|O_NOFOLLOW, open for
 * writing. Fills tmp_name (reset first) with the name made. Returns the fd, or
 * -errno. */
int safe_tmp_create(int dirfd, const char *name, mode_t mode, struct strbuf *tmp_name);

/* Renames tmp_name to name inside dirfd: whatever was at name (a file, a link)
 * is replaced, never written through. On failure tmp_name is removed. Returns 0
 * or -errno. */
int safe_tmp_commit(int dirfd, const char *tmp_name, const char *name);

/* Creates name in dirfd, which must not exist (O_EXCL|O_NOFOLLOW), open for
 * reading and writing. Returns the fd or -errno (-EEXIST when anything,
 * a dangling link included, is there). */
int safe_create_excl(int dirfd, const char *name, mode_t mode);

/* Points the symbolic link dirfd/name at target, replacing an earlier link
 * atomically (through a random temporary name). Returns 0 or -errno; refuses
 * (-EEXIST) to replace anything that is not a symbolic link. */
int safe_symlink_replace(int dirfd, const char *target, const char *name);

/* Fills buf with n random bytes (getrandom, falling back to time and pid). */
void safe_random(void *buf, size_t n);

#endif
