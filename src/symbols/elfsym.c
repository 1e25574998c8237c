/* elfsym: a function of an ELF file by name, and the libraries it needs. */
#include "elfsym.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELFSYM_NEEDED_MAX 256
#define ELFSYM_NAME_CMP 64 /* letters compared for the nearest names */

struct near_pick {
	char name[ELFSYM_NEAR][128];
	unsigned score[ELFSYM_NEAR]; /* lower is nearer; UINT_MAX: empty */
};

/* Edit distance of a and b (insert, delete, replace), over at most
 * ELFSYM_NAME_CMP letters of each. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t na = strnlen(a, ELFSYM_NAME_CMP), nb = strnlen(b, ELFSYM_NAME_CMP);
	unsigned row[ELFSYM_NAME_CMP + 1];
	for (size_t j = 0; j <= nb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= na; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= nb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

static void near_offer(struct near_pick *np, const char *want, const char *name)
{
	size_t nw = strlen(want), nn = strlen(name);
	/* A name holding the one asked for comes first, the shortest first. */
	unsigned score =
	    strstr(name, want) ? (unsigned)(nn - nw) : 1000 + edit_distance(want, name);
	if (score >= 1000 + (nw > 9 ? nw / 3 : 3))
		return;
	size_t worst = 0;
	for (size_t i = 0; i < ELFSYM_NEAR; i++) {
		if (np->score[i] != UINT_MAX && !strcmp(np->name[i], name))
			return;
		if (np->score[i] > np->score[worst])
			worst = i;
	}
	if (score >= np->score[worst])
		return;
	np->score[worst] = score;
	snprintf(np->name[worst], sizeof(np->name[worst]), "%s", name);
}

static void near_write(struct near_pick *np, struct strbuf *near)
{
	for (size_t k = 0; k < ELFSYM_NEAR; k++) {
		size_t best = ELFSYM_NEAR;
		for (size_t i = 0; i < ELFSYM_NEAR; i++)
			if (np->score[i] != UINT_MAX &&
			    (best == ELFSYM_NEAR || np->score[i] < np->score[best]))
				best = i;
		if (best == ELFSYM_NEAR)
			return;
		if (near->len)
			strbuf_addstr(near, ", ");
		strbuf_addstr(near, np->name[best]);
		np->score[best] = UINT_MAX;
	}
}

int elfsym_exec_offset(Elf *elf, uint64_t vaddr, uint64_t len, uint64_t *off)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum))
		return -1;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    vaddr >= ph.p_vaddr && vaddr + len <= ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -1;
}

static Elf *elf_open(const char *path, int *fd)
{
	elf_version(EV_CURRENT);
	*fd = file_open_regular(path, 0);
	if (*fd < 0)
		return NULL;
	Elf *elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		return elf;
	if (elf)
		elf_end(elf);
	close(*fd);
	*fd = -ENOEXEC;
	return NULL;
}

/* Looks through one symbol table: 1 found, 0 not. */
static int find_in(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
		   struct elfsym *out, struct near_pick *np)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = data && sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_value ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
			continue;
		const char *s = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!s || !*s)
			continue;
		/* "malloc@@GLIBC_2.2.5" names malloc in some tables. */
		size_t len = strcspn(s, "@");
		if (len == strlen(name) && !strncmp(s, name, len) &&
		    !elfsym_exec_offset(elf, sym.st_value, 1, &out->file_offset)) {
			out->vaddr = sym.st_value;
			out->size = sym.st_size;
			return 1;
		}
		if (np)
			near_offer(np, name, s);
	}
	return 0;
}

int elfsym_find(const char *path, const char *name, struct elfsym *out, struct strbuf *near)
{
	int fd;
	Elf *elf = elf_open(path, &fd);
	if (!elf)
		return fd;
	struct near_pick np;
	for (size_t i = 0; i < ELFSYM_NEAR; i++)
		np.score[i] = UINT_MAX;
	int found = 0;
	struct elfsym got = {0};
	for (int pass = 0; pass < 2 && !found; pass++) {
		Elf_Scn *scn = NULL;
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			if (gelf_getshdr(scn, &sh) &&
			    sh.sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
				found = find_in(elf, scn, &sh, name, &got, near ? &np : NULL);
		}
	}
	elf_end(elf);
	close(fd);
	if (found) {
		*out = got;
		return 0;
	}
	if (near)
		near_write(&np, near);
	return -ENOENT;
}

