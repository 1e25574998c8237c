/* filter: parsing --from, --to, --pid, --tid and --during, and finding a
 * phase's window. */
#include "filter.h"
#include "cli.h"
#include "suggest.h"
#include "../analysis/analysis.h"
#include "../record/reader.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
	if (c == FILTER_OPT_DURING) {
		if (!*arg) {
			cli_error("--during needs a phase's name (see the report's Phases)");
			return -1;
		}
		f->phase = arg;
		return 1;
	}
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
	return f->from_ns > 0 || f->to_ns >= 0 || f->pid || f->tid || f->phase;
}

/* At most this many bytes of a phase's name go into a slice's name. */
#define FILTER_NAME_PHASE_MAX 48

void filter_name(const struct slice_filter *f, struct strbuf *out)
{
	size_t start = out->len;
	if (f->phase) {
		strbuf_addstr(out, "during_");
		for (size_t i = 0; f->phase[i] && i < FILTER_NAME_PHASE_MAX; i++) {
			unsigned char ch = (unsigned char)f->phase[i];
			strbuf_addch(out, isalnum(ch) || ch == '-' || ch == '.' ? (char)ch : '_');
		}
	} else if (f->from_ns > 0 || f->to_ns >= 0) {
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

/* The nth (from 1) of the phases called name, in report order (by start);
 * NULL past the last. With nth 0, none: *count gets how many there are. */
static json_t *phase_nth(json_t *phases, const char *name, size_t nth, size_t *count)
{
	size_t seen = 0, i;
	json_t *p;
	json_array_foreach(phases, i, p) {
		const char *pn = json_string_value(json_object_get(p, "name"));
		if (pn && !strcmp(pn, name) && ++seen == nth)
			return p;
	}
	if (count)
		*count = seen;
	return NULL;
}

/* ": no phase of that name (did you mean 'x'?); its phases: 'a', 'b'": the
 * distinct names, at most 8. */
static void phases_say(json_t *phases, const char *want, struct strbuf *sb)
{
	struct suggest sg;
	suggest_init(&sg, want, strlen(want));
	size_t i, listed = 0;
	json_t *p;
	json_array_foreach(phases, i, p) {
		const char *pn = json_string_value(json_object_get(p, "name"));
		if (pn)
			suggest_try(&sg, pn);
	}
	const char *near = suggest_result(&sg);
	strbuf_addstr(sb, ": no phase of that name");
	if (near)
		strbuf_addf(sb, " (did you mean '%s'?)", near);
	strbuf_addstr(sb, "; its phases: ");
	json_array_foreach(phases, i, p) {
		const char *pn = json_string_value(json_object_get(p, "name"));
		if (!pn || phase_nth(phases, pn, 1, NULL) != p)
			continue; /* each name once */
		if (listed == 8) {
			strbuf_addstr(sb, ", ...");
			break;
		}
		strbuf_addf(sb, "%s'%s'", listed++ ? ", " : "", pn);
	}
}

/* The phase --during names: NAME, or NAME#N (the Nth of that name) when no
 * phase is called NAME#N itself. NULL with the error printed. */
static json_t *phase_find(json_t *phases, const char *want)
{
	size_t n = 0, have = 0;
	json_t *p = phase_nth(phases, want, 1, NULL);
	phase_nth(phases, want, 0, &n);
	if (n == 1)
		return p;
	if (n > 1) {
		cli_error("--during '%s': %zu phases have that name: say %s#1 to %s#%zu", want, n,
			  want, want, n);
		return NULL;
	}
	const char *hash = strrchr(want, '#');
	long nth;
	if (hash && !parse_long_range(hash + 1, 1, 1000000, &nth)) {
		char *name = xstrndup(want, (size_t)(hash - want));
		phase_nth(phases, name, 0, &have);
		p = phase_nth(phases, name, (size_t)nth, NULL);
		if (have && !p)
			cli_error("--during '%s': '%s' ran %zu time%s", want, name, have,
				  have == 1 ? "" : "s");
		free(name);
		if (have)
			return p;
	}
	if (!json_array_size(phases)) {
		cli_error("--during '%s': the run has no phases (its output marked none; see "
			  "docs/phases.md)",
			  want);
		return NULL;
	}
	struct strbuf sb = STRBUF_INIT;
	phases_say(phases, want, &sb);
	cli_error("--during '%s'%s", want, sb.buf);
	strbuf_release(&sb);
	return NULL;
}

int filter_resolve(const char *db_path, struct slice_filter *f, const struct report_options *opts)
{
	if (!f->phase)
		return 0;
	if (f->from_ns > 0 || f->to_ns >= 0) {
		cli_error("--during '%s' is a window of its own: give it without --from and --to",
			  f->phase);
		return -1;
	}
	struct strbuf err = STRBUF_INIT;
	sqlite3 *db = NULL;
	json_t *report = NULL;
	int ret = -1;
	if (recording_open(db_path, &db, &err) || !(report = report_build_with(db, opts, &err))) {
		cli_error("%s", err.len ? err.buf : "cannot read the recording's phases");
		goto out;
	}
	json_t *p = phase_find(json_object_get(report, "phases"), f->phase);
	if (!p)
		goto out;
	double start_s = json_number_value(json_object_get(p, "start_s"));
	double end_s = json_number_value(json_object_get(p, "end_s"));
	f->from_ns = (int64_t)llround(start_s * 1e9);
	f->to_ns = (int64_t)llround(end_s * 1e9);
	if (f->to_ns <= f->from_ns)
		f->to_ns = f->from_ns + 1; /* a mark of no length: its moment */
	json_int_t tid = json_integer_value(json_object_get(p, "tid"));
	if (tid > 0 && !f->tid)
		f->tid = (int64_t)tid;
	ret = 0;
out:
	json_decref(report);
	sqlite3_close(db);
	strbuf_release(&err);
	return ret;
}
