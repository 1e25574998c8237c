/* fuzz_alloc_wire: the allocation agent's stream is written by the target, so
 * its framing, STACK and PYCODE records and packed events must survive any
 * bytes. The seed is a stream of every record kind (alloc_wire.h).
 * sources: src/probes/alloc_decode.c src/symbols/cpython_lines.c src/symbols/cpython_layouts.c
 * seed: python3 -c 'import os, struct as s; r = lambda t, b: s.pack("=HHIQ", t, 16 + len(b), 7, 1) + b; pad = lambda b: b + bytes(-len(b) % 8); d = r(1, s.pack("=QIIIIQII", 0x45444e4f53434c41, 4, 7, 1, 0, 0, 0, 1)) + r(2, s.pack("=QQQ", 0, 4096, 8192) + pad(b"x.so\0")) + r(6, s.pack("=II", 1, 1) + s.pack("=Q", 4100)) + r(7, pad(bytes([1, 0, 2, 16, 1, 3, 0, 2, 16, 1, 1, 2, 0, 1]))) + r(9, pad(s.pack("=QQiHBBHHHH", 0x7f0000002000, 85, 10, 0x30b, 1, 2, 1, 8, 4, 200) + b"fx\0y\0.\0p\0\xe8\x02\xe8\x04")) + r(8, s.pack("=HHI", 0x30b, 0, 1) + s.pack("=QQQ", 0x7f0000002000, 0x7f00000020ca, 85)) + r(16, s.pack("=QQ", 4096, 4096)) + r(17, b"") + r(5, b""); open(os.environ["CORPUS"] + "/every_kind", "wb").write(d)'
 */
#include "probes/alloc_decode.h"
#include "symbols/cpython_layout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A PYCODE record's strings and line table, as the reader uses them. */
static void pycode_check(const unsigned char *rec, size_t len)
{
	struct alloc_pycode c;
	if (alloc_pycode_parse(rec, len, &c))
		return;
	if (c.name + c.name_len > rec + len || c.file + c.file_len > rec + len ||
	    c.table + c.table_len > rec + len)
		abort();
	char name[4 * ALLOC_PYCODE_MAX_NAME + 1], file[4 * ALLOC_WIRE_MAX_PATH + 1];
	cpython_chars_utf8(c.name, c.name_len, c.name_kind, name, sizeof(name));
	cpython_chars_utf8(c.file, c.file_len, c.file_kind, file, sizeof(file));
	int minor = c.py_version & 0xff;
	int64_t addr = cpython_code_addr(minor, c.units_off, c.code, c.code + c.units_off + 8);
	cpython_code_line(minor, c.table, c.table_len, c.firstlineno, addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* A copy of exactly n bytes: a read past the end is caught. */
	unsigned char *buf = malloc(n ? n : 1);
	memcpy(buf, data, n);
	size_t off = 0;
	struct alloc_rec_head h;
	while (alloc_frame(buf + off, n - off, &h) > 0) {
		if (h.type == ALLOC_REC_STACK) {
			uint64_t ips[ALLOC_WIRE_MAX_FRAMES];
			uint32_t id, nips;
			if (!alloc_stack_parse(buf + off, h.len, &id, ips, &nips) &&
			    nips > ALLOC_WIRE_MAX_FRAMES)
				abort();
		} else if (h.type == ALLOC_REC_EVENTS) {
			struct alloc_events it;
			struct alloc_ev ev;
			int rc, count = 0;
			alloc_events_begin(&it, buf + off, h.len);
			while ((rc = alloc_events_next(&it, &ev)) > 0)
				if (++count > (int)h.len)
					abort(); /* every event takes at least one byte */
		} else if (h.type == ALLOC_REC_PYCODE) {
			pycode_check(buf + off, h.len);
		}
		off += h.len;
	}
	free(buf);
	return 0;
}
