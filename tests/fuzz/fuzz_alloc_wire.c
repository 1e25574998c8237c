/* fuzz_alloc_wire: the allocation agent's stream is written by the target, so
 * its framing, STACK records and packed events must survive any bytes.
 * sources: src/probes/alloc_decode.c */
#include "probes/alloc_decode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
		}
		off += h.len;
	}
	free(buf);
	return 0;
}
