/* fuzz_lines: the line-format harnesses' splitter (fuzz_aio_wire,
 * fuzz_gpu_wire): hands each line of a fuzz input, without its newline, to
 * fn in a heap buffer of exactly its length, so that ASan sees any read
 * past the line. */
#ifndef SONDE_FUZZ_LINES_H
#define SONDE_FUZZ_LINES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void fuzz_lines_each(const uint8_t *data, size_t n,
				   void (*fn)(const char *line, size_t len))
{
	const char *p = (const char *)data, *end = p + n;
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		char *line = malloc(len ? len : 1); /* exactly len bytes */
		memcpy(line, p, len);
		fn(line, len);
		free(line);
		if (!nl)
			break;
		p = nl + 1;
	}
}

#endif
