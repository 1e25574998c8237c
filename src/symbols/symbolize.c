/* symbolize: ELF/DWARF symbolization through libdwfl, kallsyms, perf maps. */
#define LOG_DOMAIN "symbols"
#include "symbolize.h"
#include "scope_index.h"
#include "vdso.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"
#include "../util/demangle.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KALLSYMS_MAX (64u << 20)
#define PERFMAP_MAX (64u << 20)
/* Files kept open from interning to lookup; past this, they are reopened by path. */
#define SYM_MAX_OPEN_FDS 512

struct load_seg {
	uint64_t offset, filesz, vaddr;
};

struct sym_module {
	char *path;
	int fd; /* -1: not open (unreadable, or over SYM_MAX_OPEN_FDS) */
	int loaded;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct scope_index *scopes; /* its units' inlined-call scopes, walked once each */
	GElf_Addr bias;
	struct load_seg *segs;
	size_t nsegs;
};

struct ksym {
	uint64_t addr;
	char *name;   /* owned */
	char *module; /* owned; NULL for the kernel image */
};

struct jit_sym {
	uint64_t start, size;
	char *name; /* owned */
};

struct jit_map {
	pid_t pid;
	char *path;
	struct jit_sym *v;
	size_t n;
};

struct symbolizer {
	struct sym_module *mods;
	size_t nmods, allocmods;
	struct hashmap mod_ids; /* path + "\0" + dev:ino -> id */
	int open_fds;
	struct ksym *ksyms;
	size_t nksyms;
	int ksyms_loaded;
	struct jit_map *jits;
	size_t njits;
	struct strbuf scratch;
	struct strbuf names[SYMBOLIZER_MAX_INLINE + 1]; /* cleaned-up names of one lookup */
};

static char *debuginfo_path;
static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = xcalloc(1, sizeof(*s));
	strbuf_init(&s->scratch);
	for (size_t i = 0; i <= SYMBOLIZER_MAX_INLINE; i++)
		strbuf_init(&s->names[i]);
	return s;
}

static void free_jit(struct jit_map *j)
{
	for (size_t i = 0; i < j->n; i++)
		free(j->v[i].name);
	free(j->v);
	free(j->path);
	j->v = NULL;
	j->n = 0;
	j->path = NULL;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++) {
		struct sym_module *m = &s->mods[i];
		scope_index_free(m->scopes);
		if (m->dwfl)
			dwfl_end(m->dwfl);
		if (m->fd >= 0)
			close(m->fd);
		free(m->segs);
		free(m->path);
	}
	free(s->mods);
	hashmap_release(&s->mod_ids);
	for (size_t i = 0; i < s->nksyms; i++) {
		free(s->ksyms[i].name);
		free(s->ksyms[i].module);
	}
	free(s->ksyms);
	for (size_t i = 0; i < s->njits; i++)
		free_jit(&s->jits[i]);
	free(s->jits);
	strbuf_release(&s->scratch);
	for (size_t i = 0; i <= SYMBOLIZER_MAX_INLINE; i++)
		strbuf_release(&s->names[i]);
	free(s);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* Opens path as pid sees it: through its root first, so containers work. */
static int open_as(const char *path, pid_t pid)
{
	if (path[0] != '/')
		return -1;
	if (pid > 0) {
		char buf[4200];
		snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)pid, path);
		int fd = file_open_regular(buf, 0);
		if (fd >= 0 || fd == -EFTYPE_SONDE)
			return fd < 0 ? -1 : fd;
	}
	int fd = file_open_regular(path, 0);
	return fd < 0 ? -1 : fd;
}

int symbolizer_module(struct symbolizer *s, const char *path, pid_t pid)
{
	int is_vdso = !strcmp(path, "[vdso]");
	return symbolizer_module_fd(s, path, is_vdso ? vdso_open() : open_as(path, pid));
}

