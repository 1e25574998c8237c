/* fuzz_aio_wire: the asyncio agent runs inside the target, so its records are
 * the target's to write: any line must parse to a known kind with every
 * string field inside the line, or be refused, and parsing the same line
 * twice must give the same record. The seed holds one line of each kind, so
 * a kind added to the wire but not to the list below fails at once.
 * sources: src/probes/aio_wire.c src/probes/wire_fields.c
 * max_len: 8192
 * seed: printf 'V\t1\t2\tx\nN\t1\tf\tg\t3\nT\t1\t2\t3\t4\t5\nE\t1\t2\tz\nL\t1\t2\t3\nR\t1\t2\t3\tq\t4\nW\t1\t2\t3\t4\tw\t5\t6\nW\t1\t2\t3\t4\tw\t5\nP\t1\t2\t3\t4\nX\tmsg\t1\n' > "$CORPUS/every_kind"
 */
#include "probes/aio_wire.h"

#include "fuzz_lines.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void line_check(const char *line, size_t len)
{
	struct aio_record r, again;
	int rc = aio_record_parse(line, len, &r);
	if (rc != 0 && rc != -1)
		abort();
	if (rc)
		return;
	if (!strchr("VNTELRWPX", r.kind) || r.kind != line[0] || len > AIO_LINE_MAX)
		abort();
	for (int i = 0; i < 3; i++)
		if (r.s[i] && (r.s[i] < line || r.s[i] + r.slen[i] > line + len ||
			       memchr(r.s[i], '\t', r.slen[i])))
			abort();
	if (aio_record_parse(line, len, &again) || memcmp(&r, &again, sizeof(r)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	fuzz_lines_each(data, n, line_check);
	return 0;
}
