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
	case 'W': return "iiiisii";
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
	if (!wire_fields_parse(line, len, fields, r->n, r->s, r->slen))
		return 0;
	if (r->kind != 'W')
		return -1;
	/* A W of an agent before in_flight: its six fields, in_flight unknown. */
	memset(r->n, 0, sizeof(r->n));
	memset(r->s, 0, sizeof(r->s));
	memset(r->slen, 0, sizeof(r->slen));
	if (wire_fields_parse(line, len, "iiiisi", r->n, r->s, r->slen))
		return -1;
	r->n[5] = -1;
	return 0;
}
