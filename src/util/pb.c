/* pb: protocol buffers written by hand (pb.h). */
#include "pb.h"

#include <string.h>

void pb_varint(struct strbuf *sb, uint64_t v)
{
	while (v >= 0x80) {
		strbuf_addch(sb, (char)(v | 0x80));
		v >>= 7;
	}
	strbuf_addch(sb, (char)v);
}

void pb_uint_always(struct strbuf *sb, int field, uint64_t v)
{
	pb_varint(sb, (uint64_t)field << 3 | PB_WIRE_VARINT);
	pb_varint(sb, v);
}

void pb_uint(struct strbuf *sb, int field, uint64_t v)
{
	if (v)
		pb_uint_always(sb, field, v);
}

void pb_fixed64(struct strbuf *sb, int field, uint64_t v)
{
	pb_varint(sb, (uint64_t)field << 3 | PB_WIRE_FIXED64);
	for (int i = 0; i < 8; i++)
		strbuf_addch(sb, (char)(v >> (8 * i)));
}

void pb_double(struct strbuf *sb, int field, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	pb_fixed64(sb, field, bits);
}

void pb_bytes(struct strbuf *sb, int field, const void *data, size_t len)
{
	pb_varint(sb, (uint64_t)field << 3 | PB_WIRE_LEN);
	pb_varint(sb, len);
	if (len)
		strbuf_add(sb, data, len);
}

void pb_msg(struct strbuf *sb, int field, const struct strbuf *msg)
{
	pb_bytes(sb, field, msg->buf, msg->len);
}
