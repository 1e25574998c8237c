/* fuzz_srcloc: the source locator reads the program's own source files and
 * its log lines, both the program's to choose: any file text (no terminator,
 * NUL bytes, unclosed quotes, a def or a class on the last byte) and any log
 * line must give either no match or a place inside the file, with a line
 * number within it, never a read outside either buffer.
 * sources: src/analysis/srcloc.c src/util/
 * libs: -ljansson -lsqlite3 -lz
 * max_len: 8192 */
#include "analysis/srcloc.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* The input is "LINE\n" then the file's text (both may be empty). */
	const uint8_t *nl = memchr(data, '\n', n);
	size_t line_len = nl ? (size_t)(nl - data) : n;
	size_t text_len = nl ? n - line_len - 1 : 0;
	char *line = malloc(line_len ? line_len : 1), *text = malloc(text_len ? text_len : 1);
	memcpy(line, data, line_len);
	if (text_len)
		memcpy(text, nl + 1, text_len);
	for (int py = 0; py < 2; py++) {
		struct srcloc_index *ix =
		    srcloc_index_of_text(py ? "/src/app.py" : "/src/app.c", text, text_len);
		json_t *o = srcloc_find(ix, line, line_len);
		if (o) {
			json_int_t at = json_integer_value(json_object_get(o, "line"));
			size_t lines = 1;
			for (size_t i = 0; i < text_len; i++)
				lines += text[i] == '\n';
			if (at < 1 || (size_t)at > lines || !json_is_array(json_object_get(o, "fan_out")))
				abort();
			json_decref(o);
		}
		srcloc_index_free(ix);
	}
	free(line);
	free(text);
	return 0;
}