int elfsym_vaddr_offset(const char *path, uint64_t vaddr, uint64_t *file_offset)
{
	int fd;
	Elf *elf = elf_open(path, &fd);
	if (!elf)
		return -1;
	int rc = elfsym_exec_offset(elf, vaddr, 1, file_offset);
	elf_end(elf);
	close(fd);
	return rc;
}

struct needed {
	char *v[ELFSYM_NEEDED_MAX];
	size_t n;
};

static int needed_has(const struct needed *nd, const char *path)
{
	for (size_t i = 0; i < nd->n; i++)
		if (!strcmp(nd->v[i], path))
			return 1;
	return 0;
}

/* Where the loader would find lib for the object at path, with its
 * RPATH/RUNPATH list dirs. 0 with out set, or -1. */
static int needed_locate(const char *path, const char *dirs, const char *lib, struct strbuf *out)
{
	static const char *const std[] = {"/lib/x86_64-linux-gnu",
					  "/usr/lib/x86_64-linux-gnu",
					  "/lib64",
					  "/usr/lib64",
					  "/lib",
					  "/usr/lib",
					  "/usr/local/lib"};
	struct strbuf origin = STRBUF_INIT;
	const char *slash = strrchr(path, '/');
	strbuf_add(&origin, path, slash ? (size_t)(slash - path) : 0);
	struct stat st;
	int rc = -1;
	for (const char *p = dirs ? dirs : ""; *p && rc;) {
		size_t len = strcspn(p, ":");
		strbuf_reset(out);
		if (len >= 7 && !strncmp(p, "$ORIGIN", 7)) {
			strbuf_addstr(out, origin.buf ? origin.buf : ".");
			strbuf_add(out, p + 7, len - 7);
		} else {
			strbuf_add(out, p, len);
		}
		strbuf_addf(out, "/%s", lib);
		if (!stat(out->buf, &st) && S_ISREG(st.st_mode))
			rc = 0;
		p += len + (p[len] == ':');
	}
	for (size_t i = 0; rc && i < sizeof(std) / sizeof(std[0]); i++) {
		strbuf_reset(out);
		strbuf_addf(out, "%s/%s", std[i], lib);
		if (!stat(out->buf, &st) && S_ISREG(st.st_mode))
			rc = 0;
	}
	strbuf_release(&origin);
	return rc;
}

/* Adds the libraries path needs to nd. 0, or -errno when path is unreadable. */
static int needed_of(const char *path, struct needed *nd)
{
	int fd;
	Elf *elf = elf_open(path, &fd);
	if (!elf)
		return fd;
	Elf_Scn *scn = NULL;
	struct strbuf dirs = STRBUF_INIT, lib = STRBUF_INIT;
	const char *libs[64];
	size_t nlibs = 0;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNAMIC)
			break;
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	size_t n = data && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Dyn dyn;
		if (!gelf_getdyn(data, (int)i, &dyn))
			continue;
		const char *s = NULL;
		if (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_RPATH || dyn.d_tag == DT_RUNPATH)
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
		if (!s)
			continue;
		if (dyn.d_tag == DT_NEEDED && nlibs < sizeof(libs) / sizeof(libs[0]))
			libs[nlibs++] = s;
		else if (dyn.d_tag != DT_NEEDED)
			strbuf_addf(&dirs, "%s%s", dirs.len ? ":" : "", s);
	}
	for (size_t i = 0; i < nlibs && nd->n < ELFSYM_NEEDED_MAX; i++)
		if (!strchr(libs[i], '/') && !needed_locate(path, dirs.buf, libs[i], &lib) &&
		    !needed_has(nd, lib.buf))
			nd->v[nd->n++] = strbuf_detach(&lib);
	strbuf_release(&dirs);
	strbuf_release(&lib);
	elf_end(elf);
	close(fd);
	return 0;
}

int elfsym_needed(const char *path, void (*each)(void *arg, const char *file), void *arg)
{
	struct needed nd = {.n = 0};
	int rc = needed_of(path, &nd);
	/* Breadth first, as the loader orders its search scope. */
	for (size_t i = 0; !rc && i < nd.n; i++)
		needed_of(nd.v[i], &nd);
	for (size_t i = 0; i < nd.n; i++) {
		if (!rc)
			each(arg, nd.v[i]);
		free(nd.v[i]);
	}
	return rc ? rc : (int)nd.n;
}
