/* fuzz_output: the output line splitter must hold any byte stream, cut at any
 * point, to its bounds: no line over OUTPUT_LINE_MAX, every byte accounted.
 * sources: src/target/output.c src/util/strbuf.c */
#include "target/output.h"

#include <stdint.h>
#include <stdlib.h>

static size_t stored;

static void on_line(void *data, int stream, const char *line, size_t len, int truncated)
{
	(void)data;
	(void)stream;
	(void)line;
	(void)truncated;
	if (len > OUTPUT_LINE_MAX)
		abort();
	stored += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct output_stream os;
	output_stream_init(&os, -1, -1, 1);
	stored = 0;
	/* The first byte chooses the chunk size, so splits land everywhere. */
	size_t chunk = n ? (size_t)data[0] + 1 : 1;
	for (size_t off = 0; off < n; off += chunk) {
		size_t len = n - off < chunk ? n - off : chunk;
		output_stream_feed(&os, (const char *)data + off, len, on_line, NULL);
	}
	output_stream_flush(&os, on_line, NULL);
	if (stored > n || os.bytes_total != n)
		abort();
	output_stream_release(&os);
	return 0;
}
