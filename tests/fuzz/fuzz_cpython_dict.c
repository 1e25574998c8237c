/* fuzz_cpython_dict: the dict keys header decoder reads bytes copied out of a
 * running target, which a torn read or a hostile process can make anything:
 * it must never read outside the header, and what it accepts must describe a
 * table of bounded size.
 * sources: src/symbols/cpython_dict.c src/symbols/cpython_lines.c src/symbols/cpython_layouts.c */
#include "symbols/cpython_layout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* A copy of exactly n bytes, so ASan sees any read past the end. */
	uint8_t *hdr = malloc(n ? n : 1);
	memcpy(hdr, data, n);
	for (const struct cpython_layout *l = cpython_layouts; l->major; l++) {
		struct cpython_dict_keys k;
		if (cpython_dict_keys_decode(l, hdr, n, &k))
			continue;
		if (k.entries_off > (1ull << 30) || k.nentries > (1ull << 24) ||
		    (k.entry_size != 16 && k.entry_size != 24))
			abort();
	}
	free(hdr);
	return 0;
}
