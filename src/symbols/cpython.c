/* cpython: locate a CPython interpreter in another process and read its
 * threads' Python stacks with process_vm_readv (see cpython.h). */
#define LOG_DOMAIN "cpython"
#include "cpython.h"
#include "cpython_gil.h"
#include "cpython_layout.h"
#include "cpython_test.h"
#include "cpython_tids.h"
#include "../target/procfs.h"
#include "../util/clock.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CPY_MAX_INTERPS 16
#define CPY_MAX_THREADS 512
#define CPY_MAX_DEPTH 4096
#define CPY_MAX_STRING 1024	     /* characters of a name or path */
#define CPY_MAX_LINETABLE (1 << 20)  /* bytes */
#define CPY_MAX_CODES 65536	     /* cached code objects before the cache is dropped */
#define CPY_MAX_CODE_BYTES (64 << 20) /* line tables and names cached before the cache is dropped */
#define CPY_MAX_SCAN (32 << 20)	     /* bytes of writable memory scanned for _PyRuntime */
#define CPY_MAPS_MAX (8 << 20)
#define CPY_PTHREAD_SCAN 2048	     /* bytes of struct pthread searched for the tid */
#define CPY_WALK_TRIES 12		     /* walks of one thread's stack per sample */
#define CPY_WALK_QUICK 3	     /* ... the first ones at once, then after a pause */
#define CPY_WALK_PAUSE_NS 25000	     /* the first pause, doubled each time ... */
#define CPY_WALK_PAUSE_MAX_NS 200000 /* ... up to this: 1.4 ms in all at most */
#define CPY_MAX_DICT 65536	     /* entries of a dict looked through (sys.modules) */
#define CPY_DICT_CHUNK 128	     /* dict entries read at once */
#define CPY_NAMES_EVERY_NS NS_PER_S  /* threading's names read again this often */
#define CPY_NAMES_RETRY_NS (50 * NS_PER_MS) /* a thread not named yet: tried again after */
#define CPY_NAMES_TRIES 5	     /* ... this many times, then only every CPY_NAMES_EVERY_NS */
#define CPY_TYPES 4		     /* builtin types recognised by tp_name */

struct code_entry {
	uint64_t addr, name, file, table;
	int64_t firstlineno;
	char *func_s, *file_s;
	uint8_t *lt;
	size_t lt_len;
};

#define CPY_PAGE 4096
#define CPY_PAGES 256 /* pages cached per process: 1 MiB (touched ones only) */

struct cached_page {
	uint64_t page;
	uint32_t gen; /* 0: empty */
	uint32_t noted; /* the page_cache's samples when it was noted last */
	uint8_t data[CPY_PAGE];
};

#define CPY_PREFETCH 64 /* pages read ahead in one system call per sample */
#define CPY_IOV_MAX 1024 /* ranges of one process_vm_readv (the kernel's UIO_MAXIOV) */
#define CPY_RECHECK_CLIMB 16 /* frames pushed during a walk followed back to it */

struct page_cache {
	uint32_t gen;
	struct cached_page slot[CPY_PAGES];
	/* The pages a sample read outside its stack walks (the runtime, the
	 * interpreters, the GIL, the thread states): the next sample reads them
	 * all at its start, in one process_vm_readv. */
	int noting;
	int sampling; /* inside cpython_sample: code objects' pages are noted, walks or not */
	uint32_t samples; /* counts samples, for cached_page.noted */
	uint64_t noted[CPY_PREFETCH], ahead[CPY_PREFETCH];
	size_t nnoted, nahead;
};

/* Notes the page of cpg for the next sample's read-ahead, once a sample. */
static void page_note(struct page_cache *pc, struct cached_page *cpg)
{
	if (!pc->noting || cpg->noted == pc->samples || pc->nnoted == CPY_PREFETCH)
		return;
	cpg->noted = pc->samples;
	pc->noted[pc->nnoted++] = cpg->page;
}

/* threading's name of the thread whose ident (pthread_self) is ident; an
 * empty name: not known to threading, looked for `tries` times. An ident is
 * reused by the next thread (glibc reuses a finished thread's stack), so a
 * name holds for the OS thread tid it was read for (0: not bound yet). */
struct thread_name {
	uint64_t ident;
	pid_t tid;
	int tries;
	char name[128];
};

/* What tells a thread state of one sample from another: the same object,
 * OS thread and innermost frame (or C frame, 3.11-3.12). */
struct thread_key {
	uint64_t tstate, pthread, native, top;
};

/* A frame as a walk read it, to check it again after the walk; pushed: the
 * stack's frames before it was walked (where its own frames start). */
struct walked_frame {
	uint64_t addr, back, code;
	size_t pushed;
};

struct cpython_proc {
	pid_t pid;
	struct page_cache *pages;
	struct cpython_layout lay; /* the version's rows, 3.13 filled from _Py_DebugOffsets */
	uint64_t runtime;	   /* remote address of _PyRuntime */
	char version[16];
	char where[512];
	size_t tstate_read, frame_read, code_read;
	uint64_t code_type;	   /* remote PyCode_Type, once seen */
	int64_t pthread_tid_off;   /* <= 3.10: offset of the tid in struct pthread; -1 unknown */
	struct cpython_tids tids;  /* the process's own thread ids -> sonde's */
	int tids_fresh;		   /* listed during this sample */
	uint64_t tid_tries;
	struct hashmap code_index; /* key: struct code_key -> index in codes */
	struct code_entry *codes;
	size_t ncodes, acodes;
	struct cpython_thread *threads;
	struct cpython_frame *frames;
	size_t aframes;
	/* The previous sample (threads, frames and keys swap with the current
	 * ones at each sample): a thread that cannot have run Python since
	 * (cpython_gil.h) keeps its stack from there instead of being walked. */
	struct cpython_thread *threads_prev;
	struct cpython_frame *frames_prev;
	size_t aframes_prev, nprev;
	struct thread_key *keys, *keys_prev;
	struct cpython_gil_seen gils[CPY_MAX_INTERPS], gils_prev[CPY_MAX_INTERPS];
	uint64_t prev_code_gen; /* code_gen then: kept frames point into that cache */
	uint64_t kept;		/* stacks kept, not walked, since open */
	size_t nlast;		/* threads of the last sample (0: it failed) */
	struct walked_frame *walked; /* the last walk's frames, innermost first */
	size_t nwalked, awalked;
	uint8_t *recheck;	     /* the walked frames read again, frame_read bytes each */
	size_t arecheck;
	uint64_t errors;
	uint64_t rereads; /* stacks walked again within one sample */
	uint64_t popped;  /* stacks given from a frame outer than the walk's innermost */
	uint64_t code_gen;
	size_t code_bytes; /* held by the cache, bounded by CPY_MAX_CODE_BYTES */
	uint64_t types[CPY_TYPES]; /* remote dict, str, int, module types, once seen */
	uint64_t key_threading, key_active, key_name, key_native_id; /* interned str keys, once found */
	struct thread_name *names, *names_next; /* nnames used; at most 2 * CPY_MAX_THREADS */
	size_t nnames;
	struct hashmap name_index; /* ident -> index in names */
	int64_t names_at_ns;	   /* when names were last read, 0 never */
};

struct code_key {
	uint64_t addr, name, file, table;
	int64_t firstlineno;
};

/* ---- remote memory ---- */

static cpython_test_read_fn read_hook; /* tests only: cpython_test.h */
static void *read_hook_ctx;

