/* fnspec: what `--function SPEC` names, and for a native function where it
 * lies (an ELF file and the file offset of its first instruction).
 *
 * A SPEC is Python when its left part (before the last ':') ends in ".py",
 * or is a dotted module name that names no program on PATH, no file and
 * not the command's program ("package.module:Class.method"); otherwise it is native: "FILE:symbol"
 * (FILE a path, a program on PATH, or a library's file name such as
 * libc.so.6) or a bare "symbol", looked for in the program and the
 * libraries it loads.
 *
 * Contract: nothing here keeps state; resolution reads ELF files and, for an
 * attached process, /proc/PID/maps. */
#ifndef SONDE_FNSPEC_H
#define SONDE_FNSPEC_H

#include <stdint.h>
#include <sys/types.h>

struct strbuf;

enum fnspec_kind { FNSPEC_NATIVE, FNSPEC_PYTHON };

/* argv: the command being run (its program is native whatever its name),
 * or NULL. */
enum fnspec_kind fnspec_kind(const char *spec, char *const *argv);

/* A native function found. */
struct fnspec_native {
	char file[4096];      /* the ELF file holding it, as sonde opens it */
	char function[256];   /* its symbol */
	uint64_t vaddr;	      /* its link-time address */
	uint64_t file_offset; /* of its first instruction in file */
};

/* Finds native spec for the command argv (run; argv[0] resolved as execvp
 * would) or for the running process pid (attach; argv NULL): 0 with *out
 * filled, or -1 with one line in why naming what was searched and, when the
 * symbol was not found, the nearest names. */
int fnspec_resolve(const char *spec, char *const *argv, pid_t pid, struct fnspec_native *out,
		   struct strbuf *why);

#endif
