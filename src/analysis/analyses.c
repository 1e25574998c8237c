/* analyses: the table of analyses and the report model they build together. */
#include "analysis.h"
#include "procstats.h"
#include "program.h"
#include "../record/reader.h"
#include "../util/log.h"
#include "../util/order.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"
#include "../version.h"

#include <stdlib.h>
#include <string.h>

#define ANALYSIS(name) extern const struct analysis_ops analysis_##name;
#include "analysis_list.h"
#undef ANALYSIS

const struct analysis_ops *const analysis_table[] = {
#define ANALYSIS(name) &analysis_##name,
#include "analysis_list.h"
#undef ANALYSIS
	NULL,
};

int analysis_order(const struct analysis_ops *const *table, const struct analysis_ops **out,
		   struct strbuf *why)
{
	struct order_item items[ANALYSES_MAX] = { { 0 } };
	size_t idx[ANALYSES_MAX], n = 0;
	for (; table[n]; n++) {
		if (n == ANALYSES_MAX) {
			strbuf_addf(why, "more than %d analyses", ANALYSES_MAX);
			return -1;
		}
		items[n] = (struct order_item){ table[n]->name, table[n]->needs, table[n]->provides };
	}
	if (order_by_needs(items, n, NULL, idx, "analyses", why) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = table[idx[i]];
	return (int)n;
}

/* Why a dimension is absent, when no analysis filled it or said otherwise. */
static const struct {
	const char *key, *reason;
} default_absent[] = {
	{ "cpu", "no CPU figures were recorded (the proc probe did not run)" },
	{ "memory", "no memory figures were recorded (the proc probe did not run)" },
	{ "hotspots", "no stack samples were recorded (the cpu and python probes were off, "
		      "unavailable, or the run was too short for one sample)" },
	{ "phases", "no phase markers were found in the recording" },
	{ "gpu", "no GPU probe ran in this recording" },
	{ "interconnect", "no transfer probe (CUDA, NCCL) ran in this recording" },
};

void report_not_measured(json_t *report, const char *dimension, const char *reason)
{
	json_t *nm = json_object_get(report, "not_measured");
	if (!nm) {
		nm = json_object();
		json_object_set_new(report, "not_measured", nm);
	}
	json_object_set_new(nm, dimension, json_string(reason));
}

void report_phase_at(json_t *report, double t_s, struct strbuf *out)
{
	json_t *phases = json_object_get(report, "phases");
	size_t i;
	json_t *p;
	const char *best = NULL;
	double best_len = 0;
	json_array_foreach(phases, i, p) {
		double st = json_number_value(json_object_get(p, "start_s"));
		double en = json_number_value(json_object_get(p, "end_s"));
		const char *name = json_string_value(json_object_get(p, "name"));
		if (name && t_s >= st && t_s <= en && (!best || en - st < best_len)) {
			best = name;
			best_len = en - st;
		}
	}
	if (best)
		strbuf_addstr(out, best);
}

json_t *report_string(const char *s, size_t n)
{
	if (!s)
		return json_null();
	if (utf8_valid(s, n))
		return json_stringn(s, n);
	struct strbuf sb = STRBUF_INIT;
	utf8_sanitize(s, n, &sb);
	json_t *j = json_stringn(strbuf_str(&sb), sb.len);
	strbuf_release(&sb);
	return j;
}

void report_target_args(sqlite3 *db, struct strbuf *out)
{
	int64_t attached = 0, pid = 0;
	if (!recording_meta_int(db, "attached", &attached) && attached &&
	    !recording_meta_int(db, "leader_pid", &pid) && pid > 0)
		strbuf_addf(out, "-p %lld", (long long)pid);
	else
		strbuf_addstr(out, "-- COMMAND");
}

double report_wall_s(sqlite3 *db)
{
	int64_t wall_ns;
	if (recording_meta_int(db, "wall_ns", &wall_ns) || wall_ns <= 0)
		return -1;
	return (double)wall_ns / 1e9;
}

double report_sampled_s(sqlite3 *db, const char *rate_key, double samples, double share_pct)
{
	double wall_s = report_wall_s(db);
	if (wall_s <= 0)
		return -1;
	int64_t hz = 0;
	double s = share_pct / 100.0 * wall_s;
	if (rate_key && !recording_meta_int(db, rate_key, &hz) && hz > 0)
		s = samples / (double)hz;
	return s < wall_s ? s : wall_s; /* several threads: at most the whole run */
}

int analysis_findings_check(const struct analysis_ops *a, const struct findings *fs, size_t first,
			    struct strbuf *why)
{
	for (size_t k = first; k < fs->n; k++) {
		const struct finding *f = &fs->v[k];
		int declared = 0;
		for (const char *const *id = a->findings; id && *id && !declared; id++)
			declared = !strcmp(*id, f->id);
		if (declared && findings_dimension_known(f->dimension))
			continue;
		strbuf_addf(why, "analysis %s added finding %s (dimension '%s'), %s", a->name,
			    f->id ? f->id : "(none)", f->dimension ? f->dimension : "",
			    declared ? "a dimension not of the fixed set" : "which it does not declare");
		return -1;
	}
	return 0;
}

/* A finding added where it is not declared is a bug: fatal in a debug build
 * (the tests), said in a release one, where the finding is kept. */
static void findings_check_declared(const struct analysis_ops *a, const struct findings *fs,
				    size_t first)
{
	struct strbuf why = STRBUF_INIT;
	if (analysis_findings_check(a, fs, first, &why)) {
		log_warn("internal: %s", why.buf);
#ifndef NDEBUG
		abort();
#endif
	}
	strbuf_release(&why);
}

json_t *report_build(sqlite3 *db, struct strbuf *err)
{
	return report_build_with(db, NULL, err);
}

json_t *report_build_with(sqlite3 *db, const struct report_options *opts, struct strbuf *err)
{
	static const struct report_options no_options = { NULL };
	json_t *report = json_object();
	struct findings fs = FINDINGS_INIT;
	struct procstats procs;
	int have_procs = procstats_load(db, &procs) == 0;
	struct program prog = PROGRAM_INIT;
	int wrapped = have_procs && program_find(db, &procs, &prog) == 1 &&
		      !program_mark_wrapper(db, &prog, &procs);
	if (!wrapped)
		program_mark_wrapper(db, NULL, NULL);
	struct analysis_ctx ctx = { .db = db,
				    .opts = opts ? opts : &no_options,
				    .report = report,
				    .findings = &fs,
				    .procs = have_procs ? &procs : NULL,
				    .program = wrapped ? &prog : NULL };
	json_object_set_new(report, "sonde_version", json_string(SONDE_VERSION));
	json_object_set_new(report, "schema", json_integer(REPORT_SCHEMA_VERSION));
	int ran = 0;
	const struct analysis_ops *order[ANALYSES_MAX];
	struct strbuf cycle = STRBUF_INIT;
	int n = analysis_order(analysis_table, order, &cycle);
	if (n < 0) { /* a table that waits on itself: a bug, said and run as listed */
		strbuf_addf(err, "%s%s", err->len ? "; " : "", cycle.buf);
		for (n = 0; analysis_table[n] && n < ANALYSES_MAX; n++)
			order[n] = analysis_table[n];
	}
	strbuf_release(&cycle);
	for (int i = 0; i < n; i++) {
		size_t before = fs.n;
		int rc = order[i]->run(&ctx);
		findings_check_declared(order[i], &fs, before);
		if (rc)
			strbuf_addf(err, "%sanalysis %s could not read the recording",
				    err->len ? "; " : "", order[i]->name);
		else
			ran++;
	}
	if (have_procs)
		procstats_release(&procs);
	program_release(&prog);
	if (!ran) {
		json_decref(report);
		findings_release(&fs);
		return NULL;
	}
	json_t *nm = json_object_get(report, "not_measured");
	for (size_t i = 0; i < sizeof(default_absent) / sizeof(default_absent[0]); i++)
		if (!json_object_get(report, default_absent[i].key) &&
		    !(nm && json_object_get(nm, default_absent[i].key)))
			report_not_measured(report, default_absent[i].key, default_absent[i].reason);
	findings_merge(&fs);
	findings_rank(&fs, report_wall_s(db), FINDINGS_KEPT_MAX);
	json_t *findings = findings_to_json(&fs);
	findings_mark_known(findings, json_object_get(report, "notes"));
	/* The ranked list is the first few; the smaller ones stay in the model. */
	json_t *more = json_array();
	while (json_array_size(findings) > FINDINGS_SHOWN_MAX) {
		json_array_insert(more, 0, json_array_get(findings, json_array_size(findings) - 1));
		json_array_remove(findings, json_array_size(findings) - 1);
	}
	json_object_set_new(report, "findings", findings);
	if (json_array_size(more))
		json_object_set_new(report, "more_findings", more);
	else
		json_decref(more);
	findings_release(&fs);
	return report;
}