static int rd_direct(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (read_hook)
		return read_hook(read_hook_ctx, addr, buf, len);
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* The page holding addr, read once per generation (one sample). */
static const uint8_t *page_get(struct page_cache *pc, pid_t pid, uint64_t page)
{
	struct cached_page *cpg = &pc->slot[(page / CPY_PAGE) % CPY_PAGES];
	if (cpg->gen == pc->gen && cpg->page == page) {
		page_note(pc, cpg);
		return cpg->data;
	}
	if (rd_direct(pid, page, cpg->data, CPY_PAGE)) {
		cpg->gen = 0;
		return NULL;
	}
	cpg->gen = pc->gen;
	cpg->page = page;
	page_note(pc, cpg);
	return cpg->data;
}

/* Reads the pages the last sample noted, at once, into the cache of this
 * generation (a page that cannot be read now is left for page_get). */
static void pages_read_ahead(struct page_cache *pc, pid_t pid)
{
	struct iovec local[CPY_PREFETCH], remote[CPY_PREFETCH];
	struct cached_page *slots[CPY_PREFETCH];
	size_t n = 0;
	for (size_t i = 0; i < pc->nahead; i++) {
		struct cached_page *cpg = &pc->slot[(pc->ahead[i] / CPY_PAGE) % CPY_PAGES];
		if (cpg->gen == pc->gen)
			continue; /* two pages for one slot: the first only */
		cpg->gen = pc->gen;
		cpg->page = pc->ahead[i];
		slots[n] = cpg;
		local[n] = (struct iovec){ cpg->data, CPY_PAGE };
		remote[n] = (struct iovec){ (void *)(uintptr_t)pc->ahead[i], CPY_PAGE };
		n++;
	}
	ssize_t got = n && !read_hook ? process_vm_readv(pid, local, n, remote, n, 0) : 0;
	size_t whole = got > 0 ? (size_t)got / CPY_PAGE : 0;
	for (size_t i = whole; i < n; i++)
		slots[i]->gen = 0; /* not read: page_get reads it if it is needed */
}

/* Reads through the page cache: the frames of a stack sit in a few pages
 * (3.11+ keep them in one data stack), so a deep stack costs a few system
 * calls, not two per frame. Within one sample the pages are read once; the
 * cache is forgotten at the next sample. */
static int rd(const struct cpython_proc *cp, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return -EFAULT;
	uint64_t first = addr & ~(uint64_t)(CPY_PAGE - 1);
	uint64_t last = (addr + len - 1) & ~(uint64_t)(CPY_PAGE - 1);
	if (!len || last - first > CPY_PAGE || addr + len < addr)
		return rd_direct(cp->pid, addr, buf, len);
	uint8_t *out = buf;
	for (uint64_t page = first; page <= last; page += CPY_PAGE) {
		const uint8_t *data = page_get(cp->pages, cp->pid, page);
		if (!data) /* a page that cannot be read whole: read just the range */
			return rd_direct(cp->pid, addr, buf, len);
		uint64_t from = page > addr ? page : addr;
		uint64_t to = page + CPY_PAGE < addr + len ? page + CPY_PAGE : addr + len;
		memcpy(out + (from - addr), data + (from - page), to - from);
	}
	return 0;
}

static uint64_t get_u64(const uint8_t *b, int64_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int32_t get_i32(const uint8_t *b, int64_t off)
{
	int32_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int rd_u64(const struct cpython_proc *cp, uint64_t addr, uint64_t *out)
{
	return rd(cp, addr, out, sizeof(*out));
}

/* A Python str as UTF-8 into out (cap bytes); compact strings only, which
 * every name and file of a code object is. */
static int rd_unicode(const struct cpython_proc *cp, uint64_t addr, char *out, size_t cap)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t hdr[64];
	if ((size_t)l->unicode_state + 4 > sizeof(hdr) || rd(cp, addr, hdr, (size_t)l->unicode_state + 4))
		return -1;
	uint64_t len = get_u64(hdr, l->unicode_length);
	uint32_t state = (uint32_t)get_i32(hdr, l->unicode_state);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4))
		return -1;
	if (len > CPY_MAX_STRING) /* a huge name is kept cut, not a reason to drop the stack */
		len = CPY_MAX_STRING;
	uint64_t data = addr + (uint64_t)(ascii ? l->unicode_ascii_size : l->unicode_compact_size);
	uint8_t raw[CPY_MAX_STRING * 4];
	if (len && rd(cp, data, raw, len * kind))
		return -1;
	size_t o = 0;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t c = raw[i];
		if (kind == 2) {
			uint16_t u;
			memcpy(&u, raw + i * 2, sizeof(u));
			c = u;
		} else if (kind == 4) {
			memcpy(&c, raw + i * 4, sizeof(c));
		}
		char tmp[4];
		size_t n;
		if (c < 0x80) {
			tmp[0] = (char)c;
			n = 1;
		} else if (c < 0x800) {
			tmp[0] = (char)(0xC0 | (c >> 6));
			tmp[1] = (char)(0x80 | (c & 63));
			n = 2;
		} else if (c < 0x10000) {
			tmp[0] = (char)(0xE0 | (c >> 12));
			tmp[1] = (char)(0x80 | ((c >> 6) & 63));
			tmp[2] = (char)(0x80 | (c & 63));
			n = 3;
		} else if (c < 0x110000) {
			tmp[0] = (char)(0xF0 | (c >> 18));
			tmp[1] = (char)(0x80 | ((c >> 12) & 63));
			tmp[2] = (char)(0x80 | ((c >> 6) & 63));
			tmp[3] = (char)(0x80 | (c & 63));
			n = 4;
		} else {
			return -1;
		}
		if (o + n + 1 > cap)
			break;
		memcpy(out + o, tmp, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}

static int rd_bytes(const struct cpython_proc *cp, uint64_t addr, uint8_t **out, size_t *out_len)
{
	uint64_t size;
	if (rd_u64(cp, addr + (uint64_t)cp->lay.bytes_size, &size) || size > CPY_MAX_LINETABLE)
		return -1;
	uint8_t *b = xmalloc(size ? size : 1);
	if (size && rd(cp, addr + (uint64_t)cp->lay.bytes_sval, b, size)) {
		free(b);
		return -1;
	}
	*out = b;
	*out_len = size;
	return 0;
}

/* ---- finding the interpreter ---- */

struct elf_info {
	uint64_t load_vaddr; /* first PT_LOAD p_vaddr, page aligned down */
	uint64_t pyruntime, pyruntime_size; /* .PyRuntime section */
	uint64_t sym_runtime, sym_version;  /* _PyRuntime, Py_Version */
	uint64_t data, data_size, bss, bss_size;
	int needs_libpython; /* a DT_NEEDED libpython: the runtime is there, not here */
};

/* Does the dynamic section name libpython among the libraries it needs? */
static int elf_needs_libpython(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Dyn dyn;
		if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		const char *name = dyn.d_tag == DT_NEEDED
					   ? elf_strptr(e, sh->sh_link, (size_t)dyn.d_un.d_val)
					   : NULL;
		if (name && !strncmp(name, "libpython", 9))
			return 1;
	}
	return 0;
}

static void elf_scan_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_info *out)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		const char *name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || (name[0] != '_' && name[0] != 'P'))
			continue;
		if (!strcmp(name, "_PyRuntime"))
			out->sym_runtime = sym.st_value;
		else if (!strcmp(name, "Py_Version"))
			out->sym_version = sym.st_value;
	}
}

static int elf_read_info(const char *path, struct elf_info *out)
{
	int fd = file_open_regular(path, 0);
	if (fd < 0)
		return -1;
	int ret = -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto out;
	memset(out, 0, sizeof(*out));
	size_t nph;
	if (elf_getphdrnum(e, &nph))
		goto out;
	int have_load = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			uint64_t align = ph.p_align > 1 ? ph.p_align : 4096;
			out->load_vaddr = ph.p_vaddr & ~(align - 1);
			have_load = 1;
			break;
		}
	}
	size_t shstrndx;
	if (!have_load || elf_getshdrstrndx(e, &shstrndx))
		goto out;
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".PyRuntime")) {
			out->pyruntime = sh.sh_addr;
			out->pyruntime_size = sh.sh_size;
		} else if (!strcmp(name, ".data")) {
			out->data = sh.sh_addr;
			out->data_size = sh.sh_size;
		} else if (!strcmp(name, ".bss")) {
			out->bss = sh.sh_addr;
			out->bss_size = sh.sh_size;
		} else if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) {
			elf_scan_symbols(e, scn, &sh, out);
		} else if (sh.sh_type == SHT_DYNAMIC) {
			out->needs_libpython = elf_needs_libpython(e, scn, &sh);
		}
	}
	ret = 0;
out:
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

struct mapped_file {
	char name[420]; /* as /proc/PID/maps shows it, " (deleted)" included */
	char path[400]; /* the file's path, without " (deleted)" */
	int deleted;	/* unlinked or replaced on disk since it was mapped */
	uint64_t base, base_end; /* the lowest mapping of the file */
	int have_base;
};

#define CPY_DELETED " (deleted)"

/* "python3.11", "libpython3.8.so.1.0" -> 3, 11. 0 when the name tells it. */
static int version_from_name(const char *base, int *major, int *minor)
{
	const char *p = strstr(base, "python");
	if (!p)
		return -1;
	p += 6;
	int a, b;
	if (sscanf(p, "%d.%d", &a, &b) != 2)
		return -1;
	*major = a;
	*minor = b;
	return 0;
}

static const char *path_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int is_python_name(const char *base)
{
	return !strncmp(base, "libpython", 9) || !strncmp(base, "python", 6);
}

/* Mapped files whose name looks like a Python, libpython first. */
static size_t find_python_maps(pid_t pid, struct mapped_file *out, size_t cap, int *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0;
	ssize_t rc = file_read_strbuf(path, &sb, CPY_MAPS_MAX);
	*err = rc < 0 ? (int)rc : 0;
	if (rc < 0)
		goto out;
	for (char *line = sb.buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		unsigned long long start, end, off;
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &name_at) >= 3 &&
		    name_at > 0 && line[name_at] == '/') {
			const char *file = line + name_at;
			if (is_python_name(path_base(file))) {
				size_t i;
				for (i = 0; i < n; i++)
					if (!strcmp(out[i].name, file))
						break;
				if (i == n && n < cap) {
					struct mapped_file *mf = &out[n++];
					size_t len = strlen(file), dl = strlen(CPY_DELETED);
					snprintf(mf->name, sizeof(mf->name), "%s", file);
					mf->deleted = len > dl && !strcmp(file + len - dl, CPY_DELETED);
					snprintf(mf->path, sizeof(mf->path), "%.*s",
						 (int)(mf->deleted ? len - dl : len), file);
					mf->have_base = 0;
				}
				if (i < n && (!out[i].have_base || start < out[i].base)) {
					out[i].base = start;
					out[i].base_end = end;
					out[i].have_base = 1;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	/* libpython before the executable: the runtime lives there when it is shared. */
	for (size_t i = 1; i < n; i++)
		if (!strncmp(path_base(out[i].path), "libpython", 9)) {
			struct mapped_file t = out[0];
			out[0] = out[i];
			out[i] = t;
			break;
		}
out:
	strbuf_release(&sb);
	return n;
}

static void set_read_sizes(struct cpython_proc *cp)
{
	const struct cpython_layout *l = &cp->lay;
	int64_t t = 0, f = 0, c = 0;
	int64_t tv[] = { l->tstate_next, l->tstate_interp, l->tstate_frame, l->tstate_cframe,
			 l->tstate_thread_id, l->tstate_native_thread_id };
	int64_t fv[] = { l->frame_back,	 l->frame_code,	 l->frame_instr,   l->frame_owner,
			 l->frame_lasti, l->frame_state, l->frame_is_entry };
	int64_t cv[] = { l->object_type, l->code_filename, l->code_name, l->code_qualname,
			 l->code_firstlineno, l->code_linetable };
	for (size_t i = 0; i < sizeof(tv) / sizeof(tv[0]); i++)
		t = tv[i] > t ? tv[i] : t;
	for (size_t i = 0; i < sizeof(fv) / sizeof(fv[0]); i++)
		f = fv[i] > f ? fv[i] : f;
	for (size_t i = 0; i < sizeof(cv) / sizeof(cv[0]); i++)
		c = cv[i] > c ? cv[i] : c;
	cp->tstate_read = (size_t)t + 8;
	cp->frame_read = (size_t)f + 8;
	cp->code_read = (size_t)c + 8;
}

/* Does interp look like a PyInterpreterState: its first thread is a separate
 * object that points back to it and is first (prev NULL)? Self-referencing
 * list heads (obmalloc's usedpools) pass a bare back-pointer test. */
static int check_interp(const struct cpython_proc *cp, uint64_t interp)
{
	uint64_t ts, back, prev;
	const struct cpython_layout *l = &cp->lay;
	if (!interp || (interp & 7) ||
	    rd_u64(cp, interp + (uint64_t)l->interp_tstate_head, &ts) || !ts || (ts & 7) ||
	    (ts > interp - 256 && ts < interp + 256) ||
	    rd_u64(cp, ts + (uint64_t)l->tstate_interp, &back) || back != interp)
		return 0;
	if (l->tstate_next >= 8 &&
	    (rd_u64(cp, ts + (uint64_t)l->tstate_next - 8, &prev) || prev != 0))
		return 0;
	return 1;
}

/* Is runtime (found by a scan) really _PyRuntime? Its first four ints are
 * initialisation flags (0 or 1) on 3.8-3.12, and interpreters.main, right
 * after interpreters.head, is an interpreter too (the same one unless there
 * are subinterpreters). 3.13+ are checked by their _Py_DebugOffsets cookie. */
static int runtime_plausible(const struct cpython_proc *cp, uint64_t runtime)
{
	int32_t flags[4];
	uint64_t head, main_interp;
	if (rd(cp, runtime, flags, sizeof(flags)) ||
	    rd_u64(cp, runtime + (uint64_t)cp->lay.runtime_interp_head, &head) ||
	    rd_u64(cp, runtime + (uint64_t)cp->lay.runtime_interp_head + 8, &main_interp))
		return 0;
	if (cp->lay.minor < 13)
		for (int i = 0; i < 4; i++)
			if (flags[i] != 0 && flags[i] != 1)
				return 0;
	return main_interp == head || check_interp(cp, main_interp);
}

/* Scans [start, start+size) for the word that is _PyRuntime.interpreters.head,
 * recognised by its back pointers. Only works once the interpreter is
 * initialised; until then the caller tries again later. */
static uint64_t scan_range(const struct cpython_proc *cp, uint64_t start, uint64_t size,
			   uint64_t *budget)
{
	size = size < *budget ? size : *budget;
	*budget -= size;
	size_t chunk = 1 << 16;
	uint8_t *buf = xmalloc(chunk);
	uint64_t found = 0;
	for (uint64_t at = 0; at < size && !found; at += chunk) {
		size_t n = size - at < chunk ? (size_t)(size - at) : chunk;
		if (rd(cp, start + at, buf, n))
			continue;
		for (size_t i = 0; i + 8 <= n; i += 8) {
			uint64_t w = get_u64(buf, (int64_t)i), where = start + at + i;
			if (w < 0x10000 || w >= 0x800000000000ULL || (w & 7) ||
			    where < (uint64_t)cp->lay.runtime_interp_head || !check_interp(cp, w))
				continue;
			uint64_t runtime = where - (uint64_t)cp->lay.runtime_interp_head;
			if (runtime_plausible(cp, runtime)) {
				found = runtime;
				break;
			}
		}
	}
	free(buf);
	return found;
}

/* No symbol, no section: scan the file's writable mappings (.PyRuntime,
 * .data) and the anonymous one right after them (.bss). */
static uint64_t scan_for_runtime(const struct cpython_proc *cp, const char *file)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)cp->pid);
	struct strbuf sb = STRBUF_INIT;
	uint64_t found = 0, budget = CPY_MAX_SCAN, prev_end = 0;
	int prev_ours = 0;
	if (file_read_strbuf(path, &sb, CPY_MAPS_MAX) < 0)
		goto out;
	for (char *line = sb.buf; line && *line && !found && budget;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		unsigned long long start, end;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &start, &end, perms, &name_at) >= 3) {
			const char *name = name_at > 0 ? line + name_at : "";
			int ours = !strcmp(name, file);
			int bss = !name[0] && prev_ours && start == prev_end;
			if (perms[0] == 'r' && perms[1] == 'w' && (ours || bss))
				found = scan_range(cp, start, end - start, &budget);
			prev_ours = ours;
			prev_end = end;
		}
		line = nl ? nl + 1 : NULL;
	}
