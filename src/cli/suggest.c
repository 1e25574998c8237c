/* suggest: edit distance (optimal string alignment) over short names. */
#include "suggest.h"
#include "cli.h"

#include <getopt.h>
#include <string.h>

#define SUGGEST_NAME_MAX 64 /* longer words get no suggestion */

void suggest_init(struct suggest *s, const char *word, size_t len)
{
	*s = (struct suggest){ word, len, NULL, (size_t)-1 };
}

static size_t min3(size_t a, size_t b, size_t c)
{
	size_t m = a < b ? a : b;
	return m < c ? m : c;
}

static size_t distance(const char *a, size_t n, const char *b, size_t m)
{
	size_t d[SUGGEST_NAME_MAX + 1][SUGGEST_NAME_MAX + 1];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < d[i][j])
				d[i][j] = d[i - 2][j - 2] + 1;
		}
	return d[n][m];
}

void suggest_try(struct suggest *s, const char *candidate)
{
	size_t m = strlen(candidate);
	if (!s->len || s->len > SUGGEST_NAME_MAX || m > SUGGEST_NAME_MAX)
		return;
	size_t d = distance(s->word, s->len, candidate, m);
	size_t longer = s->len > m ? s->len : m, limit = longer / 3;
	limit = limit < 1 ? 1 : limit > 3 ? 3 : limit;
	if (d <= limit && d < s->dist) {
		s->best = candidate;
		s->dist = d;
	}
}

const char *suggest_result(const struct suggest *s)
{
	return s->best;
}

const char *suggest_option(const char *arg, const struct option *opts)
{
	if (!arg)
		return NULL;
	while (*arg == '-')
		arg++;
	struct suggest s;
	suggest_init(&s, arg, strcspn(arg, "="));
	for (const struct option *o = opts; o->name; o++)
		suggest_try(&s, o->name);
	return suggest_result(&s);
}

void cli_bad_option(const char *cmd, int c, int optopt, const char *arg,
		    const struct option *opts)
{
	if (c == ':') {
		cli_error("option %s needs a value (see 'sonde %s --help')", arg, cmd);
		return;
	}
	/* An unknown short option comes in optopt; a long one only in arg. */
	if (optopt > 0 && optopt < 128) {
		cli_error("unknown option -%c (see 'sonde %s --help')", optopt, cmd);
		return;
	}
	const char *near = suggest_option(arg, opts);
	if (near)
		cli_error("unknown option %s (did you mean --%s? see 'sonde %s --help')", arg, near,
			  cmd);
	else
		cli_error("unknown option %s (see 'sonde %s --help')", arg, cmd);
}
