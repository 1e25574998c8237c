/* gaps: what made this run hard to attribute, and the one change to the
 * program or machine that would fix each: no phase markers, markers without
 * timestamps, threads with default names, samples in code without symbols.
 * Report key `observability_gaps`: at most GAPS_MAX one-line suggestions,
 * each with a stable id. Runs after phases and hotspots (it reads their
 * report keys). */
#include "analysis.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <string.h>

#define GAPS_MAX 4
#define GAP_MIN_WALL_S 3.0	/* shorter runs have no phases worth naming */
#define GAP_THREADS_MIN 3	/* threads besides the main one */
#define GAP_UNSYMBOLIZED_PCT 5.0 /* of the on-CPU samples */

static void gap_add(json_t *gaps, const char *id, const char *text)
{
	if (json_array_size(gaps) >= GAPS_MAX)
		return;
	json_t *g = json_object();
	json_object_set_new(g, "id", json_string(id));
	json_object_set_new(g, "text", json_string(text));
	json_array_append_new(gaps, g);
}

static int python_target(json_t *report)
{
	return json_object_get(report, "python") != NULL;
}

static void gap_phases(json_t *report, double wall_s, json_t *gaps)
{
	json_t *mk = json_object_get(report, "phase_markers");
	if (!mk || wall_s < GAP_MIN_WALL_S)
		return;
	int python = python_target(report);
	if (!json_array_size(json_object_get(report, "phases"))) {
		if (json_is_string(json_object_get(mk, "pattern"))) {
			gap_add(gaps, "gap.no_phases",
				"The --phase pattern matched none of the lines the target wrote: "
				"check it against output.log (sonde report DIR --phase REGEX tries "
				"another without a new run)");
			return;
		}
		gap_add(gaps, "gap.no_phases",
			python ? "No phase markers: log the start and end of each stage "
				 "(log.info(\"phase=%s start\", name) / log.info(\"phase=%s done in "
				 "%.2fs\", name, elapsed)), or pass --phase REGEX, to get CPU, memory "
				 "and hotspots per phase"
			       : "No phase markers: print the start and end of each stage "
				 "(\"phase=NAME start\" / \"phase=NAME done in 1.2s\"), or pass "
				 "--phase REGEX, to get CPU, memory and hotspots per phase");
		return;
	}
	const char *clock = json_string_value(json_object_get(mk, "clock"));
	if (clock && !strcmp(clock, "arrival"))
		gap_add(gaps, "gap.marker_times",
			python ? "Phase markers carry no timestamps, so their times are when sonde "
				 "read them (print() to a pipe is buffered): log with logging and "
				 "%(asctime)s in the format, or run python -u"
			       : "Phase markers carry no timestamps, so their times are when sonde "
				 "read them (stdout to a pipe is buffered): stamp each line, or "
				 "flush after it");
}

/* Python's and the OS's default names: "Thread-3", "Thread-3 (worker)",
 * "Dummy-1", or the process's own name for a native thread. */
static int default_name(const char *name, const char *main_name)
{
	if (!name || !*name)
		return 1;
	if (main_name && !strcmp(name, main_name))
		return 1;
	const char *digits = !strncmp(name, "Thread-", 7)  ? name + 7
			     : !strncmp(name, "Dummy-", 6) ? name + 6
							    : NULL;
	if (!digits || !isdigit((unsigned char)*digits))
		return 0;
	while (isdigit((unsigned char)*digits))
		digits++;
	return !*digits || !strncmp(digits, " (", 2);
}

