/* symbolize: turns (object file, file offset) into function, file, line and the
 * inlined calls at that address, from ELF symbol tables and DWARF (libdw), with
 * separate debug info found by build-id (/usr/lib/debug/.build-id/xx/...debug)
 * or .gnu_debuglink; kernel addresses from /proc/kallsyms; JIT code from
 * /tmp/perf-PID.map.
 *
 * Contract:
 * - Object files are interned once (symbolizer_module) while the process that
 *   maps them is alive: the file is opened then, through /proc/PID/root when it
 *   is readable (containers), so it can still be read after the process exits.
 *   Debug info is loaded lazily on the first lookup.
 * - A lookup always yields at least one frame: what is not known becomes
 *   "name+0xoffset" (never dropped).
 * - Strings handed out stay valid until the next lookup call on the same
 *   symbolizer (copy them, or intern them right away).
 * - Bounded: at most SYMBOLIZER_MAX_MODULES files, SYMBOLIZER_MAX_INLINE
 *   inlined frames per address. */
#ifndef SONDE_SYMBOLIZE_H
#define SONDE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SYMBOLIZER_MAX_MODULES 4096
#define SYMBOLIZER_MAX_INLINE 16

struct symbolizer;
struct strbuf;

struct sym_frame {
	const char *function;
	const char *file; /* NULL when unknown */
	int line;	  /* 0 when unknown */
	int inlined;	  /* 1: inlined into the next (outer) frame */
};

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);

/* Interns the object file `path` as process pid sees it (pid 0: sonde's own
 * view). Returns its id (>= 0), or -1 past SYMBOLIZER_MAX_MODULES. Files that
 * cannot be opened still get an id: their frames read "name+0xoffset". */
int symbolizer_module(struct symbolizer *s, const char *path, pid_t pid);
/* The same for a file already open (fd, which the symbolizer takes; < 0:
 * unreadable) named path: "[vdso]" frames of a given image in tests. */
int symbolizer_module_fd(struct symbolizer *s, const char *path, int fd);
/* The path given to symbolizer_module. */
const char *symbolizer_module_path(const struct symbolizer *s, int id);

/* Frames for file_offset in module id, innermost first: up to max (>= 1).
 * Returns the number written (>= 1). */
size_t symbolizer_lookup(struct symbolizer *s, int id, uint64_t file_offset,
			 struct sym_frame *out, size_t max);
/* The same for an address in the file's own (link-time) terms, vaddr: a
 * loaded address less the module's load bias. */
size_t symbolizer_lookup_vaddr(struct symbolizer *s, int id, uint64_t vaddr,
			       struct sym_frame *out, size_t max);


/* A kernel address: function from /proc/kallsyms ("[kernel]+0x..." when it is
 * not readable). *module is "[kernel.kallsyms]" or "[module_name]". */
void symbolizer_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *out,
		       const char **module);

/* An address in anonymous memory of pid: a JIT's /tmp/perf-PID.map entry, or
 * "[anon]+0xaddr". The map file is read on the first call for each pid (through
 * /proc/PID/root while the process lives). *module is the map file's path or "[anon]". */
void symbolizer_jit(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *out,
		    const char **module);
/* Reads pid's perf map now (call before the process exits; a later call reloads). */
void symbolizer_jit_load(struct symbolizer *s, pid_t pid);
/* Only the reading: pid's perf map text appended to out (0), or -errno. It
 * touches no symbolizer, so any thread may call it; symbolizer_jit_parse()
 * takes the text. Needs the process not reaped yet (its owner is checked). */
int symbolizer_jit_read(pid_t pid, struct strbuf *out);
/* Takes text (len bytes, "START SIZE name" lines in hex, as a JIT writes its
 * perf map) as pid's map, replacing any read before. Malformed lines are
 * skipped. symbolizer_jit_load() reads the file through it. */
void symbolizer_jit_parse(struct symbolizer *s, pid_t pid, const char *text, size_t len);

#endif
