/* fuzz_cpython_lines: the CPython line-table decoders read bytes copied out of
 * a running target, which a torn read or a hostile process can make anything:
 * they must never read outside the table, overflow or loop forever.
 * sources: src/symbols/cpython_lines.c src/symbols/cpython_layouts.c */
#include "symbols/cpython_layout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (n < 6)
		return 0;
	/* First bytes: the offset asked for and the first line; the rest is the table. */
	int64_t addr = (int16_t)(data[0] | data[1] << 8);
	int first = (int)(int32_t)((uint32_t)data[2] | (uint32_t)data[3] << 8 |
				   (uint32_t)data[4] << 16 | (uint32_t)data[5] << 24);
	size_t len = n - 6;
	/* A copy of exactly len bytes, so ASan sees any read past the end. */
	uint8_t *table = malloc(len ? len : 1);
	memcpy(table, data + 6, len);
	cpython_line_lnotab(table, len, first, addr);
	cpython_line_310(table, len, first, addr);
	cpython_line_311(table, len, first, addr);
	cpython_line_310_or_previous(table, len, first, addr);
	cpython_line_311_or_previous(table, len, first, addr);
	free(table);
	return 0;
}
