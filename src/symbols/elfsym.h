/* elfsym: a function of an ELF file found by its name, for probes that put a
 * breakpoint on it (uprobes), and the libraries a program will load.
 *
 * Contract:
 * - Nothing here keeps state: each call opens the file, reads it and closes it.
 * - A function is a defined STT_FUNC or STT_GNU_IFUNC symbol of .symtab, else
 *   .dynsym; its file offset is where its first instruction lies in the file
 *   (through the executable PT_LOAD that holds it), what the uprobe PMU takes.
 * - Bounded: symbol tables are read once; at most ELFSYM_NEAR names suggested. */
#ifndef SONDE_ELFSYM_H
#define SONDE_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#define ELFSYM_NEAR 3

struct strbuf;
struct Elf; /* libelf's Elf */

/* The file offset of [vaddr, vaddr + len) of an open ELF, through the
 * executable PT_LOAD that holds all of it: 0, or -1 when none does. */
int elfsym_exec_offset(struct Elf *elf, uint64_t vaddr, uint64_t len, uint64_t *off);

struct elfsym {
	uint64_t vaddr;	      /* the symbol's value (link-time address) */
	uint64_t size;	      /* bytes, 0 when the table does not say */
	uint64_t file_offset; /* of the first instruction in the file */
};

/* Finds the function called name in path. 0 with *out filled; -ENOENT when
 * the file has no such function (then up to ELFSYM_NEAR defined function
 * names that contain name, else differ least from it, are appended to near,
 * ", "-separated, when near is not NULL); -ENOEXEC when path is not ELF;
 * -errno when it cannot be read. */
int elfsym_find(const char *path, const char *name, struct elfsym *out, struct strbuf *near);

/* Where the link-time address vaddr of path lies in the file (through the
 * executable PT_LOAD holding it): 0 with *file_offset set, or -1. */
int elfsym_vaddr_offset(const char *path, uint64_t vaddr, uint64_t *file_offset);

/* Calls each(arg, file) for every library path needs (DT_NEEDED), found as
 * the dynamic loader would without a cache: RPATH/RUNPATH ($ORIGIN
 * expanded), then /lib and /usr/lib (and their x86_64-linux-gnu, 64
 * variants), /usr/local/lib; then the same for each library's own needs,
 * each file once, at most 256. Returns the number of files, or -errno when
 * path itself cannot be read. */
int elfsym_needed(const char *path, void (*each)(void *arg, const char *file), void *arg);

#endif
