/* filter: parsing --from, --to, --pid and --tid. */
#include "filter.h"
#include "cli.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdlib.h>

#define FILTER_ID_MAX 0x7fffffffL /* pids and tids are positive ints */

/* Seconds on the run's clock: 0 or a duration ("2.5", "2.5s", "1500ms"). */
static int seconds_parse(const char *s, int64_t *out_ns)
{
	char *end;
	double v = strtod(s, &end);
	if (end != s && !*end && v == 0) {
		*out_ns = 0;
		return 0;
	}
	if (end != s && v < 0 && isfinite(v))
		return -2;
	return parse_duration_ns(s, out_ns);
}

int filter_option(struct slice_filter *f, int c, const char *arg)
{
	if (c == FILTER_OPT_FROM || c == FILTER_OPT_TO) {
		const char *name = c == FILTER_OPT_FROM ? "--from" : "--to";
		int64_t ns;
		int rc = seconds_parse(arg, &ns);
		if (rc) {
			cli_error("%s '%s': %s", name, arg,
				  rc == -2 ? "a time must be 0 or more seconds"
					   : "not a time in seconds (e.g. 2.5, 2.5s, 1500ms)");
			return -1;
		}
		if (c == FILTER_OPT_FROM)
			f->from_ns = ns;
		else
			f->to_ns = ns;
		return 1;
	}
	if (c == FILTER_OPT_PID || c == FILTER_OPT_TID) {
		long id;
		if (parse_long_range(arg, 1, FILTER_ID_MAX, &id)) {
			cli_error("%s '%s': not a %s (a positive integer)",
				  c == FILTER_OPT_PID ? "--pid" : "--tid", arg,
				  c == FILTER_OPT_PID ? "process id" : "thread id");
			return -1;
		}
		if (c == FILTER_OPT_PID)
			f->pid = id;
		else
			f->tid = id;
		return 1;
	}
	return 0;
}

int filter_getopt(int argc, char **argv, const char *shortopts, const struct option *opts,
		  struct slice_filter *f)
{
	int c, rc;
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1)
		if ((rc = filter_option(f, c, optarg)) <= 0)
			return rc < 0 ? FILTER_BAD : c;
	return -1;
}

int filter_is_set(const struct slice_filter *f)
{
	return f->from_ns > 0 || f->to_ns >= 0 || f->pid || f->tid;
}

void filter_name(const struct slice_filter *f, struct strbuf *out)
{
	size_t start = out->len;
	if (f->from_ns > 0 || f->to_ns >= 0) {
		strbuf_addf(out, "%gs-", (double)f->from_ns / 1e9);
		if (f->to_ns >= 0)
			strbuf_addf(out, "%gs", (double)f->to_ns / 1e9);
		else
			strbuf_addstr(out, "end");
	}
	if (f->pid)
		strbuf_addf(out, "%spid%lld", out->len > start ? "_" : "", (long long)f->pid);
	if (f->tid)
		strbuf_addf(out, "%stid%lld", out->len > start ? "_" : "", (long long)f->tid);
	if (out->len == start)
		strbuf_addstr(out, "whole");
}
