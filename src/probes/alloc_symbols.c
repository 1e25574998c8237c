/* alloc_symbols: return addresses to function/file/line with elfutils, for
 * the alloc probe (see alloc_symbols.h). */
#include "alloc_symbols.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct sym {
	uint64_t addr, size;
	const char *name; /* owned by libdwfl */
	int rank;	  /* among aliases at one address, the highest is shown */
};

/* One ELF file, reported at its link-time addresses (bias 0). */
struct sym_file {
	char *path;
	Dwfl *dwfl;	  /* NULL: could not be opened */
	Dwfl_Module *mod;
	struct sym *syms; /* functions, sorted by addr */
	size_t nsyms;
};

struct resolved {
	char *function, *file;
	int line;
};

struct alloc_symbolizer {
	struct sym_file *files;
	size_t nfiles, afiles;
	struct hashmap file_map; /* path -> files index */
	struct hashmap cache;	 /* files index + offset -> res index */
	struct resolved *res;
	size_t nres, ares;
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct alloc_symbolizer *alloc_symbolizer_new(void)
{
	struct alloc_symbolizer *sy = xcalloc(1, sizeof(*sy));
	sy->file_map = (struct hashmap)HASHMAP_INIT;
	sy->cache = (struct hashmap)HASHMAP_INIT;
	return sy;
}

void alloc_symbolizer_free(struct alloc_symbolizer *sy)
{
	if (!sy)
		return;
	for (size_t i = 0; i < sy->nfiles; i++) {
		free(sy->files[i].syms);
		if (sy->files[i].dwfl)
			dwfl_end(sy->files[i].dwfl);
		free(sy->files[i].path);
	}
	for (size_t i = 0; i < sy->nres; i++) {
		free(sy->res[i].function);
		free(sy->res[i].file);
	}
	free(sy->files);
	free(sy->res);
	hashmap_release(&sy->file_map);
	hashmap_release(&sy->cache);
	free(sy);
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank - y->rank;
}

static void file_load(struct sym_file *f)
{
	f->dwfl = dwfl_begin(&offline_callbacks);
	if (!f->dwfl)
		return;
	dwfl_report_begin(f->dwfl);
	const char *base = strrchr(f->path, '/');
	f->mod = dwfl_report_elf(f->dwfl, base ? base + 1 : f->path, f->path, -1, 0, true);
	dwfl_report_end(f->dwfl, NULL, NULL);
	if (!f->mod)
		return;
	/* One sorted table instead of libdwfl's linear search per lookup. */
	int n = dwfl_module_getsymtab(f->mod);
	if (n <= 0)
		return;
	f->syms = xcalloc((size_t)n, sizeof(*f->syms));
	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(f->mod, i, &s, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(s.st_info);
		if (!name || !*name || !addr || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		/* Prefer the public name (memcpy) to glibc's internal aliases (__GI_memcpy). */
		int bind = GELF_ST_BIND(s.st_info);
		int rank = (bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0) -
			   (!strncmp(name, "__GI_", 5) || !strncmp(name, "__", 2) ? 4 : 0);
		f->syms[f->nsyms++] = (struct sym){ addr, s.st_size, name, rank };
	}
	qsort(f->syms, f->nsyms, sizeof(*f->syms), sym_cmp);
}

static struct sym_file *file_get(struct alloc_symbolizer *sy, const char *path, size_t *index)
{
	int64_t *v = hashmap_get(&sy->file_map, path, strlen(path));
	if (v) {
		*index = (size_t)*v;
		return &sy->files[*v];
	}
	if (sy->nfiles == sy->afiles) {
		sy->afiles = sy->afiles ? sy->afiles * 2 : 32;
		sy->files = xrealloc(sy->files, sy->afiles * sizeof(*sy->files));
	}
	struct sym_file *f = &sy->files[sy->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(path);
	file_load(f);
	hashmap_put(&sy->file_map, path, strlen(path), (int64_t)sy->nfiles);
	*index = sy->nfiles++;
	return f;
}

static const struct sym *sym_find(const struct sym_file *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The nearest symbol at or below addr that covers it (size 0: assume it does). */
	for (size_t i = lo; i-- > 0 && lo - i <= 4;) {
		const struct sym *s = &f->syms[i];
		if (!s->size || addr < s->addr + s->size)
			return s;
	}
	return NULL;
}

/* C++ names read better demangled; libstdc++'s demangler is borrowed at run
 * time when it is installed (sonde itself is C and does not link it). */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn demangler(void)
{
	static int tried;
	static demangle_fn fn;
	if (!tried) {
		tried = 1;
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (h)
			*(void **)&fn = dlsym(h, "__cxa_demangle");
	}
	return fn;
}

static char *symbol_name(const char *name)
{
	/* "memcpy@@GLIBC_2.14": the version is noise in a report. */
	const char *at = strchr(name, '@');
	size_t len = at && at != name ? (size_t)(at - name) : strlen(name);
	char *plain = xmalloc(len + 1);
	memcpy(plain, name, len);
	plain[len] = '\0';
	demangle_fn fn = len > 2 && name[0] == '_' && name[1] == 'Z' ? demangler() : NULL;
	if (fn) {
		int status = -1;
		char *d = fn(plain, NULL, NULL, &status);
		if (d && !status) {
			free(plain);
			return d;
		}
		free(d);
	}
	return plain;
}

static const struct alloc_module *module_of(const struct alloc_module *mods, size_t n,
					    uint64_t pc)
{
	for (size_t i = n; i-- > 0;)
		if (pc >= mods[i].start && pc < mods[i].end)
			return &mods[i];
	return NULL;
}

void alloc_symbolize(struct alloc_symbolizer *sy, const struct alloc_module *mods, size_t n,
		     uint64_t ip, struct alloc_symbol *out)
{
	uint64_t pc = ip ? ip - 1 : 0;
	const struct alloc_module *m = module_of(mods, n, pc);
	memset(out, 0, sizeof(*out));
	out->module = m ? m->path : NULL;
	size_t fi = SIZE_MAX;
	struct sym_file *f = m ? file_get(sy, m->path, &fi) : NULL;
	uint64_t off = m ? pc - m->bias : pc; /* the address in the file's own terms */
	uint64_t key[2] = { fi, off };
	int64_t *v = hashmap_get(&sy->cache, key, sizeof(key));
	if (!v) {
		struct resolved r = { NULL, NULL, 0 };
		const struct sym *s = f ? sym_find(f, off) : NULL;
		if (s) {
			r.function = symbol_name(s->name);
		} else {
			struct strbuf sb = STRBUF_INIT;
			const char *base = m ? strrchr(m->path, '/') : NULL;
			strbuf_addf(&sb, "%s+0x%" PRIx64, m ? (base ? base + 1 : m->path) : "[unknown]",
				    off);
			r.function = strbuf_detach(&sb);
		}
		Dwfl_Line *line = f && f->mod ? dwfl_module_getsrc(f->mod, off) : NULL;
		int lineno = 0;
		const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
		if (file) {
			r.file = xstrdup(file);
			r.line = lineno;
		}
		if (sy->nres == sy->ares) {
			sy->ares = sy->ares ? sy->ares * 2 : 256;
			sy->res = xrealloc(sy->res, sy->ares * sizeof(*sy->res));
		}
		sy->res[sy->nres] = r;
		v = hashmap_put(&sy->cache, key, sizeof(key), (int64_t)sy->nres++);
	}
	const struct resolved *r = &sy->res[*v];
	out->function = r->function;
	out->file = r->file;
	out->line = r->line;
}