out:
	strbuf_release(&sb);
	return found;
}

/* The ELF of a mapped file, read as the process sees it: the very file it
 * mapped (/proc/PID/map_files, which still reaches a file deleted or replaced
 * on disk since), else the path in its mount namespace (a container), else
 * the path here. A deleted file is only read through map_files: the path may
 * name its replacement, another build. */
static int elf_read_mapped(pid_t pid, const struct mapped_file *mf, struct elf_info *out)
{
	char local[600];
	snprintf(local, sizeof(local), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)mf->base, (unsigned long long)mf->base_end);
	if (!elf_read_info(local, out))
		return 0;
	if (mf->deleted) {
		snprintf(local, sizeof(local), "/proc/%d/exe", (int)pid);
		char exe[420];
		ssize_t n = readlink(local, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		/* The executable itself: /proc/PID/exe opens it, deleted or not. */
		return strcmp(exe, mf->name) ? -1 : elf_read_info(local, out);
	}
	snprintf(local, sizeof(local), "/proc/%d/root%.399s", (int)pid, mf->path);
	if (!elf_read_info(local, out))
		return 0;
	return elf_read_info(mf->path, out);
}

static enum cpython_open_result try_file(struct cpython_proc *cp, const struct mapped_file *mf,
					 struct strbuf *why)
{
	struct elf_info ei;
	if (elf_read_mapped(cp->pid, mf, &ei))
		return CPYTHON_NOT_PYTHON;
	uint64_t bias = mf->base - ei.load_vaddr;
	uint64_t probe_word;
	int rc = rd_direct(cp->pid, mf->base, &probe_word, sizeof(probe_word));
	if (rc == -EPERM || rc == -EACCES) {
		strbuf_addf(why, "reading the memory of process %d is not permitted (%s): ",
			    (int)cp->pid, strerror(-rc));
		procfs_explain_denied(cp->pid, why);
		return CPYTHON_DENIED;
	}
	int major = 0, minor = 0, have_version = !version_from_name(path_base(mf->path), &major, &minor);
	uint64_t runtime = 0;
	const char *how = NULL;
	/* For tests: pretend the binary has neither section nor symbol. */
	if (getenv("SONDE_CPYTHON_FORCE_SCAN"))
		ei.pyruntime = ei.sym_runtime = 0;
	if (ei.pyruntime) {
		runtime = bias + ei.pyruntime;
		how = ".PyRuntime section";
	} else if (ei.sym_runtime) {
		runtime = bias + ei.sym_runtime;
		how = "_PyRuntime symbol";
	}
	if (ei.sym_version) {
		uint64_t hex;
		if (!rd_u64(cp, bias + ei.sym_version, &hex) && (hex >> 24) == 3) {
			major = 3;
			minor = (int)((hex >> 16) & 0xff);
			have_version = 1;
		}
	}
	struct cpython_debug_offsets_313 dbg;
	int have_dbg = 0;
	if (runtime && !rd(cp, runtime, &dbg, sizeof(dbg)) && !memcmp(dbg.cookie, "xdebugpy", 8)) {
		major = (int)((dbg.version >> 24) & 0xff);
		minor = (int)((dbg.version >> 16) & 0xff);
		have_version = 1;
		have_dbg = 1;
	}
	if (!have_version) {
		if (!runtime && !ei.data)
			return CPYTHON_NOT_PYTHON;
		strbuf_addf(why, "%s looks like a Python but its version cannot be told", mf->path);
		return CPYTHON_UNSUPPORTED;
	}
	const struct cpython_layout *row = cpython_layout_find(major, minor);
	if (!row) {
		strbuf_addf(why,
			    "CPython %d.%d (%s) is not supported: sonde reads Python stacks of CPython "
			    "3.8 to 3.13",
			    major, minor, mf->path);
		return CPYTHON_UNSUPPORTED;
	}
	cp->lay = *row;
	set_read_sizes(cp);
	/* An executable linked against libpython, seen before the loader mapped
	 * the library (just after exec): nothing to scan for here. */
	if (!runtime && ei.needs_libpython)
		return CPYTHON_NOT_PYTHON;
	if (!runtime) {
		uint64_t r = scan_for_runtime(cp, mf->name);
		if (!r)
			return CPYTHON_NOT_PYTHON; /* maybe not initialised yet */
		runtime = r;
		how = "scan of its writable memory";
	}
	if (major == 3 && minor >= 13) {
		if (!have_dbg && !rd(cp, runtime, &dbg, sizeof(dbg)) &&
		    !memcmp(dbg.cookie, "xdebugpy", 8) && ((dbg.version >> 16) & 0xffff) == 0x030d)
			have_dbg = 1;
		if (!have_dbg) {
			strbuf_addf(why, "CPython %d.%d (%s): _Py_DebugOffsets not found at _PyRuntime",
				    major, minor, mf->path);
			return CPYTHON_UNSUPPORTED;
		}
		if (dbg.free_threaded) {
			strbuf_addf(why, "CPython %d.%d (%s) is a free-threaded build, which sonde "
				    "cannot read yet", major, minor, mf->path);
			return CPYTHON_UNSUPPORTED;
		}
		if (cpython_layout_from_debug_313(&cp->lay, &dbg)) {
			strbuf_addf(why, "CPython %d.%d (%s): its _Py_DebugOffsets make no sense",
				    major, minor, mf->path);
			return CPYTHON_UNSUPPORTED;
		}
		set_read_sizes(cp);
	}
	/* Check the layout against the live process once there is an interpreter. */
	uint64_t head;
	if (rd_u64(cp, runtime + (uint64_t)cp->lay.runtime_interp_head, &head))
		return CPYTHON_ERROR;
	if (head && !check_interp(cp, head)) {
		uint64_t ts = 0;
		rd_u64(cp, head + (uint64_t)cp->lay.interp_tstate_head, &ts);
		if (ts) { /* no thread yet is fine; a thread not pointing back is not */
			strbuf_addf(why, "CPython %d.%d (%s): the interpreter state does not match "
				    "this version's layout",
				    major, minor, mf->path);
			return CPYTHON_UNSUPPORTED;
		}
	}
	cp->runtime = runtime;
	snprintf(cp->version, sizeof(cp->version), "%d.%d", major, minor);
	snprintf(cp->where, sizeof(cp->where), "%.400s (%.60s%s)", mf->path, how,
		 mf->deleted ? ", file deleted or replaced since it was mapped" : "");
	return CPYTHON_FOUND;
}