int symbolizer_module_fd(struct symbolizer *s, const char *path, int fd)
{
	int is_vdso = !strcmp(path, "[vdso]");
	struct stat st;
	struct strbuf key = STRBUF_INIT;
	strbuf_addstr(&key, path);
	strbuf_addch(&key, '\0');
	if (fd >= 0 && !is_vdso && !fstat(fd, &st))
		strbuf_addf(&key, "%llu:%llu", (unsigned long long)st.st_dev,
			    (unsigned long long)st.st_ino);
	int64_t *known = hashmap_get(&s->mod_ids, key.buf, key.len);
	int id = -1;
	if (known) {
		id = (int)*known;
		if (fd >= 0)
			close(fd);
		goto out;
	}
	if (s->nmods >= SYMBOLIZER_MAX_MODULES) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	if (s->nmods == s->allocmods) {
		s->allocmods = s->allocmods ? 2 * s->allocmods : 64;
		s->mods = xrealloc(s->mods, s->allocmods * sizeof(*s->mods));
	}
	struct sym_module *m = &s->mods[s->nmods];
	memset(m, 0, sizeof(*m));
	m->path = xstrdup(path);
	m->fd = -1;
	if (fd >= 0 && s->open_fds < SYM_MAX_OPEN_FDS) {
		m->fd = fd;
		s->open_fds++;
	} else if (fd >= 0) {
		close(fd);
	}
	id = (int)s->nmods++;
	hashmap_put(&s->mod_ids, key.buf, key.len, id);
out:
	strbuf_release(&key);
	return id;
}

const char *symbolizer_module_path(const struct symbolizer *s, int id)
{
	if (id < 0 || (size_t)id >= s->nmods)
		return NULL;
	return s->mods[id].path;
}

static void load_module(struct sym_module *m)
{
	m->loaded = 1;
	int fd = m->fd >= 0 ? dup(m->fd) : file_open_regular(m->path, 0);
	if (fd < 0)
		return;
	m->dwfl = dwfl_begin(&offline_callbacks);
	if (!m->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(m->dwfl);
	/* dwfl owns fd once the module is reported. */
	m->mod = dwfl_report_elf(m->dwfl, base_name(m->path), m->path, fd, 0, false);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod) {
		log_debug("%s: %s", m->path, dwfl_errmsg(-1));
		close(fd);
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return;
	}
	Elf *elf = dwfl_module_getelf(m->mod, &m->bias);
	size_t phnum = 0;
	if (!elf || elf_getphdrnum(elf, &phnum))
		return;
	m->segs = xcalloc(phnum ? phnum : 1, sizeof(*m->segs));
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			m->segs[m->nsegs++] = (struct load_seg){ ph.p_offset, ph.p_filesz, ph.p_vaddr };
	}
}

static uint64_t offset_to_vaddr(const struct sym_module *m, uint64_t off)
{
	for (size_t i = 0; i < m->nsegs; i++)
		if (off >= m->segs[i].offset && off < m->segs[i].offset + m->segs[i].filesz)
			return off - m->segs[i].offset + m->segs[i].vaddr;
	return off;
}

/* name without its symbol version ("memcpy@@GLIBC_2.14"), demangled; stored
 * in names[slot] when it changes. */
static const char *pretty_name(struct symbolizer *s, size_t slot, const char *name)
{
	if (!name)
		return NULL;
	const char *at = strchr(name, '@');
	int mangled = !strncmp(name, "_Z", 2);
	if ((!at || at == name) && !mangled)
		return name;
	struct strbuf *sb = &s->names[slot];
	strbuf_reset(sb);
	if (at && at > name) {
		strbuf_add(sb, name, (size_t)(at - name));
		name = sb->buf;
	}
	if (mangled) {
		struct strbuf plain = STRBUF_INIT;
		if (!demangle_name(name, &plain)) {
			strbuf_reset(sb);
			strbuf_add(sb, plain.buf, plain.len);
		} else if (name != sb->buf) {
			strbuf_addstr(sb, name);
		}
		strbuf_release(&plain);
	}
	return sb->buf;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return name;
}

