/* fuzz_elf: the symbolizer opens whatever file a process maps (its own
 * binary, libraries, a memfd, a file rewritten since): ELF headers, symbol
 * tables, DWARF line and inline data may all be damaged or hostile. Interning
 * and looking up any offset must give at least one named frame, never a crash.
 * libdw's own parsing is not instrumented here; sonde's use of it is.
 * sources: src/symbols/symbolize.c src/symbols/scope_index.c src/symbols/vdso.c src/symbols/maps.c src/util/fileio.c src/util/hashmap.c src/util/log.c src/util/utf8.c src/util/strbuf.c src/util/clock.c src/util/demangle.c
 * libs: -ldw -lelf
 * max_len: 16384
 * seed: printf 'static int f(int x){return x*3;}\nint g(int y){return f(y)+1;}\n' > "$CORPUS/../seed.c" && "$CLANG" -g -O1 -c "$CORPUS/../seed.c" -o "$CORPUS/seed.o" && "$CLANG" -g -O1 -shared -fPIC -nostdlib -Wl,--build-id=none -Wl,-z,max-page-size=16 -Wl,-z,noseparate-code "$CORPUS/../seed.c" -o "$CORPUS/seed.so"
 */
#include "symbols/symbolize.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	int fd = memfd_create("fuzz_elf", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, n) != (ssize_t)n) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct symbolizer *s = symbolizer_new();
	int id = symbolizer_module(s, path, 0);
	for (uint64_t k = 0; id >= 0 && k < 8; k++) {
		struct sym_frame f[SYMBOLIZER_MAX_INLINE + 1];
		size_t got = symbolizer_lookup(s, id, k * (n + 64) / 8, f, SYMBOLIZER_MAX_INLINE + 1);
		if (got < 1 || got > SYMBOLIZER_MAX_INLINE + 1)
			abort();
		for (size_t i = 0; i < got; i++)
			if (!f[i].function || strlen(f[i].function) > (1u << 20))
				abort();
	}
	symbolizer_free(s);
	close(fd);
	return 0;
}