enum cpython_open_result cpython_open(pid_t pid, struct cpython_proc **out, struct strbuf *why)
{
	struct mapped_file files[8];
	int err;
	size_t n = find_python_maps(pid, files, 8, &err);
	if (err == -EACCES || err == -EPERM) {
		strbuf_addf(why, "reading /proc/%d/maps is not permitted: ", (int)pid);
		procfs_explain_denied(pid, why);
		return CPYTHON_DENIED;
	}
	if (err) {
		strbuf_addf(why, "process %d is gone (%s)", (int)pid, strerror(-err));
		return CPYTHON_ERROR;
	}
	if (!n) {
		strbuf_addf(why, "process %d has no python or libpython mapped", (int)pid);
		return CPYTHON_NOT_PYTHON;
	}
	struct cpython_proc *cp = xcalloc(1, sizeof(*cp));
	cp->pid = pid;
	cp->pages = xcalloc(1, sizeof(*cp->pages));
	cp->pages->gen = 1;
	cp->pthread_tid_off = -1;
	cpython_tids_init(&cp->tids, pid);
	enum cpython_open_result r = CPYTHON_NOT_PYTHON;
	struct strbuf last = STRBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		strbuf_reset(&last);
		enum cpython_open_result ri = try_file(cp, &files[i], &last);
		if (ri == CPYTHON_FOUND) {
			r = ri;
			break;
		}
		if (ri == CPYTHON_UNSUPPORTED || ri == CPYTHON_ERROR || ri == CPYTHON_DENIED) {
			r = ri;
			break;
		}
	}
	if (r == CPYTHON_FOUND) {
		*out = cp;
	} else {
		if (last.len)
			strbuf_addstr(why, last.buf);
		else
			strbuf_addf(why, "process %d: no CPython runtime found (yet) in %s", (int)pid,
				    files[0].path);
		cpython_tids_release(&cp->tids);
		free(cp->pages);
		free(cp);
	}
	strbuf_release(&last);
	return r;
}

static void codes_drop(struct cpython_proc *cp)
{
	for (size_t i = 0; i < cp->ncodes; i++) {
		free(cp->codes[i].func_s);
		free(cp->codes[i].file_s);
		free(cp->codes[i].lt);
	}
	cp->ncodes = 0;
	cp->code_bytes = 0;
	cp->code_gen++;
	hashmap_release(&cp->code_index);
	cp->code_index = (struct hashmap)HASHMAP_INIT;
}

void cpython_close(struct cpython_proc *cp)
{
	if (!cp)
		return;
	codes_drop(cp);
	free(cp->codes);
	free(cp->threads);
	free(cp->frames);
	free(cp->threads_prev);
	free(cp->frames_prev);
	free(cp->keys);
	free(cp->keys_prev);
	free(cp->walked);
	free(cp->recheck);
	free(cp->pages);
	free(cp->names);
	free(cp->names_next);
	hashmap_release(&cp->name_index);
	cpython_tids_release(&cp->tids);
	free(cp);
}

const char *cpython_version(const struct cpython_proc *cp)
{
	return cp->version;
}

const char *cpython_where(const struct cpython_proc *cp)
{
	return cp->where;
}

uint64_t cpython_code_generation(const struct cpython_proc *cp)
{
	return cp->code_gen;
}

uint64_t cpython_errors(const struct cpython_proc *cp)
{
	return cp->errors;
}

uint64_t cpython_rereads(const struct cpython_proc *cp)
{
	return cp->rereads;
}

uint64_t cpython_kept(const struct cpython_proc *cp)
{
	return cp->kept;
}

/* ---- sampling ---- */

static int is_code_type(struct cpython_proc *cp, uint64_t type)
{
	if (type && type == cp->code_type)
		return 1;
	uint64_t name_ptr;
	char name[8];
	if (rd_u64(cp, type + (uint64_t)cp->lay.type_name, &name_ptr) ||
	    rd(cp, name_ptr, name, 5) || memcmp(name, "code", 5))
		return 0;
	cp->code_type = type;
	return 1;
}

/* The cached entry for the code object at addr, reading it on a miss; NULL
 * when addr is not a readable code object. */
static const struct code_entry *code_get(struct cpython_proc *cp, uint64_t addr)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t buf[512];
	/* A code object does not change where sonde reads it: its page may be
	 * read ahead with the thread states, for the next sample's walks. */
	int noting = cp->pages->noting;
	cp->pages->noting = cp->pages->sampling;
	int r = cp->code_read > sizeof(buf) ? -1 : rd(cp, addr, buf, cp->code_read);
	cp->pages->noting = noting;
	if (r)
		return NULL;
	struct code_key k = {
		.addr = addr,
		.name = get_u64(buf, l->code_qualname >= 0 ? l->code_qualname : l->code_name),
		.file = get_u64(buf, l->code_filename),
		.table = get_u64(buf, l->code_linetable),
		.firstlineno = get_i32(buf, l->code_firstlineno),
	};
	int64_t *idx = hashmap_get(&cp->code_index, &k, sizeof(k));
	if (idx)
		return &cp->codes[*idx];
	if (!is_code_type(cp, get_u64(buf, l->object_type)))
		return NULL;
	char func[CPY_MAX_STRING + 1], file[CPY_MAX_STRING + 1];
	if (rd_unicode(cp, k.name, func, sizeof(func)) || rd_unicode(cp, k.file, file, sizeof(file)))
		return NULL;
	struct code_entry e = { .addr = addr, .name = k.name, .file = k.file, .table = k.table,
				.firstlineno = k.firstlineno };
	if (rd_bytes(cp, k.table, &e.lt, &e.lt_len))
		return NULL;
	e.func_s = xstrdup(func);
	e.file_s = xstrdup(file);
	cp->code_bytes += e.lt_len + strlen(func) + strlen(file) + sizeof(e);
	if (cp->ncodes == cp->acodes) {
		cp->acodes = cp->acodes ? cp->acodes * 2 : 256;
		cp->codes = xrealloc(cp->codes, cp->acodes * sizeof(*cp->codes));
	}
	cp->codes[cp->ncodes] = e;
	hashmap_put(&cp->code_index, &k, sizeof(k), (int64_t)cp->ncodes);
	return &cp->codes[cp->ncodes++];
}

static int code_line(const struct cpython_proc *cp, const struct code_entry *c, int64_t addr)
{
	int first = (int)c->firstlineno, line;
	if (cp->lay.minor <= 9)
		line = cpython_line_lnotab(c->lt, c->lt_len, first, addr);
	else if (cp->lay.minor == 10)
		line = cpython_line_310_or_previous(c->lt, c->lt_len, first, addr);
	else
		line = cpython_line_311_or_previous(c->lt, c->lt_len, first, addr);
	return line > 0 ? line : 0;
}

/* The next free slot of cp->frames, which holds *nframes now. */
static struct cpython_frame *frame_slot(struct cpython_proc *cp, size_t *nframes)
{
	if (*nframes == cp->aframes) {
		cp->aframes = cp->aframes ? cp->aframes * 2 : 1024;
		cp->frames = xrealloc(cp->frames, cp->aframes * sizeof(*cp->frames));
	}
	return &cp->frames[(*nframes)++];
}

static void push_frame(struct cpython_proc *cp, size_t *nframes, const struct code_entry *c, int line)
{
	*frame_slot(cp, nframes) = (struct cpython_frame){ .function = c->func_s, .file = c->file_s,
							   .line = line,
							   .code_id = (uint32_t)(c - cp->codes) };
}

/* The position of a frame in its code object's line table: pos is f_lasti
 * (3.8-3.10, sign-extended) or the instruction pointer (3.11+). */
static int64_t frame_addr(const struct cpython_proc *cp, uint64_t code, uint64_t pos)
{
	const struct cpython_layout *l = &cp->lay;
	if (l->frame_lasti >= 0)
		return l->minor == 10 ? (int64_t)pos * 2 : (int64_t)pos;
	uint64_t start = code + (uint64_t)l->code_adaptive;
	return pos >= start ? (int64_t)((pos - start) / 2) : -1;
}

/* Sleeps before walk number CPY_WALK_QUICK + k of a stack that keeps
 * tearing: a deep stack unwinding (hundreds of frames freed in a tenth of a
 * millisecond) outruns every walk started during it, so walking again at
 * once fails again; a moment later the stack is still. */
static void walk_pause(int k)
{
	int64_t ns = (int64_t)CPY_WALK_PAUSE_NS << (k < 8 ? k : 8);
	struct timespec ts = { 0, ns < CPY_WALK_PAUSE_MAX_NS ? ns : CPY_WALK_PAUSE_MAX_NS };
	nanosleep(&ts, NULL);
}

/* The thread's innermost frame, read now (not from any cache). */
/* The thread's innermost frame; *cf: the C frame it was read through
 * (3.11-3.12), 0 when none. */
static int read_top_frame(const struct cpython_proc *cp, uint64_t tstate, uint64_t *top,
			  uint64_t *cf)
{
	const struct cpython_layout *l = &cp->lay;
	*cf = 0;
	if (l->tstate_cframe < 0)
		return rd_direct(cp->pid, tstate + (uint64_t)l->tstate_frame, top, sizeof(*top));
	if (rd_direct(cp->pid, tstate + (uint64_t)l->tstate_cframe, cf, sizeof(*cf)))
		return -1;
	if (!*cf) {
		*top = 0;
		return 0;
	}
	return rd_direct(cp->pid, *cf + (uint64_t)l->cframe_current_frame, top, sizeof(*top));
}

/* Reads n remote ranges, in order, in as few system calls as the kernel
 * takes (tests: one read_hook call each). 0 when every byte was read. */
static int rd_many(const struct cpython_proc *cp, struct iovec *local, struct iovec *remote,
		   size_t n)
{
	if (read_hook) {
		for (size_t i = 0; i < n; i++)
			if (read_hook(read_hook_ctx, (uint64_t)(uintptr_t)remote[i].iov_base,
				      local[i].iov_base, local[i].iov_len))
				return -EFAULT;
		return 0;
	}
	for (size_t at = 0; at < n;) {
		size_t k = n - at < CPY_IOV_MAX ? n - at : CPY_IOV_MAX;
		size_t want = 0;
		for (size_t i = at; i < at + k; i++)
			want += local[i].iov_len;
		ssize_t got = process_vm_readv(cp->pid, local + at, k, remote + at, k, 0);
		if (got < 0 || (size_t)got != want)
			return -EFAULT;
		at += k;
	}
	return 0;
}

/* Is the frame in fb one a live chain can hold? <= 3.10: it is being
 * executed (a frame that returned and was freed, kept as its code's zombie or
 * in the free list chained through f_back, is not: the innermost one read
 * just as it returned would end the stack there, without <module>, even when
 * the same address is the innermost frame again after the walk). Only the
 * innermost frame is briefly not executing while it is pushed or popped: such
 * a walk is done again. 3.11+: its owner is a known one. */
static int frame_believable(const struct cpython_proc *cp, const uint8_t *fb)
{
	const struct cpython_layout *l = &cp->lay;
	if (l->frame_state >= 0 && fb[l->frame_state] != (uint8_t)l->frame_state_executing)
		return 0;
	if (l->frame_owner >= 0 && fb[l->frame_owner] > 3)
		return 0;
	return 1;
}