/* Where an inlined call was made: the location inside the caller. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	*file = NULL;
	*line = 0;
	if (!dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &w))
		*line = (int)w;
	Dwarf_Files *files;
	size_t nfiles;
	if (!dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &w) &&
	    !dwarf_getsrcfiles(cu, &files, &nfiles) && w < nfiles)
		*file = dwarf_filesrc(files, w, NULL, NULL);
}

size_t symbolizer_lookup(struct symbolizer *s, int id, uint64_t file_offset,
			 struct sym_frame *out, size_t max)
{
	size_t n = 0;
	struct sym_module *m = id >= 0 && (size_t)id < s->nmods ? &s->mods[id] : NULL;
	if (m && !m->loaded)
		load_module(m);
	if (!m || !m->mod) {
		strbuf_reset(&s->scratch);
		strbuf_addf(&s->scratch, "%s+0x%llx", m ? base_name(m->path) : "[unknown]",
			    (unsigned long long)file_offset);
		out[0] = (struct sym_frame){ s->scratch.buf, NULL, 0, 0 };
		return 1;
	}
	Dwarf_Addr addr = offset_to_vaddr(m, file_offset) + m->bias;
	GElf_Off sym_off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(m->mod, addr, &sym_off, &sym, NULL, NULL, NULL);
	const char *file = NULL;
	int line = 0;
	Dwfl_Line *l = dwfl_module_getsrc(m->mod, addr);
	if (l)
		file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
	Dwarf_Addr dbias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(m->mod, addr, &dbias);
	Dwarf_Die scopes[SCOPE_INDEX_FOUND_MAX];
	if (cu && !m->scopes)
		m->scopes = scope_index_new();
	int nscopes = cu ? (int)scope_index_lookup(m->scopes, cu, addr - dbias, scopes,
						   SCOPE_INDEX_FOUND_MAX)
			 : 0;
	/* Every inlined call, innermost first, each at the line it runs (the
	 * innermost's: the address's own; the next one's: where it made the
	 * call inlined into it), then the function (at most
	 * SYMBOLIZER_MAX_INLINE inlined frames: the innermost are kept). */
	const char *dwarf_func = NULL;
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram) {
			dwarf_func = die_name(&scopes[i]);
			break;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (n + 1 < max && n < SYMBOLIZER_MAX_INLINE) {
			const char *inl = pretty_name(s, n, die_name(&scopes[i]));
			out[n++] = (struct sym_frame){ inl ? inl : "[inlined]", file, line, 1 };
		}
		call_site(cu, &scopes[i], &file, &line);
	}
	name = pretty_name(s, n, name ? name : dwarf_func);
	GElf_Addr bias;
	Elf *elf;
	uint64_t start;
	if (!name && !strcmp(m->path, "[vdso]") && (elf = dwfl_module_getelf(m->mod, &bias)) &&
	    !vdso_function_start(elf, offset_to_vaddr(m, file_offset), &start)) {
		/* A static function of the vDSO: no symbol, but its unwind entry
		 * gives where it starts, so all its samples share one name. */
		char fn[64];
		vdso_function_name(start, fn, sizeof(fn));
		strbuf_reset(&s->scratch);
		strbuf_addstr(&s->scratch, fn);
		name = s->scratch.buf;
	}
	if (!name) {
		/* A stripped module: the function's entry from its unwind table
		 * names every address in it alike (one row per function, not per
		 * address); else the address itself. */
		uint64_t vaddr = offset_to_vaddr(m, file_offset), at = file_offset;
		if ((elf = dwfl_module_getelf(m->mod, &bias)) &&
		    !vdso_function_start(elf, vaddr, &start) && start <= vaddr &&
		    vaddr - start <= file_offset)
			at = file_offset - (vaddr - start);
		strbuf_reset(&s->scratch);
		strbuf_addf(&s->scratch, "%s+0x%llx", base_name(m->path), (unsigned long long)at);
		name = s->scratch.buf;
	}
	out[n++] = (struct sym_frame){ name, file, line, 0 };
	return n;
}

