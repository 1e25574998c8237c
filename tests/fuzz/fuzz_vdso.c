/* fuzz_vdso: the vDSO's unwind table is read from an ELF image (the kernel's,
 * or a file installed under /lib/modules or /usr/lib/debug), so finding a
 * function by it must survive any bytes: every read stays inside the image.
 * sources: src/symbols/vdso.c src/symbols/maps.c src/util/fileio.c src/util/strbuf.c
 * libs: -lelf */
#include "symbols/vdso.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* A copy of exactly n bytes: a read past the end is caught. */
	char *buf = malloc(n ? n : 1);
	memcpy(buf, data, n);
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory(buf, n);
	if (elf) {
		for (uint64_t vaddr = 0; vaddr < 0x2000; vaddr += 0x40) {
			uint64_t start = 0;
			if (!vdso_function_start(elf, vaddr, &start) && start > vaddr)
				abort(); /* a function cannot start after an address it holds */
		}
		elf_end(elf);
	}
	free(buf);
	return 0;
}
