/* pb: protocol buffers written by hand, into a strbuf: varints,
 * length-delimited fields (strings, nested messages, packed lists) and
 * fixed-width fields, enough for pprof's profile.proto and Perfetto's
 * TracePacket. A field of value 0 is left out by pb_uint (proto3's rule);
 * pb_uint_always writes it. */
#ifndef SONDE_PB_H
#define SONDE_PB_H

#include "strbuf.h"

#include <stddef.h>
#include <stdint.h>

enum { PB_WIRE_VARINT = 0, PB_WIRE_FIXED64 = 1, PB_WIRE_LEN = 2 };

void pb_varint(struct strbuf *sb, uint64_t v);
/* A varint field, left out when v is 0. */
void pb_uint(struct strbuf *sb, int field, uint64_t v);
/* A varint field, written even when v is 0 (proto2's optional fields). */
void pb_uint_always(struct strbuf *sb, int field, uint64_t v);
/* A fixed64 field (a double's bits, or a fixed64 id), little-endian. */
void pb_fixed64(struct strbuf *sb, int field, uint64_t v);
void pb_double(struct strbuf *sb, int field, double v);
/* A length-delimited field: a string, a message or a packed list. */
void pb_bytes(struct strbuf *sb, int field, const void *data, size_t len);
void pb_msg(struct strbuf *sb, int field, const struct strbuf *msg);

#endif
