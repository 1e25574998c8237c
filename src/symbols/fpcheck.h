/* fpcheck: does an x86_64 ELF program keep frame pointers? Used by
 * `--call-graph auto` to pick frame-pointer or DWARF unwinding.
 *
 * The rule: look at up to FPCHECK_SAMPLE function symbols (.symtab, else
 * .dynsym) of at least 16 bytes; a function keeps a frame pointer when it
 * starts with `push %rbp; mov %rsp,%rbp` (after an optional endbr64). The
 * program keeps frame pointers when most sampled functions do, and always
 * when its `main` does. */
#ifndef SONDE_FPCHECK_H
#define SONDE_FPCHECK_H

#include <stddef.h>

#define FPCHECK_SAMPLE 64

/* 1: frame pointers, 0: not (or unknown: no symbols), -errno: cannot read. */
int fpcheck_elf(const char *path);

/* Finds name as execvp would: a path with a '/' when it is executable, else
 * the first executable regular file of that name on PATH. 0 with the path in
 * out, or -errno. */
int fpcheck_search_path(const char *name, char *out, size_t cap);

/* Resolves argv0 as execvp would (PATH search), following one "#!" line to its
 * interpreter (and `/usr/bin/env NAME`). Writes the ELF path into out.
 * Returns 0 or -errno. */
int fpcheck_resolve_program(const char *argv0, char *out, size_t cap);

#endif
