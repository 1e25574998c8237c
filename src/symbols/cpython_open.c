/* cpython_open: finds a CPython interpreter in a process (see cpython.h):
 * the python or libpython it maps, _PyRuntime in it (the .PyRuntime section,
 * the _PyRuntime symbol, or a validated scan of its writable memory), its
 * version and the layout to read it with, checked against the live process;
 * and the reader's end and counters. */
#include "cpython_proc.h"
#include "cpython_test.h"
#include "../target/procfs.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPY_MAX_SCAN (32 << 20)	     /* bytes of writable memory scanned for _PyRuntime */
#define CPY_MAPS_MAX (8 << 20)

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
	int64_t fv[] = { l->frame_back,	 l->frame_code,	 l->frame_instr,    l->frame_owner,
			 l->frame_lasti, l->frame_state, l->frame_is_entry, l->frame_localsplus };
	int64_t cv[] = { l->object_type,      l->code_filename,	 l->code_name,	  l->code_qualname,
			 l->code_firstlineno, l->code_linetable, l->code_varnames };
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
	    cpy_rd_u64(cp, interp + (uint64_t)l->interp_tstate_head, &ts) || !ts || (ts & 7) ||
	    (ts > interp - 256 && ts < interp + 256) ||
	    cpy_rd_u64(cp, ts + (uint64_t)l->tstate_interp, &back) || back != interp)
		return 0;
	if (l->tstate_next >= 8 &&
	    (cpy_rd_u64(cp, ts + (uint64_t)l->tstate_next - 8, &prev) || prev != 0))
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
	if (cpy_rd(cp, runtime, flags, sizeof(flags)) ||
	    cpy_rd_u64(cp, runtime + (uint64_t)cp->lay.runtime_interp_head, &head) ||
	    cpy_rd_u64(cp, runtime + (uint64_t)cp->lay.runtime_interp_head + 8, &main_interp))
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
		if (cpy_rd(cp, start + at, buf, n))
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
	int rc = cpy_rd_direct(cp->pid, mf->base, &probe_word, sizeof(probe_word));
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
		if (!cpy_rd_u64(cp, bias + ei.sym_version, &hex) && (hex >> 24) == 3) {
			major = 3;
			minor = (int)((hex >> 16) & 0xff);
			have_version = 1;
		}
	}
	struct cpython_debug_offsets_313 dbg;
	int have_dbg = 0;
	if (runtime && !cpy_rd(cp, runtime, &dbg, sizeof(dbg)) &&
	    !memcmp(dbg.cookie, "xdebugpy", 8)) {
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
		if (!have_dbg && !cpy_rd(cp, runtime, &dbg, sizeof(dbg)) &&
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
	if (cpy_rd_u64(cp, runtime + (uint64_t)cp->lay.runtime_interp_head, &head))
		return CPYTHON_ERROR;
	if (head && !check_interp(cp, head)) {
		uint64_t ts = 0;
		cpy_rd_u64(cp, head + (uint64_t)cp->lay.interp_tstate_head, &ts);
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

void cpython_close(struct cpython_proc *cp)
{
	if (!cp)
		return;
	cpy_codes_drop(cp);
	free(cp->codes);
	free(cp->threads);
	free(cp->frames);
	free(cp->threads_prev);
	free(cp->frames_prev);
	free(cp->keys);
	free(cp->keys_prev);
	free(cp->walked);
	free(cp->hints);
	free(cp->recheck);
	free(cp->recheck_iov);
	for (size_t i = 0; i < cp->nsources; i++) {
		free(cp->sources[i].file);
		free(cp->sources[i].text);
	}
	free(cp->sources);
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

/* ---- the test seam (cpython_test.h; its reader is in cpython_mem.c) ---- */

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
		if (cpy_rd(cp, runtime, &dbg, sizeof(dbg)) ||
		    cpython_layout_from_debug_313(&cp->lay, &dbg)) {
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
