/* test_vdso: "[vdso]" frames are named whatever the image's layout: a
 * synthetic vDSO without section headers (symbols only in the dynamic table,
 * found through PT_DYNAMIC; unwind table through PT_GNU_EH_FRAME) with an
 * exported function and a static one, as a 6.18 kernel builds its clock read;
 * and the running kernel's own vDSO. */
#include "check.h"
#include "symbols/symbolize.h"
#include "symbols/vdso.h"

#include <elf.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define IMG_BYTES 0x500
#define OFF_HASH 0x120
#define OFF_DYNSYM 0x140
#define OFF_DYNSTR 0x1a0
#define OFF_DYNAMIC 0x1e0
#define OFF_EHHDR 0x260
#define OFF_EHFRAME 0x290
#define LOCAL_FN 0x380 /* static: an FDE, no symbol */
#define LOCAL_LEN 0x40
#define EXPORTED_FN 0x400 /* __vdso_clock_gettime and its alias clock_gettime */
#define EXPORTED_LEN 0x60

static void put32(uint8_t *img, size_t off, uint32_t v)
{
	memcpy(img + off, &v, 4);
}

/* CIE "zR" with FDE pointers pcrel sdata4, then one FDE per function. */
static size_t put_eh_frame(uint8_t *img, uint32_t *fde_off)
{
	size_t at = OFF_EHFRAME;
	static const uint8_t cie[] = { 0x14, 0, 0, 0, 0, 0, 0, 0, /* length 20, CIE id 0 */
				       1, 'z', 'R', 0, 1, 0x78, 0x10, /* version, aug, align, ra */
				       1, 0x1b, /* aug data: R = pcrel|sdata4 */
				       0x0c, 7, 8, 0x90, 1, 0, 0 }; /* def_cfa rsp+8, ra at cfa-8 */
	memcpy(img + at, cie, sizeof(cie));
	at += sizeof(cie);
	const uint32_t starts[2] = { LOCAL_FN, EXPORTED_FN }, lens[2] = { LOCAL_LEN, EXPORTED_LEN };
	for (int i = 0; i < 2; i++) {
		fde_off[i] = (uint32_t)at;
		put32(img, at, 16);				       /* length */
		put32(img, at + 4, (uint32_t)(at + 4 - OFF_EHFRAME)); /* back to the CIE */
		put32(img, at + 8, (uint32_t)(starts[i] - (at + 8))); /* pc_begin, pcrel */
		put32(img, at + 12, lens[i]);			       /* pc_range */
		put32(img, at + 16, 0);				       /* no aug data, nops */
		at += 20;
	}
	put32(img, at, 0); /* terminator */
	return at + 4;
}

/* The image, vaddr == file offset, no section header table at all. */
static void build_image(uint8_t *img)
{
	memset(img, 0, IMG_BYTES);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 3;
	eh->e_shentsize = sizeof(Elf64_Shdr); /* e_shoff, e_shnum: 0 */
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff);
	ph[0] = (Elf64_Phdr){ PT_LOAD, PF_R | PF_X, 0, 0, 0, IMG_BYTES, IMG_BYTES, 0x1000 };
	ph[1] = (Elf64_Phdr){ PT_DYNAMIC, PF_R, OFF_DYNAMIC, OFF_DYNAMIC, OFF_DYNAMIC,
			      7 * 16, 7 * 16, 8 };
	/* SysV hash: one bucket, chain 2 -> 1. */
	put32(img, OFF_HASH, 1);
	put32(img, OFF_HASH + 4, 3);
	put32(img, OFF_HASH + 8, 2);
	put32(img, OFF_HASH + 20, 1);
	static const char strs[] = "\0__vdso_clock_gettime\0clock_gettime";
	memcpy(img + OFF_DYNSTR, strs, sizeof(strs));
	Elf64_Sym *sym = (Elf64_Sym *)(img + OFF_DYNSYM);
	sym[1] = (Elf64_Sym){ 1, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 1, EXPORTED_FN,
			      EXPORTED_LEN };
	sym[2] = (Elf64_Sym){ 22, ELF64_ST_INFO(STB_WEAK, STT_FUNC), 0, 1, EXPORTED_FN,
			      EXPORTED_LEN };
	Elf64_Dyn *dyn = (Elf64_Dyn *)(img + OFF_DYNAMIC);
	dyn[0] = (Elf64_Dyn){ DT_HASH, { OFF_HASH } };
	dyn[1] = (Elf64_Dyn){ DT_SYMTAB, { OFF_DYNSYM } };
	dyn[2] = (Elf64_Dyn){ DT_STRTAB, { OFF_DYNSTR } };
	dyn[3] = (Elf64_Dyn){ DT_STRSZ, { sizeof(strs) } };
	dyn[4] = (Elf64_Dyn){ DT_SYMENT, { sizeof(Elf64_Sym) } };
	dyn[5] = (Elf64_Dyn){ DT_NULL, { 0 } };
	uint32_t fde[2];
	size_t eh_end = put_eh_frame(img, fde);
	/* .eh_frame_hdr: version 1, eh_frame_ptr pcrel sdata4, count udata4,
	 * table datarel sdata4. */
	uint8_t *h = img + OFF_EHHDR;
	h[0] = 1, h[1] = 0x1b, h[2] = 0x03, h[3] = 0x3b;
	put32(img, OFF_EHHDR + 4, (uint32_t)(OFF_EHFRAME - (OFF_EHHDR + 4)));
	put32(img, OFF_EHHDR + 8, 2);
	put32(img, OFF_EHHDR + 12, (uint32_t)(LOCAL_FN - OFF_EHHDR));
	put32(img, OFF_EHHDR + 16, fde[0] - OFF_EHHDR);
	put32(img, OFF_EHHDR + 20, (uint32_t)(EXPORTED_FN - OFF_EHHDR));
	put32(img, OFF_EHHDR + 24, fde[1] - OFF_EHHDR);
	ph[2] = (Elf64_Phdr){ PT_GNU_EH_FRAME, PF_R, OFF_EHHDR, OFF_EHHDR, OFF_EHHDR, 28, 28, 4 };
	(void)eh_end;
	memset(img + LOCAL_FN, 0x90, LOCAL_LEN); /* nops, then ret */
	img[LOCAL_FN + LOCAL_LEN - 1] = 0xc3;
	memset(img + EXPORTED_FN, 0x90, EXPORTED_LEN);
	img[EXPORTED_FN + EXPORTED_LEN - 1] = 0xc3;
}