/* The index in cp->walked of the frame at addr; cp->nwalked when none. */
static size_t walked_index(const struct cpython_proc *cp, uint64_t addr)
{
	size_t i = 0;
	while (i < cp->nwalked && cp->walked[i].addr != addr)
		i++;
	return i;
}

/* 3.11+, after a walk: which of the frames walked is the thread's
 * innermost one now, and are those from there outward still what the walk
 * read? The innermost frame and every frame walked are read again, fresh,
 * in one system call. A data stack keeps a popped frame as it was, and a
 * frame pushed at the same address can hold other code (json.loads' frames
 * where json.dumps' were): a walk read while the thread returned and called
 * again can join frames of two moments, with the same innermost address
 * before and after it. So every frame of the stack given is checked, and
 * frames popped since the walk are left out (the stack is the one the
 * thread has now, outward from its innermost frame). A thread that went
 * deeper since is followed from its innermost frame up its callers to a
 * frame walked (CPY_RECHECK_CLIMB at most): a frame at an address the walk
 * did not see does not prove the walked ones live (json.encode's frame sits
 * past where json.decode's was, which stays as it was). Returns the index in
 * cp->walked of the outermost frame popped since plus one, 0 when none was
 * (the frames from there outward are the stack), or -1 when the frames kept
 * are not the thread's now (walk again). */
static int64_t walk_recheck(struct cpython_proc *cp, uint64_t tstate, uint64_t cf)
{
	const struct cpython_layout *l = &cp->lay;
	size_t n = cp->nwalked + 2, fr = cp->frame_read;
	if (cp->arecheck < cp->nwalked * fr) {
		cp->arecheck = cp->nwalked * fr * 2;
		cp->recheck = xrealloc(cp->recheck, cp->arecheck);
	}
	struct iovec *local = xmalloc(n * sizeof(*local)), *remote = xmalloc(n * sizeof(*remote));
	uint64_t top_cf = 0, top = 0;
	size_t k = 0;
	if (l->tstate_cframe < 0) {
		local[k] = (struct iovec){ &top, sizeof(top) };
		remote[k++] = (struct iovec){ (void *)(uintptr_t)(tstate + (uint64_t)l->tstate_frame),
					      sizeof(top) };
	} else {
		local[k] = (struct iovec){ &top_cf, sizeof(top_cf) };
		remote[k++] = (struct iovec){ (void *)(uintptr_t)(tstate + (uint64_t)l->tstate_cframe),
					      sizeof(top_cf) };
		local[k] = (struct iovec){ &top, sizeof(top) };
		remote[k++] = (struct iovec){
			(void *)(uintptr_t)(cf + (uint64_t)l->cframe_current_frame), sizeof(top)
		};
	}
	for (size_t i = 0; i < cp->nwalked; i++) {
		local[k] = (struct iovec){ cp->recheck + i * fr, fr };
		remote[k++] = (struct iovec){ (void *)(uintptr_t)cp->walked[i].addr, fr };
	}
	int64_t live = -1;
	if ((l->tstate_cframe >= 0 && !cf) || rd_many(cp, local, remote, k))
		goto out;
	/* Entered or left C code since (another C frame): its innermost
	 * frame is read through the new one. */
	if (l->tstate_cframe >= 0 && top_cf != cf && read_top_frame(cp, tstate, &top, &top_cf))
		goto out;
	size_t from = walked_index(cp, top);
	/* Pushed since (or other frames at other places): its callers, read
	 * fresh, lead to a frame walked, else the walk is not the thread's. */
	uint8_t fb_up[512];
	uint64_t up = top;
	for (int climb = 0; from == cp->nwalked && up && climb < CPY_RECHECK_CLIMB; climb++) {
		if (rd_direct(cp->pid, up, fb_up, fr) || !frame_believable(cp, fb_up))
			goto out;
		up = get_u64(fb_up, l->frame_back);
		from = walked_index(cp, up);
	}
	if (from == cp->nwalked)
		goto out;
	for (size_t i = from; i < cp->nwalked; i++) {
		const uint8_t *fb = cp->recheck + i * fr;
		const struct walked_frame *w = &cp->walked[i];
		if (get_u64(fb, l->frame_back) != w->back || get_u64(fb, l->frame_code) != w->code ||
		    !frame_believable(cp, fb))
			goto out;
	}
	live = (int64_t)from;
out:
	free(local);
	free(remote);
	return live;
}

/* Walks one thread's frames into cp->frames. 0; 1 when the stack changed
 * during the walk in a way that may mix two moments (read again); -1 on an
 * unreadable or inconsistent chain. */
static int walk_frames(struct cpython_proc *cp, uint64_t tstate, size_t *nframes)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t top, cf;
	if (read_top_frame(cp, tstate, &top, &cf))
		return -1;
	uint64_t frame = top;
	uint8_t fb[512];
	if (cp->frame_read > sizeof(fb))
		return -1;
	cp->nwalked = 0;
	uint64_t last_code = 0; /* a recursion: the same code object frame after frame */
	const struct code_entry *last_c = NULL;
	int shim = 0; /* the frame just walked was a C-stack entry frame */
	for (int depth = 0; frame; depth++) {
		if (depth >= CPY_MAX_DEPTH || rd(cp, frame, fb, cp->frame_read) ||
		    !frame_believable(cp, fb))
			return -1;
		uint64_t next = get_u64(fb, l->frame_back);
		uint64_t code = get_u64(fb, l->frame_code);
		if (next == frame)
			return -1;
		if (cp->nwalked == cp->awalked) {
			cp->awalked = cp->awalked ? cp->awalked * 2 : 256;
			cp->walked = xrealloc(cp->walked, cp->awalked * sizeof(*cp->walked));
		}
		cp->walked[cp->nwalked++] = (struct walked_frame){ frame, next, code, *nframes };
		shim = l->frame_owner >= 0 && l->frame_owner_cstack >= 0 &&
		       fb[l->frame_owner] == (uint8_t)l->frame_owner_cstack;
		if (shim) {
			frame = next;
			continue; /* a C-stack shim frame, no code */
		}
		const struct code_entry *c = code && code == last_code ? last_c
					     : code ? code_get(cp, code) : NULL;
		last_code = code;
		last_c = c;
		if (!c) {
			if (l->minor >= 13) { /* f_executable need not be code */
				frame = next;
				continue;
			}
			return -1;
		}
		uint64_t pos = l->frame_lasti >= 0 ? (uint64_t)(int64_t)get_i32(fb, l->frame_lasti)
						   : get_u64(fb, l->frame_instr);
		push_frame(cp, nframes, c, code_line(cp, c, frame_addr(cp, code, pos)));
		frame = next;
	}
	/* 3.12+: all Python code runs inside _PyEval_EvalFrameDefault, whose
	 * entry frame (owned by the C stack) is the outermost of every chain; a
	 * chain ending elsewhere ran into a frame rewritten while it was read. */
	if (l->frame_owner_cstack >= 0 && cp->nwalked && !shim)
		return -1;
	/* 3.11: likewise, the outermost frame was entered from C (is_entry); a
	 * chain ending at a frame called from Python ran into one being pushed. */
	if (l->frame_is_entry >= 0 && cp->nwalked && !fb[l->frame_is_entry])
		return -1;
	/* <= 3.10: each frame was executing when read, so its f_back was its
	 * live caller then, and a caller outlives its callees: the chain is one
	 * the thread had, top moved or not (a caller's address reused by a new
	 * frame within the walk gives the same-looking stack in a recursion). */
	if (l->frame_state >= 0 || !cp->nwalked)
		return 0;
	int64_t live = walk_recheck(cp, tstate, cf);
	if (live < 0)
		return 1;
	if (live > 0 && (size_t)live < cp->nwalked) {
		/* Popped since the walk: the stack from the innermost frame now. */
		size_t start = cp->walked[0].pushed, cut = cp->walked[live].pushed;
		memmove(cp->frames + start, cp->frames + cut,
			(*nframes - cut) * sizeof(*cp->frames));
		*nframes -= cut - start;
		cp->popped++;
	}
	return 0;
}

/* ---- threading's thread names ---- */

/* threading keeps every Thread it knows (MainThread and dummies included) in
 * threading._active, ident -> Thread, and its name in the instance attribute
 * _name. sonde follows sys.modules -> "threading" -> its __dict__ ->
 * "_active", then each Thread's _name, through the dict and instance layouts
 * of each version. Looked at when a thread not seen before shows up (a few
 * tries while a new thread registers itself) and every CPY_NAMES_EVERY_NS
 * (a name can be set after the start). Anything that does not check out
 * (type names, sizes, counts) gives no name: the caller falls back to comm. */

#define TPFLAGS_INLINE_VALUES (1UL << 2) /* 3.13 */
#define TPFLAGS_MANAGED_DICT (1UL << 4)	 /* 3.11+ */
#define TPFLAGS_HEAPTYPE (1UL << 9)

enum { TY_DICT, TY_STR, TY_INT, TY_MODULE };
static const char *const ty_names[CPY_TYPES] = { "dict", "str", "int", "module" };

/* Is obj an instance of the builtin type ty (by its tp_name, a static type)? */
static int obj_is(struct cpython_proc *cp, uint64_t obj, int ty)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t type, name_ptr, flags;
	char name[8];
	size_t n = strlen(ty_names[ty]) + 1;
	if (!obj || (obj & 7) || rd_u64(cp, obj + (uint64_t)l->object_type, &type) || !type)
		return 0;
	if (type == cp->types[ty])
		return 1;
	if (rd_u64(cp, type + (uint64_t)l->type_name, &name_ptr) || rd(cp, name_ptr, name, n) ||
	    memcmp(name, ty_names[ty], n) || rd_u64(cp, type + (uint64_t)l->type_flags, &flags) ||
	    (flags & TPFLAGS_HEAPTYPE))
		return 0;
	cp->types[ty] = type;
	return 1;
}

/* Is s the str `want` (ASCII)? */
static int str_is(struct cpython_proc *cp, uint64_t s, const char *want)
{
	const struct cpython_layout *l = &cp->lay;
	size_t n = strlen(want);
	uint8_t hdr[64];
	char data[64];
	if (n > sizeof(data) || (size_t)l->unicode_state + 4 > sizeof(hdr) || (s & 7) ||
	    rd(cp, s, hdr, (size_t)l->unicode_state + 4))
		return 0;
	uint32_t state = (uint32_t)get_i32(hdr, l->unicode_state);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (get_u64(hdr, l->unicode_length) != n || kind != 1 || !compact || !ascii)
		return 0;
	return !rd(cp, s + (uint64_t)l->unicode_ascii_size, data, n) && !memcmp(data, want, n) &&
	       obj_is(cp, s, TY_STR);
}

