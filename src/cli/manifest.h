/* manifest: what `sonde instrument` changed in the user's files, kept in
 * MANIFEST_PATH (in the current directory, beside the run directories) so
 * that `sonde clean` takes exactly that out again and each `sonde run`
 * started there lists it in its report's Part B (the changelog).
 *
 * One entry per file: the file itself (absolute) and as the user named it,
 * the SHA-256 of its bytes before and after, the functions instrumented
 * with their region names, and every inserted line (number and bytes). The
 * file is JSON (docs/regions.md shows it), private (0600), replaced
 * atomically; it is read only when it is the user's own regular file (not
 * a link, not another user's: a planted manifest must not steer `sonde
 * clean`), and removed when its last entry goes. */
#ifndef SONDE_CLI_MANIFEST_H
#define SONDE_CLI_MANIFEST_H

#include "../util/pyedit.h"
#include "../util/sha256.h"

#include <stddef.h>

struct recorder;
struct strbuf;

#define MANIFEST_DIR "profile_output"
#define MANIFEST_NAME "instrument.json"
#define MANIFEST_PATH MANIFEST_DIR "/" MANIFEST_NAME

struct manifest_entry {
	char *file; /* absolute, links resolved; owned */
	char *path; /* as named on the command line; owned */
	char sha256_before[SHA256_HEX_LEN + 1], sha256_after[SHA256_HEX_LEN + 1];
	struct pyedit_target *targets; /* qualname and region owned */
	size_t ntargets;
	struct pyedit_lines lines; /* inserted, numbered in the file after */
};

struct manifest {
	struct manifest_entry *v;
	size_t n, cap;
};

#define MANIFEST_INIT { NULL, 0, 0 }

/* Loads MANIFEST_PATH into m (MANIFEST_INIT); none there leaves m empty. 0,
 * or -1 with a one-line reason in err. */
int manifest_load(struct manifest *m, struct strbuf *err);

/* Writes m to MANIFEST_PATH (creating MANIFEST_DIR), or removes the file
 * when m is empty. 0, or -1 with a one-line reason in err. */
int manifest_save(const struct manifest *m, struct strbuf *err);

/* The entry for file (absolute), or NULL. */
struct manifest_entry *manifest_find(struct manifest *m, const char *file);

/* A new empty entry, owned by m (a pointer valid until the next add). */
struct manifest_entry *manifest_add(struct manifest *m, const char *file, const char *path);

/* Adds a target to e unless e has its qualname already; 1 when added. */
int manifest_target_add(struct manifest_entry *e, const char *qualname, const char *region);

/* Releases entry i's contents and closes the gap. */
void manifest_drop(struct manifest *m, size_t i);

void manifest_release(struct manifest *m);

/* "9-12, 20": e's inserted lines as ranges, appended to out. */
void manifest_lines_text(const struct manifest_entry *e, struct strbuf *out);

/* One changelog row (Part B) per file MANIFEST_PATH lists, for a run
 * started in this directory; nothing when there is none. */
void manifest_changelog(struct recorder *rec);

#endif
