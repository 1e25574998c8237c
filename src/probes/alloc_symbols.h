/* alloc_symbols: the alloc probe's return addresses, given the modules the
 * agent reported for a process image, to function, file and line through the
 * run's one native symbolizer (symbols/symbolize.h: ELF symbols, DWARF lines
 * and inlined calls, separate debug files, C++ names demangled, a stripped
 * library's addresses grouped by function).
 *
 * One alloc_symbolizer serves every process image of a run: each ELF file is
 * opened once and each (file, address) is resolved once, so a hundred shells
 * forked by a script cost one bash. An address in code inlined into a
 * function is named by that function, at the line of the inlined call. */
#ifndef SONDE_ALLOC_SYMBOLS_H
#define SONDE_ALLOC_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct alloc_module {
	uint64_t bias;	      /* load bias */
	uint64_t start, end; /* loaded address range */
	char *path;
};

struct alloc_symbolizer;

struct alloc_symbolizer *alloc_symbolizer_new(void);
void alloc_symbolizer_free(struct alloc_symbolizer *sy);

struct alloc_symbol {
	const char *function; /* never NULL: "module+0x1f" when no symbol covers it */
	const char *file;     /* NULL when unknown */
	int line;	      /* 0 when unknown */
	const char *module;   /* the module path, or NULL */
};

/* ip is a return address (the call is at ip - 1) in an image whose modules
 * are mods[0..n) (later entries win where ranges overlap). The strings stay
 * valid until alloc_symbolizer_free(). */
void alloc_symbolize(struct alloc_symbolizer *sy, const struct alloc_module *mods, size_t n,
		     uint64_t ip, struct alloc_symbol *out);

#endif
