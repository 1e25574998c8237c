/* alloc_symbols: return addresses to function/file/line through the shared
 * symbolizer, for the alloc probe (see alloc_symbols.h). */
#include "alloc_symbols.h"
#include "../symbols/symbolize.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct resolved {
	char *function, *file;
	int line;
};

struct alloc_symbolizer {
	struct symbolizer *sym;
	struct hashmap module_ids; /* path -> symbolizer module id */
	struct hashmap cache;	   /* module id + address -> res index */
	struct resolved *res;
	size_t nres, ares;
};

struct alloc_symbolizer *alloc_symbolizer_new(void)
{
	struct alloc_symbolizer *sy = xcalloc(1, sizeof(*sy));
	sy->sym = symbolizer_new();
	sy->module_ids = (struct hashmap)HASHMAP_INIT;
	sy->cache = (struct hashmap)HASHMAP_INIT;
	return sy;
}

void alloc_symbolizer_free(struct alloc_symbolizer *sy)
{
	if (!sy)
		return;
	for (size_t i = 0; i < sy->nres; i++) {
		free(sy->res[i].function);
		free(sy->res[i].file);
	}
	free(sy->res);
	symbolizer_free(sy->sym);
	hashmap_release(&sy->module_ids);
	hashmap_release(&sy->cache);
	free(sy);
}

static const struct alloc_module *module_of(const struct alloc_module *mods, size_t n, uint64_t pc)
{
	for (size_t i = n; i-- > 0;)
		if (pc >= mods[i].start && pc < mods[i].end)
			return &mods[i];
	return NULL;
}

/* The symbolizer's id of the file at path (-1: none, past its limit). */
static int64_t module_id(struct alloc_symbolizer *sy, const char *path)
{
	int64_t *v = hashmap_get(&sy->module_ids, path, strlen(path));
	if (v)
		return *v;
	int64_t id = symbolizer_module(sy->sym, path, 0);
	hashmap_put(&sy->module_ids, path, strlen(path), id);
	return id;
}

/* Resolves pc (vaddr in m's file, or pc itself without m) into r. */
static void resolve(struct alloc_symbolizer *sy, const struct alloc_module *m, int64_t id,
		    uint64_t addr, struct resolved *r)
{
	struct sym_frame f[SYMBOLIZER_MAX_INLINE + 1];
	if (!m || id < 0) {
		struct strbuf sb = STRBUF_INIT;
		const char *base = m ? strrchr(m->path, '/') : NULL;
		strbuf_addf(&sb, "%s+0x%" PRIx64, m ? (base ? base + 1 : m->path) : "[unknown]",
			    addr);
		r->function = strbuf_detach(&sb);
		return;
	}
	/* Innermost first: the last is the function the code is in, at the
	 * line of the call inlined there. */
	size_t n = symbolizer_lookup_vaddr(sy->sym, (int)id, addr, f, sizeof(f) / sizeof(f[0]));
	const struct sym_frame *outer = &f[n - 1];
	r->function = xstrdup(outer->function);
	if (outer->file) {
		r->file = xstrdup(outer->file);
		r->line = outer->line;
	}
}

void alloc_symbolize(struct alloc_symbolizer *sy, const struct alloc_module *mods, size_t n,
		     uint64_t ip, struct alloc_symbol *out)
{
	uint64_t pc = ip ? ip - 1 : 0;
	const struct alloc_module *m = module_of(mods, n, pc);
	memset(out, 0, sizeof(*out));
	out->module = m ? m->path : NULL;
	int64_t id = m ? module_id(sy, m->path) : -1;
	uint64_t addr = m ? pc - m->bias : pc; /* the address in the file's own terms */
	int64_t key[2] = {id, (int64_t)addr};
	/* Past the symbolizer's limit, files share id -1: not cached. */
	int64_t *v = id >= 0 || !m ? hashmap_get(&sy->cache, key, sizeof(key)) : NULL;
	int64_t at = -1;
	if (v) {
		at = *v;
	} else {
		struct resolved r = {NULL, NULL, 0};
		resolve(sy, m, id, addr, &r);
		if (sy->nres == sy->ares) {
			sy->ares = sy->ares ? sy->ares * 2 : 256;
			sy->res = xrealloc(sy->res, sy->ares * sizeof(*sy->res));
		}
		at = (int64_t)sy->nres;
		sy->res[sy->nres++] = r;
		if (id >= 0 || !m)
			hashmap_put(&sy->cache, key, sizeof(key), at);
	}
	const struct resolved *r = &sy->res[at];
	out->function = r->function;
	out->file = r->file;
	out->line = r->line;
}
