/* parse: number and duration parsing that rejects trailing junk. */
#include "parse.h"
#include "clock.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Plain decimal only: no sign, no leading space, no hex (strtod takes all three). */
static int plain_decimal(const char *s)
{
	if (!(isdigit((unsigned char)s[0]) || (s[0] == '.' && isdigit((unsigned char)s[1]))))
		return 0;
	return !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'));
}

int parse_duration_ns(const char *s, int64_t *out_ns)
{
	if (!s || !*s || !plain_decimal(s))
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v <= 0)
		return -EINVAL;
	double scale;
	if (!*end || !strcmp(end, "s"))
		scale = 1e9;
	else if (!strcmp(end, "ms"))
		scale = 1e6;
	else if (!strcmp(end, "us"))
		scale = 1e3;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		scale = 60e9;
	else if (!strcmp(end, "h"))
		scale = 3600e9;
	else
		return -EINVAL;
	double ns = v * scale;
	if (ns < 1 || ns > 9e18)
		return -ERANGE;
	*out_ns = (int64_t)ns;
	return 0;
}

int parse_long_range(const char *s, long min, long max, long *out)
{
	if (!s || !*s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
		return -EINVAL;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_list_has(const char *list, const char *name, size_t n)
{
	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, name, n))
			return 1;
		p += k;
		p += *p == ',';
	}
	return 0;
}