size_t symbolizer_lookup_vaddr(struct symbolizer *s, int id, uint64_t vaddr,
			       struct sym_frame *out, size_t max)
{
	uint64_t off = vaddr;
	struct sym_module *m = id >= 0 && (size_t)id < s->nmods ? &s->mods[id] : NULL;
	if (m && !m->loaded)
		load_module(m);
	for (size_t i = 0; m && i < m->nsegs; i++)
		if (vaddr >= m->segs[i].vaddr && vaddr - m->segs[i].vaddr < m->segs[i].filesz) {
			off = vaddr - m->segs[i].vaddr + m->segs[i].offset;
			break;
		}
	return symbolizer_lookup(s, id, off, out, max);
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(struct symbolizer *s)
{
	s->ksyms_loaded = 1;
	struct strbuf sb = STRBUF_INIT;
	if (file_read_strbuf("/proc/kallsyms", &sb, KALLSYMS_MAX) <= 0)
		goto out;
	size_t alloc = 0;
	char *save = NULL;
	for (char *line = strtok_r(sb.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "ffffffff81000000 T _stext" or "... t fn\t[module]" */
		char *end;
		unsigned long long addr = strtoull(line, &end, 16);
		if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ' || addr == 0 ||
		    !strchr("tTwW", end[1]))
			continue;
		char *name = end + 3, *mod = strchr(name, '\t');
		if (mod) {
			*mod++ = '\0';
			if (*mod == '[') {
				mod++;
				mod[strcspn(mod, "]")] = '\0';
			} else {
				mod = NULL;
			}
		}
		if (s->nksyms == alloc) {
			alloc = alloc ? 2 * alloc : 4096;
			s->ksyms = xrealloc(s->ksyms, alloc * sizeof(*s->ksyms));
		}
		s->ksyms[s->nksyms++] = (struct ksym){ addr, xstrdup(name), mod ? xstrdup(mod) : NULL };
	}
	qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
out:
	strbuf_release(&sb);
}

void symbolizer_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *out,
		       const char **module)
{
	if (!s->ksyms_loaded)
		load_kallsyms(s);
	*module = "[kernel.kallsyms]";
	size_t lo = 0, hi = s->nksyms;
	while (lo < hi) { /* first symbol above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0) {
		strbuf_reset(&s->scratch);
		strbuf_addf(&s->scratch, "[kernel]+0x%llx", (unsigned long long)addr);
		*out = (struct sym_frame){ s->scratch.buf, NULL, 0, 0 };
		return;
	}
	const struct ksym *k = &s->ksyms[lo - 1];
	if (k->module) {
		strbuf_reset(&s->scratch);
		strbuf_addf(&s->scratch, "[%s]", k->module);
		*module = s->scratch.buf;
	}
	*out = (struct sym_frame){ k->name, NULL, 0, 0 };
}

static int jit_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static struct jit_map *jit_find(struct symbolizer *s, pid_t pid)
{
	for (size_t i = 0; i < s->njits; i++)
		if (s->jits[i].pid == pid)
			return &s->jits[i];
	return NULL;
}

/* /tmp is everyone's: a perf map is read only when it is a regular file (a
 * FIFO would block), not a link, and owned by the process's user or root (as
 * perf does), so another user cannot feed sonde names or make it hang. */
static int perfmap_read(const char *path, pid_t pid, struct strbuf *sb)
{
	int fd = file_open_regular(path, O_NOFOLLOW);
	if (fd < 0) {
		/* Not allowed into the process's root (another container's): no
		 * file to distrust, and nothing the user can fix here. */
		if (fd == -EACCES || fd == -EPERM)
			log_info("%s ignored: %s", path, strerror(-fd));
		else if (fd != -ENOENT)
			log_warn("%s ignored: %s", path,
				 fd == -EFTYPE_SONDE ? "not a regular file"
				 : fd == -ELOOP	     ? "a symbolic link"
						     : strerror(-fd));
		return fd;
	}
	char proc[32];
	struct stat st, owner;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	int ret = -EPERM;
	if (fstat(fd, &st) || stat(proc, &owner) || (st.st_uid != 0 && st.st_uid != owner.st_uid)) {
		log_warn("%s ignored: not owned by the process's user or root", path);
		goto out;
	}
	ret = file_read_fd_strbuf(fd, sb, PERFMAP_MAX) < 0 ? -EIO : 0;
out:
	close(fd);
	return ret;
}

static struct jit_map *jit_get(struct symbolizer *s, pid_t pid)
{
	struct jit_map *j = jit_find(s, pid);
	if (!j) {
		s->jits = xrealloc(s->jits, (s->njits + 1) * sizeof(*s->jits));
		j = &s->jits[s->njits++];
		memset(j, 0, sizeof(*j));
		j->pid = pid;
	}
	return j;
}

void symbolizer_jit_parse(struct symbolizer *s, pid_t pid, const char *text, size_t len)
{
	struct jit_map *j = jit_get(s, pid);
	struct strbuf sb = STRBUF_INIT;
	char path[128];
	strbuf_add(&sb, text, len);
	free_jit(j);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	j->path = xstrdup(path);
	size_t alloc = 0;
	char *save = NULL;
	for (char *line = strtok_r(sb.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end;
		unsigned long long start = strtoull(line, &end, 16);
		if (end == line || (*end != ' ' && *end != '\t'))
			continue;
		char *p = end;
		unsigned long long size = strtoull(p, &end, 16);
		if (end == p)
			continue;
		while (*end == ' ' || *end == '\t')
			end++;
		if (!*end)
			continue;
		if (j->n == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			j->v = xrealloc(j->v, alloc * sizeof(*j->v));
		}
		j->v[j->n++] = (struct jit_sym){ start, size, xstrdup(end) };
	}
	if (j->n)
		qsort(j->v, j->n, sizeof(*j->v), jit_cmp);
	strbuf_release(&sb);
}

int symbolizer_jit_read(pid_t pid, struct strbuf *out)
{
	char path[128];
	/* Inside a container the JIT writes its namespace pid; the common case is
	 * the same number, so try that under the process's root first. */
	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", (int)pid, (int)pid);
	int rc = perfmap_read(path, pid, out);
	if (rc == -ENOENT) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
		rc = perfmap_read(path, pid, out);
	}
	return rc;
}

void symbolizer_jit_load(struct symbolizer *s, pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	jit_get(s, pid);
	if (symbolizer_jit_read(pid, &sb) < 0) {
		strbuf_release(&sb);
		return;
	}
	symbolizer_jit_parse(s, pid, sb.buf, sb.len);
	strbuf_release(&sb);
}

void symbolizer_jit(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_frame *out,
		    const char **module)
{
	struct jit_map *j = jit_find(s, pid);
	if (!j) {
		symbolizer_jit_load(s, pid);
		j = jit_find(s, pid);
	}
	*module = "[anon]";
	if (j && j->n) {
		size_t lo = 0, hi = j->n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (j->v[mid].start <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* addr - start: a start + size past 2^64 must not wrap round. */
		if (lo > 0 && addr - j->v[lo - 1].start < j->v[lo - 1].size) {
			*module = j->path;
			*out = (struct sym_frame){ j->v[lo - 1].name, NULL, 0, 0 };
			return;
		}
	}
	strbuf_reset(&s->scratch);
	strbuf_addf(&s->scratch, "[anon]+0x%llx", (unsigned long long)addr);
	*out = (struct sym_frame){ s->scratch.buf, NULL, 0, 0 };
}
