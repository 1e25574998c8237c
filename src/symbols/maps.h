/* maps: the executable mappings of one process, as /proc/PID/maps lists them and
 * as PERF_RECORD_MMAP2 reports them later (dlopen, JIT), so an address sampled in
 * that process can be turned into (object file, file offset).
 *
 * Contract:
 * - A struct maps owns its entries and their paths; maps_release() frees them.
 * - Entries are sorted by start and never overlap: maps_insert() trims or drops
 *   what a new mapping covers, as mmap(MAP_FIXED) does in the kernel.
 * - Only executable mappings are kept (samples land only there); paths are as the
 *   process sees them ("/usr/lib/x86_64-linux-gnu/libc.so.6", "[vdso]"), or ""
 *   for anonymous memory (JIT code).
 * - Parsing is bounded: at most MAPS_MAX entries, longer paths are cut. */
#ifndef SONDE_MAPS_H
#define SONDE_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAPS_MAX 65536
#define MAPS_PATH_MAX 4096

struct map_entry {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t pgoff;	     /* file offset of start */
	char *path;	     /* owned; "" for anonymous memory */
	int tag;	     /* the caller's: -1 when inserted, kept when split */
};

struct maps {
	struct map_entry *v;
	size_t n, alloc;
};

#define MAPS_INIT { NULL, 0, 0 }

void maps_release(struct maps *m);
/* Drops every entry (an exec replaced the address space). */
void maps_clear(struct maps *m);

/* Adds one executable mapping, replacing whatever it overlaps. */
void maps_insert(struct maps *m, uint64_t start, uint64_t end, uint64_t pgoff, const char *path);

/* Parses /proc/PID/maps text (len bytes, need not be NUL-terminated) and
 * inserts its executable lines. Returns the number of lines inserted (a line
 * overlapping an earlier one replaces it, so m->n may be less); malformed lines
 * are skipped. */
size_t maps_parse(struct maps *m, const char *text, size_t len);

/* Reads /proc/PID/maps. Returns the number of executable mappings, or -errno. */
ssize_t maps_read_pid(struct maps *m, pid_t pid);

/* The mapping holding addr, or NULL. Valid until the next insert or clear. */
const struct map_entry *maps_find(const struct maps *m, uint64_t addr);

#endif