static int image_fd(void)
{
	static uint8_t img[IMG_BYTES];
	build_image(img);
	int fd = memfd_create("test-vdso", MFD_CLOEXEC);
	if (fd >= 0 && write(fd, img, sizeof(img)) != (ssize_t)sizeof(img)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static const char *name_at(struct symbolizer *s, int id, uint64_t off)
{
	struct sym_frame f[SYMBOLIZER_MAX_INLINE + 1];
	size_t n = symbolizer_lookup(s, id, off, f, SYMBOLIZER_MAX_INLINE + 1);
	return n ? f[n - 1].function : "";
}

TEST(no_section_headers, "a vDSO without section headers: exported functions are named from the dynamic table, a static one by its unwind entry")
{
	int fd = image_fd();
	REQUIRE(fd >= 0);
	struct symbolizer *s = symbolizer_new();
	int id = symbolizer_module_fd(s, "[vdso]", fd);
	REQUIRE(id >= 0);
	const char *exported = name_at(s, id, EXPORTED_FN + 0x1d);
	CHECK(!strcmp(exported, "__vdso_clock_gettime") || !strcmp(exported, "clock_gettime"));
	char want[64];
	vdso_function_name(LOCAL_FN, want, sizeof(want));
	CHECK_STR_EQ(name_at(s, id, LOCAL_FN + 0x1d), want);
	CHECK_STR_EQ(name_at(s, id, LOCAL_FN), want);
	/* Past every function: no name is made up. */
	CHECK_STR_EQ(name_at(s, id, 0x4f0), "[vdso]+0x4f0");
	symbolizer_free(s);
}

TEST(function_start_bounds, "the unwind table finds the function holding an address, and nothing outside every function")
{
	int fd = image_fd();
	REQUIRE(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	REQUIRE(elf);
	uint64_t start = 0;
	CHECK(vdso_function_start(elf, LOCAL_FN + 5, &start) == 0 && start == LOCAL_FN);
	CHECK(vdso_function_start(elf, EXPORTED_FN + EXPORTED_LEN - 1, &start) == 0 &&
	      start == EXPORTED_FN);
	CHECK(vdso_function_start(elf, LOCAL_FN + LOCAL_LEN, &start) == -1);
	CHECK(vdso_function_start(elf, 0x10, &start) == -1);
	elf_end(elf);
	close(fd);
}

TEST(running_kernel, "every function of the running kernel's vDSO gets a name")
{
	int fd = vdso_open();
	if (fd < 0)
		SKIP("no vDSO mapped in this process");
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	REQUIRE(elf);
	size_t len = 0;
	REQUIRE(elf_rawfile(elf, &len));
	struct symbolizer *s = symbolizer_new();
	int id = symbolizer_module_fd(s, "[vdso]", dup(fd));
	size_t unnamed = 0, covered = 0;
	for (uint64_t off = 0; off < len; off += 4) {
		uint64_t start;
		if (vdso_function_start(elf, off, &start))
			continue; /* not code */
		covered++;
		unnamed += !strncmp(name_at(s, id, off), "[vdso]+", 7);
	}
	CHECK(covered > 0);
	CHECK_INT_EQ(unnamed, 0);
	symbolizer_free(s);
	elf_end(elf);
	close(fd);
}

CHECK_MAIN()
