/* alloc_symbols: a small native symbolizer for the alloc probe: return
 * addresses of one process image, given the modules the agent reported, to
 * function, file and line through elfutils' libdwfl (ELF symbols, DWARF lines,
 * separate debug files).
 *
 * Stopgap until a shared src/symbols/ symbolizer exists; replace the calls in
 * alloc.c with that one when it lands. */
#ifndef SONDE_ALLOC_SYMBOLS_H
#define SONDE_ALLOC_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct strbuf;

struct alloc_module {
	uint64_t bias;	      /* load bias */
	uint64_t start, end; /* loaded address range */
	char *path;
};

struct alloc_symbolizer;

/* Copies nothing: mods must outlive the symbolizer. Never NULL. */
struct alloc_symbolizer *alloc_symbolizer_new(const struct alloc_module *mods, size_t n);
void alloc_symbolizer_free(struct alloc_symbolizer *sy);

struct alloc_symbol {
	const char *function; /* in fn_buf; "module+0x1f" when no symbol covers it */
	const char *file;     /* NULL when unknown; in file_buf */
	int line;
	const char *module; /* the module path, or NULL */
};

/* ip is a return address (the call is at ip - 1). Fills out; its strings stay
 * valid until the next call with the same buffers. */
void alloc_symbolize(struct alloc_symbolizer *sy, uint64_t ip, struct alloc_symbol *out,
		     struct strbuf *fn_buf, struct strbuf *file_buf);

#endif