/* Calls visit for each entry of the keys object at keys whose key is set,
 * until it returns nonzero. visit gets the entry's index, key and value (the
 * entry's own, meaningless in a split table). Its nonzero result, 0 when
 * none, -1 when the keys object cannot be read or believed. */
typedef int (*dict_visit_fn)(struct cpython_proc *cp, void *arg, uint64_t index, uint64_t key,
			     uint64_t value);

static int keys_each(struct cpython_proc *cp, uint64_t keys, dict_visit_fn visit, void *arg)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t hdr[64];
	struct cpython_dict_keys k;
	if (!keys || (keys & 7) || (size_t)l->keys_indices > sizeof(hdr) ||
	    rd(cp, keys, hdr, (size_t)l->keys_indices) ||
	    cpython_dict_keys_decode(l, hdr, (size_t)l->keys_indices, &k) ||
	    k.nentries > CPY_MAX_DICT)
		return -1;
	uint8_t buf[CPY_DICT_CHUNK * 24];
	for (uint64_t i = 0; i < k.nentries;) {
		uint64_t n = k.nentries - i < CPY_DICT_CHUNK ? k.nentries - i : CPY_DICT_CHUNK;
		if (rd(cp, keys + k.entries_off + i * k.entry_size, buf, n * k.entry_size))
			return -1;
		for (uint64_t j = 0; j < n; j++, i++) {
			const uint8_t *e = buf + j * k.entry_size;
			uint64_t key = get_u64(e, k.key_off);
			int r = key ? visit(cp, arg, i, key, get_u64(e, k.value_off)) : 0;
			if (r)
				return r;
		}
	}
	return 0;
}

struct key_find {
	const char *key;
	uint64_t *cached; /* the key's str object when last found: compared first */
	int by_pointer;
	uint64_t values; /* split table: the values array, else 0 */
	uint64_t max_index;
	uint64_t value;
};

static int find_visit(struct cpython_proc *cp, void *arg, uint64_t index, uint64_t key,
		      uint64_t value)
{
	struct key_find *f = arg;
	if (f->by_pointer ? key != *f->cached : key == *f->cached)
		return 0;
	if (!str_is(cp, key, f->key))
		return 0;
	if (f->values) {
		if (index >= f->max_index ||
		    rd_u64(cp, f->values + (uint64_t)cp->lay.values_values + 8 * index, &value))
			return -1;
	}
	if (!value)
		return 0;
	*f->cached = key;
	f->value = value;
	return 1;
}

/* The value of str key `key` in the keys object keys (values: a split
 * table's values, else 0). Keys are interned, so the str object last found
 * (*cached) is looked for first; then every key's text. */
static int keys_get(struct cpython_proc *cp, uint64_t keys, uint64_t values, uint64_t max_index,
		    const char *key, uint64_t *cached, uint64_t *value)
{
	struct key_find f = { .key = key, .cached = cached, .by_pointer = 1, .values = values,
			      .max_index = max_index };
	int r = 0;
	if (*cached)
		r = keys_each(cp, keys, find_visit, &f);
	if (r == 0) {
		f.by_pointer = 0;
		r = keys_each(cp, keys, find_visit, &f);
	}
	if (r != 1)
		return -1;
	*value = f.value;
	return 0;
}

static int dict_get(struct cpython_proc *cp, uint64_t dict, const char *key, uint64_t *cached,
		    uint64_t *value)
{
	uint64_t keys, values;
	if (!obj_is(cp, dict, TY_DICT) || rd_u64(cp, dict + (uint64_t)cp->lay.dict_keys, &keys) ||
	    rd_u64(cp, dict + (uint64_t)cp->lay.dict_values, &values))
		return -1;
	return keys_get(cp, keys, values, UINT64_MAX, key, cached, value);
}

/* The instance attribute `key` of obj, from its __dict__: at tp_dictoffset
 * (<= 3.10 and types without a managed dict); 3.11 a values pointer 4 words
 * before the object, else the dict 3 words before; 3.12 one tagged word 3
 * before (low bit set: values - 1); 3.13 the dict 3 words before, else the
 * values inline after tp_basicsize. Values go with the type's shared keys. */
static int attr_get(struct cpython_proc *cp, uint64_t obj, const char *key, uint64_t *cached,
		    uint64_t *value)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t type, flags, dict = 0, values = 0, keys, max_index = UINT64_MAX;
	if (!obj || (obj & 7) || obj < 64 || rd_u64(cp, obj + (uint64_t)l->object_type, &type) ||
	    rd_u64(cp, type + (uint64_t)l->type_flags, &flags))
		return -1;
	if (l->minor < 11 || !(flags & TPFLAGS_MANAGED_DICT)) {
		int64_t off;
		if (rd(cp, type + (uint64_t)l->type_dictoffset, &off, sizeof(off)) || off <= 0 ||
		    off > 4096 || rd_u64(cp, obj + (uint64_t)off, &dict))
			return -1;
		return dict_get(cp, dict, key, cached, value);
	}
	uint64_t slot;
	if (rd_u64(cp, obj - 24, &slot))
		return -1;
	if (l->minor == 11) {
		dict = slot;
		if (rd_u64(cp, obj - 32, &values))
			return -1;
	} else if (l->minor == 12) {
		if (slot & 1)
			values = slot + 1;
		else
			dict = slot;
	} else {
		dict = slot;
		if (!dict && (flags & TPFLAGS_INLINE_VALUES)) {
			int64_t basic;
			uint8_t vh[4]; /* capacity, size, embedded, valid */
			if (rd(cp, type + (uint64_t)l->type_basicsize, &basic, sizeof(basic)) ||
			    basic <= 0 || basic > 4096 || rd(cp, obj + (uint64_t)basic, vh, sizeof(vh)) ||
			    !vh[3])
				return -1;
			values = obj + (uint64_t)basic;
			max_index = vh[0];
		}
	}
	if (values) {
		if (!(flags & TPFLAGS_HEAPTYPE) ||
		    rd_u64(cp, type + (uint64_t)l->heaptype_cached_keys, &keys))
			return -1;
		return keys_get(cp, keys, values, max_index, key, cached, value);
	}
	return dict_get(cp, dict, key, cached, value);
}

/* A non-negative int that fits 64 bits (30-bit digits). */
static int long_get(struct cpython_proc *cp, uint64_t obj, uint64_t *out)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t b[64];
	if ((size_t)l->long_digit + 12 > sizeof(b) || !obj_is(cp, obj, TY_INT) ||
	    rd(cp, obj, b, (size_t)l->long_digit + 12))
		return -1;
	uint64_t ndigits;
	if (l->minor >= 12) { /* lv_tag: digits << 3 | sign (0 positive, 1 zero, 2 negative) */
		uint64_t tag = get_u64(b, l->long_size);
		if ((tag & 3) == 2)
			return -1;
		ndigits = tag >> 3;
	} else {
		int64_t size = (int64_t)get_u64(b, l->long_size);
		if (size < 0)
			return -1;
		ndigits = (uint64_t)size;
	}
	if (ndigits > 3)
		return -1;
	uint64_t v = 0;
	for (uint64_t i = ndigits; i-- > 0;) {
		uint32_t d = (uint32_t)get_i32(b, l->long_digit + (int64_t)(4 * i));
		if ((d >> 30) || (i == 2 && (d >> 4)))
			return -1;
		v = (v << 30) | d;
	}
	*out = v;
	return 0;
}

static pid_t host_tid(struct cpython_proc *cp, pid_t tid);

struct names_walk {
	struct thread_name *out;
	size_t n, cap;
};

static int active_visit(struct cpython_proc *cp, void *arg, uint64_t index, uint64_t key,
			uint64_t value)
{
	struct names_walk *w = arg;
	uint64_t ident, name;
	(void)index;
	if (w->n >= w->cap)
		return 1;
	struct thread_name *tn = &w->out[w->n];
	if (!value || long_get(cp, key, &ident) || attr_get(cp, value, "_name", &cp->key_name, &name) ||
	    !obj_is(cp, name, TY_STR) || rd_unicode(cp, name, tn->name, sizeof(tn->name)) ||
	    !tn->name[0])
		return 0;
	for (char *c = tn->name; *c; c++) /* never a control character in a report */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	tn->ident = ident;
	tn->tid = 0;
	tn->tries = 0;
	/* Thread._native_id (3.8+): the OS thread the name is of, read with it. */
	uint64_t native_id, tid;
	if (!attr_get(cp, value, "_native_id", &cp->key_native_id, &native_id) &&
	    !long_get(cp, native_id, &tid) && tid > 0 && tid < (1u << 30))
		tn->tid = host_tid(cp, (pid_t)tid); /* the samples' tids are the host's */
	for (size_t i = 0; i < w->n; i++) /* a subinterpreter's threading: the first wins */
		if (w->out[i].ident == ident)
			return 0;
	w->n++;
	return 0;
}

/* threading._active of the interpreter interp into w. */
static void names_of_interp(struct cpython_proc *cp, uint64_t interp, struct names_walk *w)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t modules, mod, md, active, keys, values;
	if (l->interp_modules < 0 || rd_u64(cp, interp + (uint64_t)l->interp_modules, &modules) ||
	    dict_get(cp, modules, "threading", &cp->key_threading, &mod) ||
	    !obj_is(cp, mod, TY_MODULE) || rd_u64(cp, mod + (uint64_t)l->module_dict, &md) ||
	    dict_get(cp, md, "_active", &cp->key_active, &active) || !obj_is(cp, active, TY_DICT) ||
	    rd_u64(cp, active + (uint64_t)l->dict_keys, &keys) ||
	    rd_u64(cp, active + (uint64_t)l->dict_values, &values) || values)
		return;
	keys_each(cp, keys, active_visit, w);
}

static const struct thread_name *name_find(const struct cpython_proc *cp, uint64_t ident)
{
	int64_t *i = hashmap_get((struct hashmap *)&cp->name_index, &ident, sizeof(ident));
	return i ? &cp->names[*i] : NULL;
}

/* The name of (ident, tid) when it is known to be that thread's: NULL when
 * the ident's name was read for another OS thread (an ident reused). */
