/* wire_fields: the field splitter shared by the agents' line formats
 * (aio_wire.h, gpu_wire.h): after the kind and a tab, tab-separated fields,
 * each an integer or a string as a layout says. Parses only; nothing is
 * allocated and the strings point into the line. */
#ifndef SONDE_WIRE_FIELDS_H
#define SONDE_WIRE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

/* Splits line[2..len) by the layout `fields` ('i': a decimal integer of at
 * most 18 digits, maybe negative; 's': any bytes but a tab). The integers go
 * to n[] and the strings to s[]/slen[] in their order; the caller sizes them
 * for the layout. 0, or -1 when the line has other fields than the layout
 * (too few, too many, an integer that is not one); n, s and slen may then
 * hold part of the line. */
int wire_fields_parse(const char *line, size_t len, const char *fields, int64_t *n,
		      const char **s, size_t *slen);

#endif
