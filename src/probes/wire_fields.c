/* wire_fields: the agents' tab-separated fields (wire_fields.h). */
#include "wire_fields.h"

#include <string.h>

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

int wire_fields_parse(const char *line, size_t len, const char *fields, int64_t *n,
		      const char **s, size_t *slen)
{
	if (len < 2 || line[1] != '\t')
		return -1;
	const char *p = line + 2, *end = line + len;
	size_t ni = 0, ns = 0;
	for (const char *f = fields; *f; f++) {
		const char *tab = memchr(p, '\t', (size_t)(end - p));
		const char *stop = tab ? tab : end;
		if ((tab != NULL) != (f[1] != '\0'))
			return -1; /* too few or too many fields */
		if (*f == 'i' && parse_int(p, (size_t)(stop - p), &n[ni++]))
			return -1;
		if (*f == 's') {
			s[ns] = p;
			slen[ns++] = (size_t)(stop - p);
		}
		p = tab ? tab + 1 : end;
	}
	return 0;
}
