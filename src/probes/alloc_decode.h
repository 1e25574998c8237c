/* alloc_decode: the parts of reading the agent's stream (alloc_wire.h) that
 * need nothing but bytes: record framing, STACK and PYCODE records and the
 * packed events of an EVENTS record. Every input is untrusted (the target
 * wrote it), so each function checks lengths and says when the bytes are
 * malformed. */
#ifndef SONDE_ALLOC_DECODE_H
#define SONDE_ALLOC_DECODE_H

#include "../agents/alloc/alloc_wire.h"

#include <stddef.h>
#include <stdint.h>

/* The record at p (avail bytes on hand): returns 1 and fills *h when it is
 * whole, 0 when more bytes are needed, -1 when its length is impossible. */
int alloc_frame(const unsigned char *p, size_t avail, struct alloc_rec_head *h);

/* A STACK record of len bytes: fills *id, ips (room for ALLOC_WIRE_MAX_FRAMES)
 * and *nips. Returns 0, or -1 when malformed. */
int alloc_stack_parse(const unsigned char *rec, size_t len, uint32_t *id, uint64_t *ips,
		      uint32_t *nips);

/* A PYCODE record's fields; name, file and table point into the record. */
struct alloc_pycode {
	uint64_t code, ident;
	int32_t firstlineno;
	uint16_t py_version, units_off;
	uint8_t name_kind, file_kind; /* 1, 2 or 4 */
	const unsigned char *name, *file, *table;
	size_t name_len, file_len, table_len; /* bytes, whole characters */
};

/* A PYCODE record of len bytes: fills *out. Returns 0, or -1 when malformed
 * (lengths past the record or the wire's bounds, a bad kind, a cut character). */
int alloc_pycode_parse(const unsigned char *rec, size_t len, struct alloc_pycode *out);

struct alloc_ev {
	int tag; /* ALLOC_EV_ALLOC, ALLOC_EV_ALLOC_PY or ALLOC_EV_FREE */
	uint64_t t; /* in the image's clock */
	uint64_t ptr, size;
	uint32_t stack;
	uint32_t pystack; /* ALLOC_EV_ALLOC_PY: its Python stack's id */
};

struct alloc_events {
	const unsigned char *p, *end;
	uint64_t t, ptr;
};

/* Starts reading an EVENTS record of len bytes (head included). */
void alloc_events_begin(struct alloc_events *it, const unsigned char *rec, size_t len);
/* Returns 1 with *ev filled, 0 at the end, -1 when the events are malformed
 * (the ones before were good). */
int alloc_events_next(struct alloc_events *it, struct alloc_ev *ev);

#endif
