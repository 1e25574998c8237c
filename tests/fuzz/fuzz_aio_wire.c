/* fuzz_aio_wire: the asyncio agent runs inside the target, so its records are
 * the target's to write: any line must parse to a known kind with every
 * string field inside the line, or be refused, and parsing the same line
 * twice must give the same record.
 * sources: src/probes/aio_wire.c
 * max_len: 8192 */
#include "probes/aio_wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	const char *p = (const char *)data, *end = p + n;
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		char *line = malloc(len ? len : 1); /* exactly len bytes */
		memcpy(line, p, len);
		struct aio_record r, again;
		int rc = aio_record_parse(line, len, &r);
		if (rc != 0 && rc != -1)
			abort();
		if (!rc) {
			if (!strchr("VNTELRWX", r.kind) || r.kind != line[0] || len > AIO_LINE_MAX)
				abort();
			for (int i = 0; i < 3; i++)
				if (r.s[i] && (r.s[i] < line || r.s[i] + r.slen[i] > line + len ||
					       memchr(r.s[i], '\t', r.slen[i])))
					abort();
			if (aio_record_parse(line, len, &again) || memcmp(&r, &again, sizeof(r)))
				abort();
		}
		free(line);
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}
