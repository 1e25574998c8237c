/* focus: report["focus"], what the report leads with (--focus) and what sonde
 * chose to measure and why, from the probes' states and what they found. */
#include "analysis.h"
#include "../record/reader.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* The probe's recorded status ("on", "off", "unavailable"), malloc'd, or NULL. */
static char *probe_status(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st;
	char *status = NULL;
	if (sqlite3_prepare_v2(db, "SELECT status FROM probes WHERE name = ?", -1, &st, NULL))
		return NULL;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		status = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return status;
}

static int probe_on(sqlite3 *db, const char *name)
{
	char *s = probe_status(db, name);
	int on = s && !strcmp(s, "on");
	free(s);
	return on;
}

static int focus_has(const char *focus, const char *dim)
{
	return parse_list_has(focus, dim, strlen(dim));
}

static void choice_add(json_t *choices, const char *what, const char *why)
{
	json_t *c = json_object();
	json_object_set_new(c, "what", report_string(what, strlen(what)));
	json_object_set_new(c, "why", report_string(why, strlen(why)));
	json_array_append_new(choices, c);
}

static void choose_stacks(sqlite3 *db, const char *focus, json_t *choices, struct strbuf *sb)
{
	int64_t rate_hz;
	if (probe_on(db, "cpu") && !recording_meta_int(db, "rate_hz", &rate_hz)) {
		strbuf_reset(sb);
		strbuf_addf(sb, "native stacks sampled at %lld Hz", (long long)rate_hz);
		choice_add(choices, sb->buf,
			   focus_has(focus, "cpu") ? "--focus cpu (499 Hz unless -r is given)"
						   : "the rate asked (-r; 99 Hz by default)");
	}
	if (!probe_on(db, "python"))
		return;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT text FROM notes WHERE probe = 'python' AND kind = 'found'"
			       " ORDER BY t_ns",
			       -1, &st, NULL))
		return;
	int n = 0;
	strbuf_reset(sb);
	while (sqlite3_step(st) == SQLITE_ROW)
		if (!n++ && sqlite3_column_text(st, 0))
			strbuf_addstr(sb, (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	if (n > 1)
		strbuf_addf(sb, "; %d more processes", n - 1);
	if (n)
		choice_add(choices, "Python stacks on", sb->buf);
	else
		choice_add(choices, "no Python stacks",
			   "no CPython interpreter was found in the target's processes");
}

static void choose_memory(sqlite3 *db, const char *focus, json_t *choices)
{
	int64_t attached = 0;
	recording_meta_int(db, "attached", &attached);
	char *mode = recording_meta_text(db, "alloc_mode");
	if (probe_on(db, "alloc"))
		choice_add(choices,
			   mode && !strcmp(mode, "full") ? "every heap allocation tracked"
							 : "heap allocations tracked (sampled)",
			   focus_has(focus, "memory") ? "--focus memory" : "--memory");
	else if (attached)
		choice_add(choices, "heap allocations not tracked (RSS only)",
			   "the tracker is preloaded at start: an attached process cannot have it; "
			   "'sonde run --focus memory -- COMMAND' tracks them");
	else
		choice_add(choices, "heap allocations not tracked (RSS only)",
			   "off by default; --focus memory or --memory tracks them");
	free(mode);
}

/* An agent's probe that ran: whether its agent reported from any process
 * (meta key counts them), and why. */
static void choose_agent(sqlite3 *db, const char *probe, const char *key, const char *what_on,
			 const char *one, const char *what_off, const char *why_off,
			 json_t *choices, struct strbuf *sb)
{
	int64_t n = 0, attached = 0;
	if (!probe_on(db, probe))
		return;
	recording_meta_int(db, key, &n);
	recording_meta_int(db, "attached", &attached);
	if (!n && attached)
		why_off = "its agent goes in when a process starts: an attached process cannot "
			  "have it";
	strbuf_reset(sb);
	strbuf_addf(sb, "%lld %s process%s", (long long)n, one, n == 1 ? "" : "es");
	choice_add(choices, n ? what_on : what_off, n ? sb->buf : why_off);
}

static void choose_agents(sqlite3 *db, json_t *choices, struct strbuf *sb)
{
	choose_agent(db, "cuda", "gpu_processes", "CUDA activity recorded (the CUDA agent)", "CUDA",
		     "no CUDA agent data", "no process loaded libcudart and initialised CUDA",
		     choices, sb);
	choose_agent(db, "asyncio", "aio_processes", "asyncio tasks recorded (the asyncio agent)",
		     "asyncio", "no asyncio data", "no Python process imported asyncio", choices,
		     sb);
	double unavailable = 0;
	recording_query_double(db, "SELECT count(*) FROM probes WHERE status = 'unavailable'",
			       &unavailable);
	if (unavailable > 0) {
		strbuf_reset(sb);
		strbuf_addf(sb, "%.0f probe%s unavailable", unavailable,
			    unavailable > 1 ? "s" : "");
		choice_add(choices, sb->buf, "each with its reason under Not measured");
	}
}

static int focus_run(struct analysis_ctx *ctx)
{
	if (!recording_has_table(ctx->db, "probes"))
		return -1;
	char *focus = recording_meta_text(ctx->db, "focus");
	json_t *f = json_object(), *dims = json_array(), *choices = json_array();
	for (const char *p = focus; p && *p;) {
		size_t k = strcspn(p, ",");
		json_array_append_new(dims, report_string(p, k));
		p += k;
		p += *p == ',';
	}
	struct strbuf sb = STRBUF_INIT;
	choose_stacks(ctx->db, focus, choices, &sb);
	choose_memory(ctx->db, focus, choices);
	choose_agents(ctx->db, choices, &sb);
	strbuf_release(&sb);
	json_object_set_new(f, "dimensions", dims);
	json_object_set_new(f, "asked", json_boolean(focus != NULL));
	json_object_set_new(f, "choices", choices);
	json_object_set_new(ctx->report, "focus", f);
	free(focus);
	return 0;
}

const struct analysis_ops analysis_focus = { .name = "focus", .run = focus_run };
