/* fuzz_maps: /proc/PID/maps text comes from the kernel but names paths the
 * target chose (any bytes but NUL and newline, deleted files, memfd names):
 * maps_parse() must survive any text, and what it keeps must stay sorted,
 * non-overlapping and executable-only, as maps.h promises.
 * sources: src/symbols/maps.c src/util/fileio.c src/util/strbuf.c */
#include "symbols/maps.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* A copy of exactly n bytes: the parser must not need a terminator. */
	char *text = malloc(n ? n : 1);
	memcpy(text, data, n);
	struct maps m = MAPS_INIT;
	/* Lines that overlap replace each other (as a later mmap does), so
	 * fewer entries than lines kept is right. */
	maps_parse(&m, text, n);
	if (m.n > MAPS_MAX)
		abort();
	for (size_t i = 0; i < m.n; i++) {
		if (m.v[i].start >= m.v[i].end || !m.v[i].path ||
		    strlen(m.v[i].path) >= MAPS_PATH_MAX)
			abort();
		if (i && m.v[i - 1].end > m.v[i].start)
			abort();
		if (maps_find(&m, m.v[i].start) != &m.v[i])
			abort();
	}
	/* A later mmap over the middle of everything keeps the invariants too. */
	maps_insert(&m, 0x1000, UINT64_MAX / 2, 0, "[jit]");
	for (size_t i = 1; i < m.n; i++)
		if (m.v[i - 1].end > m.v[i].start)
			abort();
	maps_release(&m);
	free(text);
	return 0;
}
