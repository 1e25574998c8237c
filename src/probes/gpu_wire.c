/* gpu_wire: parsing the cuda agent's records (gpu_wire.h). */
#include "gpu_wire.h"
#include "wire_fields.h"

#include <string.h>

/* Each kind's fields: i an integer, s a string. */
static const char *kind_fields(char kind)
{
	switch (kind) {
	case 'V': return "iii";
	case 'Q': return "s";
	case 'D': return "iiiiis";
	case 'K': return "iiiiiiiiiiiiiis";
	case 'M': return "iiiiiiiiisss";
	case 'S': return "iiiiii";
	case 'A': return "iiiiis";
	case 'Y': return "iiiis";
	case 'G': return "iiiiiss";
	case 'N': return "iiiiisss";
	case 'X': return "si";
	default: return NULL;
	}
}

int gpu_record_parse(const char *line, size_t len, struct gpu_record *r)
{
	memset(r, 0, sizeof(*r));
	if (len < 2 || len > GPU_LINE_MAX)
		return -1;
	const char *fields = kind_fields(line[0]);
	if (!fields || wire_fields_parse(line, len, fields, r->n, r->s, r->slen)) {
		memset(r, 0, sizeof(*r));
		return -1;
	}
	r->kind = line[0];
	return 0;
}