static const struct thread_name *name_of_thread(const struct cpython_proc *cp, uint64_t ident,
						pid_t tid)
{
	const struct thread_name *tn = name_find(cp, ident);
	return tn && (!tn->tid || !tid || tn->tid == tid) ? tn : NULL;
}

/* Binds each name read for idents[0..n) to its OS thread tids[i]. */
static void names_bind(struct cpython_proc *cp, const uint64_t *idents, const pid_t *tids,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t *k = hashmap_get(&cp->name_index, &idents[i], sizeof(idents[i]));
		if (k && !cp->names[*k].tid)
			cp->names[*k].tid = tids[i];
	}
}

/* Reads the names again when due: every CPY_NAMES_EVERY_NS, or sooner when
 * one of idents[0..n) (the threads of this sample, OS threads tids[0..n)) was
 * never looked for, was not found yet in its first few tries (a new thread
 * registers itself in _active shortly after its thread state exists), or is a
 * new thread with a finished one's ident. */
static void names_update(struct cpython_proc *cp, const uint64_t *idents, const pid_t *tids,
			 size_t n)
{
	int64_t now = clock_mono_ns(), age = now - cp->names_at_ns;
	int due = !cp->names_at_ns || age >= CPY_NAMES_EVERY_NS;
	for (size_t i = 0; i < n && !due && age >= CPY_NAMES_RETRY_NS; i++) {
		const struct thread_name *tn = name_find(cp, idents[i]);
		due = !tn || (!tn->name[0] && tn->tries < CPY_NAMES_TRIES) ||
		      !name_of_thread(cp, idents[i], tids[i]);
	}
	if (!due) {
		names_bind(cp, idents, tids, n);
		return;
	}
	/* Room for what was there, doubled: a process with many threads gets
	 * them all within a few reads; a small one stays small. */
	size_t cap = 2 * (cp->nnames + n);
	cap = cap < 32 ? 32 : cap > 2 * CPY_MAX_THREADS ? 2 * CPY_MAX_THREADS : cap;
	cp->names_next = xrealloc(cp->names_next, cap * sizeof(*cp->names_next));
	struct names_walk w = { .out = cp->names_next,
				.cap = cap - n < CPY_MAX_THREADS ? cap - n : CPY_MAX_THREADS };
	uint64_t interp;
	if (!rd_u64(cp, cp->runtime + (uint64_t)cp->lay.runtime_interp_head, &interp))
		for (int ni = 0; interp && ni < CPY_MAX_INTERPS; ni++) {
			names_of_interp(cp, interp, &w);
			if (rd_u64(cp, interp + (uint64_t)cp->lay.interp_next, &interp))
				break;
		}
	size_t found = w.n;
	/* Threads threading does not (yet) know: remembered, with their tries. */
	for (size_t i = 0; i < n && w.n < cap; i++) {
		size_t k;
		for (k = 0; k < w.n && w.out[k].ident != idents[i]; k++)
			;
		if (k < w.n)
			continue;
		const struct thread_name *old = name_of_thread(cp, idents[i], tids[i]);
		w.out[w.n] = (struct thread_name){ .ident = idents[i],
						   .tries = (old ? old->tries : 0) + 1 };
		w.n++;
	}
	struct thread_name *t = cp->names;
	cp->names = cp->names_next;
	cp->names_next = t;
	cp->nnames = w.n;
	hashmap_release(&cp->name_index);
	cp->name_index = (struct hashmap)HASHMAP_INIT;
	for (size_t i = 0; i < w.n; i++)
		hashmap_put(&cp->name_index, &cp->names[i].ident, sizeof(uint64_t), (int64_t)i);
	names_bind(cp, idents, tids, n);
	cp->names_at_ns = now;
	log_debug("pid %d: %zu thread names from threading in %lld us", (int)cp->pid, found,
		  (long long)((clock_mono_ns() - now) / 1000));
}

/* The process's threads as it numbers them, listed once per sample. */
static const pid_t *tids_listed(struct cpython_proc *cp, size_t *n)
{
	if (!cp->tids_fresh) {
		cpython_tids_refresh(&cp->tids);
		cp->tids_fresh = 1;
	}
	return cpython_tids_ns(&cp->tids, n);
}

/* sonde's id of the thread the process calls tid (a PID namespace numbers
 * its threads its own way); 0 when no such thread is listed. */
static pid_t host_tid(struct cpython_proc *cp, pid_t tid)
{
	if (!cp->tids.nested || tid <= 0)
		return tid;
	pid_t h = cpython_tids_host(&cp->tids, tid);
	if (!h && !cp->tids_fresh) { /* a thread new since the last listing */
		size_t n;
		tids_listed(cp, &n);
		h = cpython_tids_host(&cp->tids, tid);
	}
	return h;
}

static int tid_known(const pid_t *tids, size_t n, int32_t v)
{
	for (size_t i = 0; i < n; i++)
		if (tids[i] == v)
			return 1;
	return 0;
}

/* <= 3.10 keeps only pthread_self(); the kernel tid sits inside glibc's
 * struct pthread at an offset glibc does not publish: learn it once by
 * finding, in every thread's struct, the same offset holding one of the
 * process's tids (all different). */
static void learn_pthread_tid_offset(struct cpython_proc *cp, const uint64_t *pthreads, size_t n)
{
	size_t nt;
	const pid_t *tids = tids_listed(cp, &nt);
	if (!nt || !n)
		return;
	/* Distinct structs only: a thread being created briefly carries its
	 * creator's pthread_self(). */
	uint64_t uniq[8];
	size_t m = 0;
	for (size_t i = 0; i < n && m < 8; i++) {
		size_t j = 0;
		while (j < m && uniq[j] != pthreads[i])
			j++;
		if (j == m && pthreads[i])
			uniq[m++] = pthreads[i];
	}
	if (!m)
		return;
	uint8_t(*bufs)[CPY_PTHREAD_SCAN] = xmalloc(m * CPY_PTHREAD_SCAN);
	for (size_t i = 0; i < m; i++)
		if (rd(cp, uniq[i], bufs[i], CPY_PTHREAD_SCAN)) {
			free(bufs);
			return;
		}
	/* glibc 2.x on x86-64 keeps it at 0x2d0: try that first. */
	int64_t order[CPY_PTHREAD_SCAN / 4 + 1];
	size_t no = 0;
	order[no++] = 0x2d0;
	for (int64_t off = 0; off + 4 <= CPY_PTHREAD_SCAN; off += 4)
		if (off != 0x2d0)
			order[no++] = off;
	for (size_t k = 0; k < no; k++) {
		int64_t off = order[k];
		int ok = 1;
		for (size_t i = 0; i < m && ok; i++) {
			int32_t v = get_i32(bufs[i], off);
			ok = v > 0 && tid_known(tids, nt, v);
			for (size_t j = 0; j < i && ok; j++)
				ok = get_i32(bufs[j], off) != v;
		}
		if (ok) {
			cp->pthread_tid_off = off;
			log_debug("pid %d: the tid is at 0x%llx of struct pthread (%zu threads agree)",
				  (int)cp->pid, (long long)off, m);
			break;
		}
	}
	free(bufs);
}

/* A learnt offset is checked against threading's own word: each Thread's
 * _native_id. When two or more threads have one and not one agrees with the
 * tid read at the offset, the offset was learnt at a torn moment (it would
 * give every sample another thread's tid, and no thread its name): it is
 * forgotten and learnt again. A single disagreement is an ident reused by a
 * new thread, read before threading's entry for it. */
static void check_pthread_tid_offset(struct cpython_proc *cp, const uint64_t *pthreads,
				     const pid_t *tids, size_t n)
{
	size_t agree = 0, disagree = 0;
	for (size_t i = 0; i < n; i++) {
		const struct thread_name *tn = name_find(cp, pthreads[i]);
		if (!tn || !tn->tid || !tids[i])
			continue;
		if (tn->tid == tids[i])
			agree++;
		else
			disagree++;
	}
	if (agree || disagree < 2)
		return;
	log_info("pid %d: the tid at 0x%llx of struct pthread disagrees with threading's "
		 "native ids of %zu threads: learning it again",
		 (int)cp->pid, (long long)cp->pthread_tid_off, disagree);
	cp->pthread_tid_off = -1;
	for (size_t i = 0; i < n; i++)
		cp->threads[i].tid = 0;
}

/* ---- keeping the stacks of threads that did not run ---- */

/* The GIL interp uses, read now; out->gil is 0 when it cannot be told. */
static void gil_read(struct cpython_proc *cp, uint64_t interp, struct cpython_gil_seen *out)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t gil = 0, holder, switches;
	memset(out, 0, sizeof(*out));
	if (l->gil_switch_number < 0 || l->gil_last_holder < 0)
		return;
	if (l->interp_gil >= 0) {
		if (rd_u64(cp, interp + (uint64_t)l->interp_gil, &gil))
			return;
	} else if (l->runtime_gil >= 0) {
		gil = cp->runtime + (uint64_t)l->runtime_gil;
	}
	if (!gil || rd_u64(cp, gil + (uint64_t)l->gil_last_holder, &holder) ||
	    rd_u64(cp, gil + (uint64_t)l->gil_switch_number, &switches))
		return;
	*out = (struct cpython_gil_seen){ .gil = gil, .holder = holder, .switches = switches };
}

/* The threads that may have run Python since the previous sample under the
 * GIL now (cpython_gil_ran), or -1: any of them. */
static int gil_ran_since(const struct cpython_proc *cp, const struct cpython_gil_seen *now,
			 uint64_t ran[2])
{
	if (!cp->nprev || cp->prev_code_gen != cp->code_gen || !now->gil)
		return -1;
	for (size_t i = 0; i < CPY_MAX_INTERPS; i++)
		if (cp->gils_prev[i].gil == now->gil)
			return cpython_gil_ran(&cp->gils_prev[i], now, ran);
	return -1;
}

/* The previous sample's read of the thread state k, when it is the same
 * thread with the same innermost frame and its stack was read whole; NULL
 * otherwise. The list keeps its order: look at index hint first. */
static const struct cpython_thread *prev_thread(const struct cpython_proc *cp,
						const struct thread_key *k, size_t hint)
{
	for (size_t j = 0; j < cp->nprev; j++) {
		size_t i = (hint + j) % cp->nprev;
		const struct thread_key *p = &cp->keys_prev[i];
		if (p->tstate != k->tstate)
			continue;
		if (p->pthread != k->pthread || p->native != k->native || p->top != k->top ||
		    !cp->threads_prev[i].ok)
			return NULL;
		return &cp->threads_prev[i];
	}
	return NULL;
}

