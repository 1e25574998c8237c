/* fuzz_cpython_memory: the CPython reader walks another process's memory,
 * which the target can make anything, and which changes under it: every
 * pointer, length, count and line table it follows may be garbage. Here the
 * whole address space is the input, repeated (any pointer lands in it, so
 * every chain is followed), except high addresses, which fail to read. The
 * first byte picks the version's layout. A sample and a frame lookup must
 * stay bounded and never read outside what they were given.
 * sources: src/symbols/cpython.c src/symbols/cpython_mem.c src/symbols/cpython_open.c src/symbols/cpython_walk.c src/symbols/cpython_names.c src/symbols/pysource.c src/symbols/cpython_gil.c src/symbols/cpython_dict.c src/symbols/cpython_lines.c src/symbols/cpython_layouts.c src/symbols/cpython_debug.c src/symbols/cpython_tids.c src/target/procfs.c src/util/clock.c src/util/fileio.c src/util/hashmap.c src/util/log.c src/util/utf8.c src/util/strbuf.c
 * libs: -lelf
 * max_len: 16384
 */
#include "symbols/cpython_layout.h"
#include "symbols/cpython_test.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BASE 0x10000000ull
#define READABLE_BELOW (1ull << 47)

struct image {
	const uint8_t *data;
	size_t n;
};

static int serve(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;
	if (!im->n || addr >= READABLE_BELOW || len > READABLE_BELOW - addr)
		return -EFAULT;
	uint8_t *out = buf;
	size_t at = (size_t)((addr - BASE) % im->n);
	for (size_t i = 0; i < len; i++) {
		out[i] = im->data[at];
		at = at + 1 == im->n ? 0 : at + 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (n < 2)
		return 0;
	size_t rows = 0;
	while (cpython_layouts[rows].major)
		rows++;
	const struct cpython_layout *row = &cpython_layouts[data[0] % rows];
	struct image im = { data + 1, n - 1 };
	cpython_test_set_reader(serve, &im);
	struct cpython_proc *cp = cpython_test_open(row->major, row->minor, BASE);
	if (cp) {
		struct cpython_sample s;
		if (!cpython_sample(cp, &s)) {
			for (size_t i = 0; i < s.nthreads; i++) {
				const struct cpython_thread *th = &s.threads[i];
				if (th->first > s.nframes || th->n > s.nframes - th->first)
					abort();
				if (th->name && strlen(th->name) > 4096)
					abort();
			}
			for (size_t i = 0; i < s.nframes; i++)
				if (!s.frames[i].function || !s.frames[i].file ||
				    strlen(s.frames[i].function) > 8192)
					abort();
		}
		uint64_t code = 0, pos;
		memcpy(&code, data + 1, n - 1 < 8 ? n - 1 : 8);
		pos = data[n - 1];
		struct cpython_frame f;
		if (!cpython_frame_at(cp, BASE + (code & 0xffff), pos, 0, &f) && !f.function)
			abort();
		cpython_close(cp);
	}
	cpython_test_set_reader(NULL, NULL);
	return 0;
}
