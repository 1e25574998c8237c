/* analyses: the table of analyses and the report model they build together. */
#include "analysis.h"
#include "procstats.h"
#include "program.h"
#include "../record/reader.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"
#include "../version.h"

#include <string.h>

extern const struct analysis_ops analysis_overview;
extern const struct analysis_ops analysis_hygiene;
extern const struct analysis_ops analysis_focus;
extern const struct analysis_ops analysis_cpu_usage;
extern const struct analysis_ops analysis_io;
extern const struct analysis_ops analysis_memory_rss;
extern const struct analysis_ops analysis_hotspots;
extern const struct analysis_ops analysis_offcpu;
extern const struct analysis_ops analysis_syscalls;
extern const struct analysis_ops analysis_system;
extern const struct analysis_ops analysis_memory_heap;
extern const struct analysis_ops analysis_python_threads;
extern const struct analysis_ops analysis_phases;
extern const struct analysis_ops analysis_locks;
extern const struct analysis_ops analysis_asyncio;
extern const struct analysis_ops analysis_asyncio_pools;
extern const struct analysis_ops analysis_thread_pools;
extern const struct analysis_ops analysis_phase_bound;
extern const struct analysis_ops analysis_memory_held;
extern const struct analysis_ops analysis_coverage;
extern const struct analysis_ops analysis_gaps;
extern const struct analysis_ops analysis_gpu;
extern const struct analysis_ops analysis_gpu_findings;
extern const struct analysis_ops analysis_torch;
extern const struct analysis_ops analysis_components;
extern const struct analysis_ops analysis_functions;

const struct analysis_ops *const analysis_table[] = {
	&analysis_overview,
	&analysis_hygiene,
	&analysis_focus,
	&analysis_hotspots, /* before cpu_usage: the counters finding names the top hotspot */
	&analysis_cpu_usage,
	&analysis_io,
	&analysis_offcpu,
	&analysis_syscalls,
	&analysis_system,
	&analysis_memory_rss,
	&analysis_memory_heap, /* after memory_rss: it adds memory.heap */
	&analysis_memory_held,
	&analysis_python_threads,
	&analysis_phases,
	&analysis_locks,
	&analysis_asyncio, /* after phases: a long tail names its phase */
	&analysis_asyncio_pools, /* after asyncio: it adds to its report object */
	&analysis_thread_pools,
	&analysis_phase_bound, /* after phases: it reads their table in the model */
	&analysis_gpu,
	&analysis_gpu_findings,
	&analysis_torch,
	&analysis_components,
	&analysis_functions,
	&analysis_coverage,
	&analysis_gaps, /* last: it reads what the others found */
	NULL,
};

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
	for (size_t i = 0; analysis_table[i]; i++) {
		if (analysis_table[i]->run(&ctx))
			strbuf_addf(err, "%sanalysis %s could not read the recording",
				    err->len ? "; " : "", analysis_table[i]->name);
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
