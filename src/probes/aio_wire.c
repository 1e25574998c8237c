/* aio_wire: parsing the asyncio agent's records (aio_wire.h). */
#include "aio_wire.h"

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

static int parse_int(const char *p, size_t len, int64_t *out)
{
	size_t i = 0;
	int neg = 0;
	uint64_t v = 0;
	if (len && p[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == len || len - i > 18)
		return -1;
	for (; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
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
	const char *p = line + 2, *end = line + len;
	size_t ni = 0, ns = 0;
	for (const char *f = fields; *f; f++) {
		const char *tab = memchr(p, '\t', (size_t)(end - p));
		const char *stop = tab ? tab : end;
		if ((tab != NULL) != (f[1] != '\0'))
			return -1; /* too few or too many fields */
		if (*f == 'i' && parse_int(p, (size_t)(stop - p), &r->n[ni++]))
			return -1;
		if (*f == 's') {
			r->s[ns] = p;
			r->slen[ns++] = (size_t)(stop - p);
		}
		p = tab ? tab + 1 : end;
	}
	return 0;
}
