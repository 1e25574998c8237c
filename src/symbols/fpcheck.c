/* fpcheck: frame-pointer detection by looking at function prologues. */
#include "fpcheck.h"
#include "elfsym.h"
#include "../util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int keeps_frame_pointer(const unsigned char *b, size_t n)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const unsigned char prologue[] = { 0x55, 0x48, 0x89, 0xe5 };
	if (n >= 8 && !memcmp(b, endbr64, 4)) {
		b += 4;
		n -= 4;
	}
	return n >= 4 && !memcmp(b, prologue, 4);
}

/* Reads the first bytes of the function at vaddr through the program headers. */
static int read_at_vaddr(int fd, Elf *elf, uint64_t vaddr, unsigned char *buf, size_t n)
{
	uint64_t off;
	if (elfsym_exec_offset(elf, vaddr, n, &off))
		return -1;
	return pread(fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

static Elf_Scn *find_symbols(Elf *elf, GElf_Shdr *shdr)
{
	Elf_Scn *dyn = NULL, *scn = NULL;
	GElf_Shdr dyn_shdr;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*shdr = sh;
			return scn;
		}
		if (sh.sh_type == SHT_DYNSYM) {
			dyn = scn;
			dyn_shdr = sh;
		}
	}
	if (dyn)
		*shdr = dyn_shdr;
	return dyn;
}

int fpcheck_elf(const char *path)
{
	elf_version(EV_CURRENT);
	int fd = file_open_regular(path, 0);
	if (fd < 0)
		return fd;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int ret = -EINVAL;
	size_t phnum;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out;
	GElf_Shdr sh;
	Elf_Scn *scn = find_symbols(elf, &sh);
	ret = 0;
	if (!scn || !sh.sh_entsize)
		goto out;
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t nsyms = data ? sh.sh_size / sh.sh_entsize : 0;
	int seen = 0, with_fp = 0;
	for (size_t i = 0; i < nsyms && seen < FPCHECK_SAMPLE; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_size < 16 || sym.st_shndx == SHN_UNDEF)
			continue;
		unsigned char buf[8];
		if (read_at_vaddr(fd, elf, sym.st_value, buf, sizeof(buf)))
			continue;
		int fp = keeps_frame_pointer(buf, sizeof(buf));
		const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (name && !strcmp(name, "main")) {
			ret = fp;
			goto out;
		}
		seen++;
		with_fp += fp;
	}
	ret = seen > 0 && 2 * with_fp > seen;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

int fpcheck_search_path(const char *name, char *out, size_t cap)
{
	if (strchr(name, '/')) {
		if (access(name, X_OK))
			return -errno;
		snprintf(out, cap, "%s", name);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		snprintf(out, cap, "%.*s/%s", (int)len, len ? p : ".", name);
		struct stat st;
		if (!stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK))
			return 0;
		p += len + (colon ? 1 : 0);
	}
	return -ENOENT;
}

int fpcheck_resolve_program(const char *argv0, char *out, size_t cap)
{
	int rc = fpcheck_search_path(argv0, out, cap);
	if (rc)
		return rc;
	char head[256];
	if (file_read_small(out, head, sizeof(head)) < 2 || head[0] != '#' || head[1] != '!')
		return 0;
	char *nl = strchr(head, '\n');
	if (nl)
		*nl = '\0';
	char interp[256], arg[256];
	int n = sscanf(head + 2, " %255s %255s", interp, arg);
	if (n < 1)
		return -ENOEXEC;
	const char *base = strrchr(interp, '/');
	if (n == 2 && base && !strcmp(base + 1, "env"))
		return fpcheck_search_path(arg, out, cap);
	return fpcheck_search_path(interp, out, cap);
}
