/* analysis: pure functions from the recording to report sections and findings.
 *
 * Each analysis reads profile.db (never the live target), adds its sections to
 * the report object under the keys DESIGN.md and docs/report-format.md name,
 * and appends findings. A section it cannot fill goes, with a one-line reason,
 * into report["not_measured"][dimension]. A new analysis is a new file plus one
 * line ANALYSIS(name) in analysis_list.h. */
#ifndef SONDE_ANALYSIS_H
#define SONDE_ANALYSIS_H

#include "findings.h"

#include <jansson.h>
#include <sqlite3.h>

struct strbuf;
struct findings;
struct procstats;
struct program;

/* What the user asked of this report (sonde report's options). */
struct report_options {
	const char *phase_pattern; /* --phase: replaces the recording's; NULL: keep it */
};

struct analysis_ctx {
	sqlite3 *db;
	const struct report_options *opts; /* never NULL */
	json_t *report;		   /* owned by the caller */
	struct findings *findings; /* ranked after every analysis ran */
	/* Per-process figures (procstats.h), loaded once for every analysis;
	 * NULL when the recording's process tables cannot be read. */
	const struct procstats *procs;
	/* The program behind a wrapper the user launched (program.h); NULL when
	 * the launched process is the program. The wrapper's samples are out of
	 * every stack set already (record/stackread.h). */
	const struct program *program;
};

struct analysis_ops {
	const char *name;
	/* What of the report model it reads that other analyses make, and what
	 * it makes for others (NULL-terminated; NULL: none): top-level report
	 * keys ("phases"), or "findings:DIMENSION" for findings another reads
	 * (findings_has). It runs after every analysis that provides what it
	 * needs (analysis_order). */
	const char *const *needs, *const *provides;
	/* The ids of the findings it may add ("dimension.pattern", documented in
	 * docs/: NULL-terminated; NULL: none). report_build checks each finding
	 * an analysis adds against its list and findings_dimension_known(). */
	const char *const *findings;
	/* 0, or -1 when the recording is unusable for it (the others still run). */
	int (*run)(struct analysis_ctx *ctx);
};

extern const struct analysis_ops *const analysis_table[];
#define ANALYSES_MAX 64
/* Puts table's analyses (NULL-terminated) into out in run order; returns
 * their count, or -1 with one line in why (analyses that wait on each other). */
int analysis_order(const struct analysis_ops *const *table, const struct analysis_ops **out,
		   struct strbuf *why);

/* 0 when every finding of fs from index first has an id that a declares
 * and a dimension of the fixed set (findings_dimension_known); else -1 with
 * the first that has not in why. */
int analysis_findings_check(const struct analysis_ops *a, const struct findings *fs, size_t first,
			    struct strbuf *why);

/* Builds the whole report model from a recording: every analysis, then the
 * ranked findings. Returns a new JSON object (json_decref it) or NULL with a
 * message in err. */
json_t *report_build(sqlite3 *db, struct strbuf *err);
/* The same, with the user's options (NULL: none). */
json_t *report_build_with(sqlite3 *db, const struct report_options *opts, struct strbuf *err);

/* Helpers shared by analyses. */
void report_not_measured(json_t *report, const char *dimension, const char *reason);
/* A JSON string of outside text, made valid UTF-8 (invalid bytes become U+FFFD). */
json_t *report_string(const char *s, size_t n);
/* How a tool's command line names the target, appended to out: "-p PID" for
 * an attached process (it runs already), else "-- COMMAND". */
void report_target_args(sqlite3 *db, struct strbuf *out);
/* The name of the phase of report.phases (the narrowest) that was running
 * at t_s, appended to out; nothing when none or the report has no phases. */
void report_phase_at(json_t *report, double t_s, struct strbuf *out);
/* wall seconds of the run, or -1 when unknown. */
double report_wall_s(sqlite3 *db);
/* The time `samples` stack samples stand for: samples / the rate in meta
 * rate_key (CPU time, or a thread's wall time in --mode wall); without a rate
 * (rate_key NULL: the samples count an event) their share_pct of the wall
 * time. At most the wall time; -1 when the wall time is unknown. */
double report_sampled_s(sqlite3 *db, const char *rate_key, double samples, double share_pct);

#endif
