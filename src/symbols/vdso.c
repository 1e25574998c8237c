/* vdso: the kernel's vDSO image as a file (installed and unstripped, else
 * sonde's mapped copy in a memfd), and its functions found by unwind table. */
#include "vdso.h"
#include "maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#define VDSO_BUILD_ID_MAX 64

/* The GNU build-id note of an ELF image, from its program headers; its length or 0. */
static size_t build_id(Elf *elf, uint8_t *out, size_t cap)
{
	size_t phnum = 0;
	if (elf_getphdrnum(elf, &phnum))
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz <= cap) {
				memcpy(out, (const char *)d->d_buf + desc_off, nh.n_descsz);
				return nh.n_descsz;
			}
		}
	}
	return 0;
}

/* An installed image of the running vDSO with a symbol table: an open fd, or -1. */
static int open_installed(const uint8_t *id, size_t id_len)
{
	struct utsname u;
	if (!id_len || uname(&u))
		return -1;
	char hex[2 * VDSO_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	char paths[5][512];
	snprintf(paths[0], sizeof(paths[0]), "/lib/modules/%s/vdso/vdso64.so", u.release);
	snprintf(paths[1], sizeof(paths[1]), "/usr/lib/debug/lib/modules/%s/vdso/vdso64.so",
		 u.release);
	snprintf(paths[2], sizeof(paths[2]), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	snprintf(paths[3], sizeof(paths[3]), "/lib/modules/%s/vdso/vdso.so", u.release);
	snprintf(paths[4], sizeof(paths[4]), "/lib/modules/%s/build/arch/x86/entry/vdso/vdso64.so.dbg",
		 u.release);
	for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
		int fd = open(paths[p], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
		uint8_t theirs[VDSO_BUILD_ID_MAX];
		size_t n = elf ? build_id(elf, theirs, sizeof(theirs)) : 0;
		size_t shnum = 0;
		int ok = n == id_len && !memcmp(theirs, id, n) && !elf_getshdrnum(elf, &shnum) &&
			 shnum > 0;
		/* The same build: a .debug file holds only the symbols and DWARF, but
		 * the unwinder needs the code too, so only a whole image replaces it. */
		if (ok) {
			Elf_Scn *scn = NULL;
			ok = 0;
			while ((scn = elf_nextscn(elf, scn))) {
				GElf_Shdr sh;
				if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
				    (sh.sh_flags & SHF_EXECINSTR))
					ok = 1;
			}
		}
		elf_end(elf);
		if (ok)
			return fd;
		close(fd);
	}
	return -1;
}

int vdso_open(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return -ENOENT;
	struct maps m = MAPS_INIT;
	maps_read_pid(&m, getpid());
	const struct map_entry *e = maps_find(&m, base);
	int ret = -ENOENT;
	if (!e || strcmp(e->path, "[vdso]"))
		goto out;
	const char *p = (const char *)(uintptr_t)e->start;
	size_t len = (size_t)(e->end - e->start), done = 0;
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)(uintptr_t)p, len);
	uint8_t id[VDSO_BUILD_ID_MAX];
	size_t id_len = elf ? build_id(elf, id, sizeof(id)) : 0;
	if (elf)
		elf_end(elf);
	ret = open_installed(id, id_len);
	if (ret >= 0)
		goto out;
	int fd = memfd_create("sonde-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			close(fd);
			goto out;
		}
		done += (size_t)n;
	}
	ret = fd;
out:
	maps_release(&m);
	return ret;
}

/* ---- unwind table ---- */

struct image {
	const uint8_t *buf;
	size_t len;
	Elf *elf;
};

/* The file offset of [vaddr, vaddr + n) inside a PT_LOAD, or -1. */
static int64_t vaddr_offset(const struct image *im, uint64_t vaddr, size_t n)
{
	size_t phnum = 0;
	if (elf_getphdrnum(im->elf, &phnum))
		return -1;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(im->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr <= ph.p_filesz &&
		    n <= ph.p_filesz - (vaddr - ph.p_vaddr)) {
			uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);
			if (off <= im->len && n <= im->len - off)
				return (int64_t)off;
		}
	}
	return -1;
}

static int read_vaddr(const struct image *im, uint64_t vaddr, void *out, size_t n)
{
	int64_t off = vaddr_offset(im, vaddr, n);
	if (off < 0)
		return -1;
	memcpy(out, im->buf + off, n);
	return 0;
}

static int read_uleb(const struct image *im, uint64_t *at, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;
		if (read_vaddr(im, (*at)++, &b, 1))
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* A pointer encoded with enc (DW_EH_PE_*) at *at, moved past; pcrel and
 * datarel (base data_vaddr) applied. Sizes 2, 4 and 8 only. */
static int read_encoded(const struct image *im, uint64_t *at, uint8_t enc, uint64_t data_vaddr,
			uint64_t *out)
{
	uint64_t field = *at, v = 0;
	size_t size;
	int is_signed = (enc & 0x08) != 0; /* sdata2, sdata4, sdata8 */
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: size = 8; break; /* sdata8 */
	case 0x03:		    /* udata4 */
	case 0x0b: size = 4; break; /* sdata4 */
	case 0x02:		    /* udata2 */
	case 0x0a: size = 2; break; /* sdata2 */
	default: return -1;
	}
	if (read_vaddr(im, field, &v, size)) /* little-endian: the low bytes of v */
		return -1;
	if (is_signed && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~0ULL << (8 * size);
	*at += size;
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += field; break;	   /* pcrel */
	case 0x30: v += data_vaddr; break; /* datarel */
	default: return -1;
	}
	*out = v;
	return 0;
}

