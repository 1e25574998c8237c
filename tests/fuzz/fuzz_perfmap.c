/* fuzz_perfmap: a JIT writes /tmp/perf-PID.map itself, so a hostile target
 * chooses every byte: the parser must survive any text, and a lookup must
 * return either a name from the map or "[anon]+0x..." for any address.
 * sources: src/symbols/symbolize.c src/symbols/scope_index.c src/symbols/vdso.c src/symbols/maps.c src/util/fileio.c src/util/hashmap.c src/util/log.c src/util/utf8.c src/util/strbuf.c src/util/clock.c src/util/demangle.c
 * libs: -ldw -lelf */
#include "symbols/symbolize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *text = malloc(n ? n : 1); /* exactly n bytes: no terminator to lean on */
	memcpy(text, data, n);
	struct symbolizer *s = symbolizer_new();
	symbolizer_jit_parse(s, 4242, text, n);
	/* Addresses the input names (its first words), and the edges. */
	uint64_t probes[8] = { 0, 1, UINT64_MAX, 0x1000 };
	for (size_t i = 4; i < 8 && (i - 4) * 8 + 8 <= n; i++)
		memcpy(&probes[i], data + (i - 4) * 8, 8);
	for (size_t i = 0; i < 8; i++) {
		struct sym_frame f;
		const char *module = NULL;
		symbolizer_jit(s, 4242, probes[i], &f, &module);
		if (!f.function || !module || f.file || f.line)
			abort();
	}
	symbolizer_free(s);
	free(text);
	return 0;
}
