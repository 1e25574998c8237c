/* aio_wire: parsing the asyncio agent's records (aio_wire.h). */
#include "aio_wire.h"
#include "wire_fields.h"

#include <string.h>

/* Each kind's fields: i an integer, s a string. */
static const char *kind_fields(char kind)
{
	switch (kind) {
	case 'V': return "iis";
	case 'N': return "issi";
	case 'T': return "iiiii";
	case 'E': return "iis";
	case 'L': return "iii";
	case 'R': return "iiisi";
	case 'W': return "iiiisi";
	case 'P': return "iiii";
	case 'X': return "si";
	default: return NULL;
	}
}

int aio_record_parse(const char *line, size_t len, struct aio_record *r)
{
	memset(r, 0, sizeof(*r));
	if (len < 2 || len > AIO_LINE_MAX || line[1] != '\t')
		return -1;
	const char *fields = kind_fields(line[0]);
	if (!fields)
		return -1;
	r->kind = line[0];
	return wire_fields_parse(line, len, fields, r->n, r->s, r->slen);
}