static void gap_threads(sqlite3 *db, json_t *report, json_t *gaps)
{
	sqlite3_stmt *st;
	if (!(st = recording_prepare(
		  db, "threads",
		  "SELECT t.pid, t.name, (SELECT m.name FROM threads m WHERE m.pid ="
		  " t.pid AND m.tid = t.pid) FROM threads t WHERE t.tid != t.pid"
		  " ORDER BY t.pid")))
		return;
	int64_t pid = -1, n = 0, unnamed = 0, worst_n = 0, worst_unnamed = 0;
	for (int rc = sqlite3_step(st);; rc = sqlite3_step(st)) {
		int row = rc == SQLITE_ROW;
		if (!row || sqlite3_column_int64(st, 0) != pid) {
			if (n >= GAP_THREADS_MIN && 2 * unnamed >= n && unnamed > worst_unnamed) {
				worst_n = n;
				worst_unnamed = unnamed;
			}
			if (!row)
				break;
			pid = sqlite3_column_int64(st, 0);
			n = unnamed = 0;
		}
		n++;
		const char *main_name = (const char *)sqlite3_column_text(st, 2);
		if (main_name && !strcmp(main_name, "MainThread"))
			main_name = NULL; /* Python's main thread: its own default */
		unnamed += default_name((const char *)sqlite3_column_text(st, 1), main_name);
	}
	sqlite3_finalize(st);
	if (!worst_unnamed)
		return;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%lld of %lld threads have default names, so per-thread figures cannot "
			 "say what each does: name them (%s)",
		    (long long)worst_unnamed, (long long)worst_n,
		    python_target(report) ? "threading.Thread(name=...), or thread_name_prefix= for "
					    "a ThreadPoolExecutor"
					  : "pthread_setname_np(), or prctl(PR_SET_NAME)");
	gap_add(gaps, "gap.thread_names", sb.buf);
	strbuf_release(&sb);
}

/* Native frames sonde could not name read "module+0x1234". */
static void gap_symbols(sqlite3 *db, json_t *gaps)
{
	struct stack_set ss = STACK_SET_INIT;
	struct strbuf err = STRBUF_INIT, sb = STRBUF_INIT;
	if (stack_set_load_on_cpu(db, &ss, NULL, &err) || !ss.total_samples)
		goto out;
	int64_t bare = 0;
	const char *module = NULL;
	int64_t module_samples = 0;
	for (size_t i = 0; i < ss.nleaves; i++) {
		const struct stack_frame_rec *fr = &ss.frames[ss.nodes[ss.leaves[i].node].frame];
		if (!strstr(fr->function, "+0x") || !fr->module || fr->module[0] == '[')
			continue;
		bare += ss.leaves[i].samples;
		if (ss.leaves[i].samples > module_samples) {
			module_samples = ss.leaves[i].samples;
			module = fr->module;
		}
	}
	double pct = 100.0 * (double)bare / (double)ss.total_samples;
	if (pct < GAP_UNSYMBOLIZED_PCT || !module)
		goto out;
	const char *base = strrchr(module, '/');
	strbuf_addf(&sb, "%.0f%% of the CPU samples are in code without symbols (most in %s): "
			 "install its debug symbols (the -dbgsym package, or debuginfod) or build "
			 "it with -g, so they name functions",
		    pct, base ? base + 1 : module);
	gap_add(gaps, "gap.symbols", sb.buf);
out:
	stack_set_release(&ss);
	strbuf_release(&err);
	strbuf_release(&sb);
}

static int gaps_run(struct analysis_ctx *ctx)
{
	json_t *gaps = json_array();
	int64_t whole = 0;
	/* The whole machine (run -a) is many programs, mostly not the user's:
	 * stages and thread names are advice for one program. */
	if (recording_meta_int(ctx->db, "whole_machine", &whole) || !whole) {
		gap_phases(ctx->report, report_wall_s(ctx->db), gaps);
		gap_threads(ctx->db, ctx->report, gaps);
	}
	gap_symbols(ctx->db, gaps);
	if (json_array_size(gaps))
		json_object_set_new(ctx->report, "observability_gaps", gaps);
	else
		json_decref(gaps);
	return 0;
}

static const char *const gaps_needs[] = { "phases", "phase_markers", "python", "hotspots", NULL };

const struct analysis_ops analysis_gaps = {
	.name = "gaps",
	.needs = gaps_needs,
	.run = gaps_run,
};