/* The pointer encoding of FDEs under the CIE at cie ('R' of "zR..."). */
static int cie_fde_encoding(const struct image *im, uint64_t cie, uint8_t *enc)
{
	uint32_t len, id;
	uint8_t version;
	char aug[16];
	uint64_t at = cie, v;
	if (read_vaddr(im, at, &len, 4) || len == 0xffffffffu || read_vaddr(im, at + 4, &id, 4) ||
	    id != 0 || read_vaddr(im, at + 8, &version, 1))
		return -1;
	at += 9;
	size_t n = 0;
	for (;; n++) {
		if (n == sizeof(aug) || read_vaddr(im, at++, &aug[n], 1))
			return -1;
		if (!aug[n])
			break;
	}
	*enc = 0x00; /* absptr without 'R' */
	if (aug[0] != 'z')
		return aug[0] ? -1 : 0;
	if (read_uleb(im, &at, &v) || read_uleb(im, &at, &v)) /* code, data alignment */
		return -1;
	if (version == 1)
		at++;
	else if (read_uleb(im, &at, &v))
		return -1;
	if (read_uleb(im, &at, &v)) /* augmentation data length */
		return -1;
	for (size_t i = 1; aug[i]; i++) {
		uint8_t b;
		if (aug[i] == 'R')
			return read_vaddr(im, at, enc, 1);
		if (aug[i] == 'L') {
			at++;
		} else if (aug[i] == 'P') {
			uint64_t ignored;
			if (read_vaddr(im, at++, &b, 1) || read_encoded(im, &at, b & 0x0f, 0, &ignored))
				return -1;
		} else if (aug[i] != 'S' && aug[i] != 'B') {
			return -1;
		}
	}
	return 0;
}

int vdso_function_start(Elf *elf, uint64_t vaddr, uint64_t *start_vaddr)
{
	struct image im = { .elf = elf };
	im.buf = (const uint8_t *)elf_rawfile(elf, &im.len);
	size_t phnum = 0;
	if (!im.buf || elf_getphdrnum(elf, &phnum))
		return -1;
	GElf_Phdr hdr = { .p_type = PT_NULL };
	for (size_t i = 0; i < phnum && hdr.p_type != PT_GNU_EH_FRAME; i++)
		if (!gelf_getphdr(elf, (int)i, &hdr))
			hdr.p_type = PT_NULL;
	if (hdr.p_type != PT_GNU_EH_FRAME)
		return -1;
	/* version 1, then the encodings of eh_frame_ptr, fde_count and the table. */
	uint8_t h[4];
	uint64_t at = hdr.p_vaddr + 4, eh_frame, count;
	if (read_vaddr(&im, hdr.p_vaddr, h, 4) || h[0] != 1 || h[3] != 0x3b ||
	    read_encoded(&im, &at, h[1], hdr.p_vaddr, &eh_frame) ||
	    read_encoded(&im, &at, h[2], hdr.p_vaddr, &count))
		return -1;
	/* Sorted (initial location, FDE address) pairs, datarel sdata4. */
	uint64_t table = at, lo = 0, hi = count;
	if (count > im.len / 8)
		return -1;
	while (lo < hi) { /* first entry above vaddr */
		uint64_t mid = lo + (hi - lo) / 2, p = table + 8 * mid, loc;
		if (read_encoded(&im, &p, 0x3b, hdr.p_vaddr, &loc))
			return -1;
		if (loc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	uint64_t p = table + 8 * (lo - 1), loc, fde;
	if (read_encoded(&im, &p, 0x3b, hdr.p_vaddr, &loc) ||
	    read_encoded(&im, &p, 0x3b, hdr.p_vaddr, &fde))
		return -1;
	/* The FDE: length, CIE pointer (back from its own field), pc_begin, pc_range. */
	uint32_t len, cie_off;
	uint8_t enc;
	uint64_t begin, range;
	if (read_vaddr(&im, fde, &len, 4) || len == 0xffffffffu ||
	    read_vaddr(&im, fde + 4, &cie_off, 4) || !cie_off ||
	    cie_fde_encoding(&im, fde + 4 - cie_off, &enc))
		return -1;
	at = fde + 8;
	if (read_encoded(&im, &at, enc, 0, &begin) ||
	    read_encoded(&im, &at, (uint8_t)(enc & 0x0f), 0, &range))
		return -1;
	(void)eh_frame;
	if (vaddr < begin || vaddr - begin >= range)
		return -1;
	*start_vaddr = begin;
	return 0;
}

void vdso_function_name(uint64_t start_vaddr, char *buf, size_t cap)
{
	snprintf(buf, cap, "vdso_fn_0x%llx", (unsigned long long)start_vaddr);
}
