/* srcfile: reading and replacing a user's source file, for `sonde
 * instrument` and `sonde clean`, the only commands that change the user's
 * files.
 *
 * A file named through a symbolic link is edited only when the link
 * resolves inside the current directory's tree (a link in a project to one
 * of its own files); one pointing elsewhere (a site-packages, another
 * user's tree) is refused, never written through. Other paths are the
 * user's to name, wherever they are. The file must be a regular file of at
 * most SRCFILE_MAX_BYTES with one name (replacing it would split hard
 * links), and writable: a file without any write permission bit is refused
 * even for root, who could write it regardless.
 *
 * Replacing writes a temporary file beside the original and renames it
 * over it (atomic: a reader sees the old bytes or the new), with the
 * original's permission bits and, where sonde may set them, its owner and
 * group. A file that changed between the read and the replace is left as it
 * is. */
#ifndef SONDE_SRCFILE_H
#define SONDE_SRCFILE_H

#include "../util/strbuf.h"

#include <sys/stat.h>

#define SRCFILE_MAX_BYTES (16 << 20)

struct srcfile {
	char *real;	    /* the file itself, absolute (links resolved); owned */
	struct strbuf text; /* its bytes */
	struct stat st;	    /* as read, or as last replaced */
};

#define SRCFILE_INIT { NULL, STRBUF_INIT, { 0 } }

/* Reads path into f (SRCFILE_INIT). 0, or -1 with a one-line reason naming
 * path in err (f then empty). -ENOENT is returned, with the reason, for a
 * path that does not exist. */
int srcfile_read(const char *path, struct srcfile *f, struct strbuf *err);

/* Whether f may be replaced: 0, or -1 with the reason in err (not writable,
 * several hard links). */
int srcfile_check_writable(const struct srcfile *f, const char *path, struct strbuf *err);

/* Replaces the file's bytes with data[0..len) and updates f->st. 0, or -1
 * with the reason in err (the file unchanged). */
int srcfile_replace(struct srcfile *f, const char *path, const char *data, size_t len,
		    struct strbuf *err);

void srcfile_release(struct srcfile *f);

#endif
