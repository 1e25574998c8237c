/* alloc_symbols: return addresses to function/file/line with libdwfl, for the
 * alloc probe (see alloc_symbols.h). */
#include "alloc_symbols.h"
#include "../util/strbuf.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct alloc_symbolizer {
	Dwfl *dwfl; /* NULL when libdwfl could not start: addresses stay module+offset */
	const struct alloc_module *mods;
	size_t n;
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct alloc_symbolizer *alloc_symbolizer_new(const struct alloc_module *mods, size_t n)
{
	struct alloc_symbolizer *sy = xcalloc(1, sizeof(*sy));
	sy->mods = mods;
	sy->n = n;
	sy->dwfl = dwfl_begin(&offline_callbacks);
	if (!sy->dwfl)
		return sy;
	dwfl_report_begin(sy->dwfl);
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(mods[i].path, '/');
		/* A module that fails to load (deleted, unreadable) just stays unnamed. */
		dwfl_report_elf(sy->dwfl, base ? base + 1 : mods[i].path, mods[i].path, -1,
				mods[i].bias, true);
	}
	dwfl_report_end(sy->dwfl, NULL, NULL);
	return sy;
}

void alloc_symbolizer_free(struct alloc_symbolizer *sy)
{
	if (!sy)
		return;
	if (sy->dwfl)
		dwfl_end(sy->dwfl);
	free(sy);
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

static void add_name(struct strbuf *sb, const char *name, size_t len)
{
	demangle_fn fn = len > 2 && name[0] == '_' && name[1] == 'Z' ? demangler() : NULL;
	if (fn) {
		char *mangled = xmalloc(len + 1);
		memcpy(mangled, name, len);
		mangled[len] = '\0';
		int status = -1;
		char *d = fn(mangled, NULL, NULL, &status);
		free(mangled);
		if (d && !status) {
			strbuf_addstr(sb, d);
			free(d);
			return;
		}
		free(d);
	}
	strbuf_add(sb, name, len);
}

static const struct alloc_module *module_of(const struct alloc_symbolizer *sy, uint64_t pc)
{
	/* The newest report of a range wins (a library loaded where another was). */
	for (size_t i = sy->n; i-- > 0;)
		if (pc >= sy->mods[i].start && pc < sy->mods[i].end)
			return &sy->mods[i];
	return NULL;
}

void alloc_symbolize(struct alloc_symbolizer *sy, uint64_t ip, struct alloc_symbol *out,
		     struct strbuf *fn_buf, struct strbuf *file_buf)
{
	uint64_t pc = ip ? ip - 1 : 0;
	const struct alloc_module *m = module_of(sy, pc);
	memset(out, 0, sizeof(*out));
	strbuf_reset(fn_buf);
	strbuf_reset(file_buf);
	out->module = m ? m->path : NULL;
	Dwfl_Module *dm = sy->dwfl ? dwfl_addrmodule(sy->dwfl, pc) : NULL;
	const char *name = dm ? dwfl_module_addrname(dm, pc) : NULL;
	if (name) {
		/* "memcpy@@GLIBC_2.14": the version is noise in a report. */
		const char *at = strchr(name, '@');
		add_name(fn_buf, name, at && at != name ? (size_t)(at - name) : strlen(name));
	} else if (m) {
		const char *base = strrchr(m->path, '/');
		strbuf_addf(fn_buf, "%s+0x%" PRIx64, base ? base + 1 : m->path, pc - m->bias);
	} else {
		strbuf_addf(fn_buf, "[unknown]+0x%" PRIx64, pc);
	}
	out->function = fn_buf->buf;
	Dwfl_Line *line = dm ? dwfl_module_getsrc(dm, pc) : NULL;
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (file) {
		strbuf_addstr(file_buf, file);
		out->file = file_buf->buf;
		out->line = lineno;
	}
}