/* The last sample becomes the previous one; the buffers it leaves are
 * written by this one. */
static void sample_swap(struct cpython_proc *cp, size_t nlast)
{
	struct cpython_thread *t = cp->threads;
	cp->threads = cp->threads_prev;
	cp->threads_prev = t;
	struct cpython_frame *f = cp->frames;
	cp->frames = cp->frames_prev;
	cp->frames_prev = f;
	size_t a = cp->aframes;
	cp->aframes = cp->aframes_prev;
	cp->aframes_prev = a;
	struct thread_key *k = cp->keys;
	cp->keys = cp->keys_prev;
	cp->keys_prev = k;
	memcpy(cp->gils_prev, cp->gils, sizeof(cp->gils));
	memset(cp->gils, 0, sizeof(cp->gils));
	cp->nprev = nlast;
}

/* Reads the stack of the thread whose state (tstate_read bytes) is ts at t
 * into th, walking it again while it moves under the walk. */
static void thread_walk(struct cpython_proc *cp, uint64_t t, struct cpython_thread *th,
			size_t *nframes)
{
	int noting = cp->pages->noting;
	cp->pages->noting = 0; /* a stack's pages are read fresh, when walked */
	/* A stack that moved, or could not be read, while being read is read
	 * again at once, fresh (a few microseconds later). */
	int w = 1;
	for (int attempt = 0; attempt < CPY_WALK_TRIES && w; attempt++) {
		if (attempt) {
			cp->rereads++;
			if (++cp->pages->gen == 0)
				cp->pages->gen = 1;
		}
		if (attempt >= CPY_WALK_QUICK)
			walk_pause(attempt - CPY_WALK_QUICK);
		*nframes = th->first;
		w = walk_frames(cp, t, nframes);
	}
	if (w) {
		*nframes = th->first;
		cp->errors++;
	} else {
		th->ok = 1;
	}
	th->walked = 1;
	cp->pages->noting = noting;
}

int cpython_sample(struct cpython_proc *cp, struct cpython_sample *out)
{
	const struct cpython_layout *l = &cp->lay;
	if (cp->ncodes > CPY_MAX_CODES || cp->code_bytes > CPY_MAX_CODE_BYTES)
		codes_drop(cp);
	if (!cp->threads) {
		cp->threads = xcalloc(CPY_MAX_THREADS, sizeof(*cp->threads));
		cp->threads_prev = xcalloc(CPY_MAX_THREADS, sizeof(*cp->threads_prev));
		cp->keys = xcalloc(CPY_MAX_THREADS, sizeof(*cp->keys));
		cp->keys_prev = xcalloc(CPY_MAX_THREADS, sizeof(*cp->keys_prev));
	}
	sample_swap(cp, cp->nlast);
	cp->nlast = 0;
	memset(out, 0, sizeof(*out));
	struct page_cache *pc = cp->pages;
	if (++pc->gen == 0) /* wrapped: 0 marks empty slots */
		pc->gen = 1;
	memcpy(pc->ahead, pc->noted, pc->nnoted * sizeof(pc->noted[0]));
	pc->nahead = pc->nnoted;
	pc->nnoted = 0;
	if (++pc->samples == 0)
		pc->samples = 1;
	pages_read_ahead(pc, cp->pid);
	pc->noting = 1;
	pc->sampling = 1;
	cp->tids_fresh = 0;
	uint64_t interp;
	int r = rd_u64(cp, cp->runtime + (uint64_t)l->runtime_interp_head, &interp);
	if (r) {
		pc->noting = pc->sampling = 0;
		return r == -ESRCH || r == -EPERM ? -1 : 0;
	}
	uint64_t gil_holder = 0;
	int gil_known = 0;
	if (l->runtime_tstate_current >= 0)
		gil_known = !rd_u64(cp, cp->runtime + (uint64_t)l->runtime_tstate_current, &gil_holder);
	size_t nthreads = 0, nframes = 0;
	uint64_t pthreads[CPY_MAX_THREADS];
	uint8_t ts[1024];
	if (cp->tstate_read > sizeof(ts)) {
		pc->noting = pc->sampling = 0;
		return 0;
	}
	for (int ni = 0; interp && ni < CPY_MAX_INTERPS; ni++) {
		if (l->interp_gil >= 0) {
			uint64_t gil;
			int32_t locked;
			gil_known = 0;
			gil_holder = 0;
			if (!rd_u64(cp, interp + (uint64_t)l->interp_gil, &gil) && gil &&
			    !rd(cp, gil + (uint64_t)l->gil_locked, &locked, sizeof(locked)) &&
			    !rd_u64(cp, gil + (uint64_t)l->gil_last_holder, &gil_holder)) {
				gil_known = 1;
				if (!locked)
					gil_holder = 0;
			}
		}
		/* Read before any stack: a thread that did not hold it between
		 * the last sample's read and this one has the stack walked then. */
		gil_read(cp, interp, &cp->gils[ni]);
		uint64_t ran[2];
		int nran = gil_ran_since(cp, &cp->gils[ni], ran);
		uint64_t t;
		if (rd_u64(cp, interp + (uint64_t)l->interp_tstate_head, &t))
			break;
		for (; t && nthreads < CPY_MAX_THREADS; t = get_u64(ts, l->tstate_next)) {
			if (rd(cp, t, ts, cp->tstate_read))
				break;
			struct cpython_thread *th = &cp->threads[nthreads];
			memset(th, 0, sizeof(*th));
			th->tstate = t;
			th->holds_gil = gil_known ? t == gil_holder : -1;
			struct thread_key *key = &cp->keys[nthreads];
			*key = (struct thread_key){
				.tstate = t,
				.pthread = get_u64(ts, l->tstate_thread_id),
				.native = l->tstate_native_thread_id >= 0
						  ? get_u64(ts, l->tstate_native_thread_id)
						  : 0,
			};
			int64_t top_off = l->tstate_cframe >= 0 ? l->tstate_cframe : l->tstate_frame;
			if (top_off >= 0)
				key->top = get_u64(ts, top_off);
			if (l->tstate_native_thread_id >= 0)
				th->tid = host_tid(cp, (pid_t)key->native);
			pthreads[nthreads] = key->pthread;
			th->first = nframes;
			const struct cpython_thread *kept =
				nran > 0 && t != ran[0] && (nran < 2 || t != ran[1])
					? prev_thread(cp, key, nthreads)
					: NULL;
			if (kept) {
				for (size_t i = 0; i < kept->n; i++)
					*frame_slot(cp, &nframes) = cp->frames_prev[kept->first + i];
				th->ok = 1;
				cp->kept++;
			} else {
				thread_walk(cp, t, th, &nframes);
			}
			th->n = nframes - th->first;
			nthreads++;
			if (get_u64(ts, l->tstate_next) == t)
				break;
		}
		if (rd_u64(cp, interp + (uint64_t)l->interp_next, &interp))
			break;
	}
	pc->noting = 0;
	pc->sampling = 0;
	if (l->tstate_native_thread_id < 0 && nthreads) {
		/* Until learnt, try again every 16th sample (a torn moment can fool it). */
		if (cp->pthread_tid_off < 0 && cp->tid_tries++ % 16 == 0)
			learn_pthread_tid_offset(cp, pthreads, nthreads);
		for (size_t i = 0; i < nthreads && cp->pthread_tid_off >= 0; i++) {
			int32_t tid;
			if (!rd(cp, pthreads[i] + (uint64_t)cp->pthread_tid_off, &tid, sizeof(tid)))
				cp->threads[i].tid = host_tid(cp, tid);
		}
	}
	pid_t tids[CPY_MAX_THREADS];
	for (size_t i = 0; i < nthreads; i++)
		tids[i] = cp->threads[i].tid;
	names_update(cp, pthreads, tids, nthreads);
	if (l->tstate_native_thread_id < 0 && cp->pthread_tid_off >= 0)
		check_pthread_tid_offset(cp, pthreads, tids, nthreads);
	for (size_t i = 0; i < nthreads; i++) {
		const struct thread_name *tn = name_of_thread(cp, pthreads[i], tids[i]);
		cp->threads[i].name = tn && tn->name[0] ? tn->name : NULL;
	}
	cp->nlast = nthreads;
	cp->prev_code_gen = cp->code_gen;
	out->threads = cp->threads;
	out->nthreads = nthreads;
	out->frames = cp->frames;
	out->nframes = nframes;
	return 0;
}

int cpython_frame_at(struct cpython_proc *cp, uint64_t code, uint64_t pos, uint64_t ident,
		     struct cpython_frame *out)
{
	if (cp->ncodes > CPY_MAX_CODES || cp->code_bytes > CPY_MAX_CODE_BYTES)
		codes_drop(cp);
	if (++cp->pages->gen == 0) /* read the code object now, not from a sample's pages */
		cp->pages->gen = 1;
	const struct code_entry *c = code ? code_get(cp, code) : NULL;
	if (!c || CPYTHON_CODE_IDENT(c->name, c->file) != ident)
		return -1; /* freed since, maybe another code object there now */
	*out = (struct cpython_frame){ .function = c->func_s, .file = c->file_s,
				       .line = code_line(cp, c, frame_addr(cp, code, pos)),
				       .code_id = (uint32_t)(c - cp->codes) };
	return 0;
}

/* ---- the test seam (cpython_test.h) ---- */

void cpython_test_set_reader(cpython_test_read_fn fn, void *ctx)
{
	read_hook = fn;
	read_hook_ctx = ctx;
}

struct cpython_proc *cpython_test_open(int major, int minor, uint64_t runtime)
{
	const struct cpython_layout *row = cpython_layout_find(major, minor);
	if (!row)
		return NULL;
	struct cpython_proc *cp = xcalloc(1, sizeof(*cp));
	cp->pages = xcalloc(1, sizeof(*cp->pages));
	cp->pages->gen = 1;
	cp->pthread_tid_off = -1;
	cp->lay = *row;
	set_read_sizes(cp);
	if (major == 3 && minor >= 13) {
		struct cpython_debug_offsets_313 dbg;
		if (rd(cp, runtime, &dbg, sizeof(dbg)) || cpython_layout_from_debug_313(&cp->lay, &dbg)) {
			cpython_close(cp);
			return NULL;
		}
		set_read_sizes(cp);
	}
	cp->runtime = runtime;
	snprintf(cp->version, sizeof(cp->version), "%d.%d", major, minor);
	snprintf(cp->where, sizeof(cp->where), "test memory");
	return cp;
}
