/* overview: the target, its processes, the probes that ran, the run's notes and
 * the instrumentation changelog. Produces no findings. */
#include "analysis.h"
#include "procstats.h"
#include "program.h"
#include "../record/process_key.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

static void set_opt_int(json_t *o, const char *key, int64_t v)
{
	json_object_set_new(o, key, v >= 0 ? json_integer((json_int_t)v) : json_null());
}

static void set_opt_s(json_t *o, const char *key, int64_t ns)
{
	json_object_set_new(o, key, ns >= 0 ? json_real((double)ns / 1e9) : json_null());
}

static int64_t proc_cpu_ns(const struct procstat *p)
{
	return (p->user_ns > 0 ? p->user_ns : 0) + (p->sys_ns > 0 ? p->sys_ns : 0);
}

static int by_cpu_desc(const void *a, const void *b)
{
	const struct procstat *x = *(const struct procstat *const *)a;
	const struct procstat *y = *(const struct procstat *const *)b;
	int64_t cx = proc_cpu_ns(x), cy = proc_cpu_ns(y);
	return cx != cy ? (cx < cy ? 1 : -1) : (x->pid > y->pid) - (x->pid < y->pid);
}

/* In the recording's order; the whole machine's (run -a) busiest first. */
static json_t *processes_json(const struct procstats *ps, int by_cpu)
{
	json_t *arr = json_array();
	const struct procstat **order = xcalloc(ps->n + 1, sizeof(*order));
	for (size_t i = 0; i < ps->n; i++)
		order[i] = &ps->v[i];
	if (by_cpu)
		qsort(order, ps->n, sizeof(*order), by_cpu_desc);
	for (size_t i = 0; i < ps->n; i++) {
		const struct procstat *p = order[i];
		json_t *o = json_object();
		json_object_set_new(o, "pid", json_integer(p->pid));
		if (process_key_use(p->pid)) { /* a key: the pid was used before */
			json_object_set_new(o, "os_pid", json_integer(process_key_pid(p->pid)));
			json_object_set_new(o, "pid_use", json_integer(process_key_use(p->pid) + 1));
		}
		json_object_set_new(o, "ppid", json_integer(p->ppid));
		json_object_set_new(o, "command", report_string(p->command, strlen(p->command)));
		json_object_set_new(o, "leader", json_boolean(p->is_leader));
		set_opt_s(o, "start_s", p->start_ns);
		set_opt_s(o, "end_s", p->end_ns);
		set_opt_int(o, "exit_code", p->exit_code);
		if (p->signal)
			json_object_set_new(o, "signal", json_integer(p->signal));
		set_opt_s(o, "user_s", p->user_ns);
		set_opt_s(o, "sys_s", p->sys_ns);
		set_opt_int(o, "peak_rss_bytes", p->peak_rss_bytes);
		set_opt_int(o, "threads_max", p->threads_max);
		set_opt_int(o, "voluntary_ctx_switches", p->vcsw);
		set_opt_int(o, "involuntary_ctx_switches", p->ivcsw);
		set_opt_int(o, "minor_faults", p->minflt);
		set_opt_int(o, "major_faults", p->majflt);
		set_opt_int(o, "read_bytes", p->rchar);
		set_opt_int(o, "write_bytes", p->wchar);
		set_opt_int(o, "storage_read_bytes", p->read_bytes);
		set_opt_int(o, "storage_write_bytes", p->write_bytes);
		json_array_append_new(arr, o);
	}
	free(order);
	return arr;
}

static json_t *rows_json(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	json_t *arr = json_array();
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return arr;
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *o = json_object();
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			const char *name = sqlite3_column_name(st, i);
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_INTEGER:
				json_object_set_new(o, name, json_integer(sqlite3_column_int64(st, i)));
				break;
			case SQLITE_FLOAT:
				json_object_set_new(o, name, json_real(sqlite3_column_double(st, i)));
				break;
			case SQLITE_NULL:
				json_object_set_new(o, name, json_null());
				break;
			default:
				json_object_set_new(o, name,
						    report_string((const char *)sqlite3_column_text(st, i),
								  (size_t)sqlite3_column_bytes(st, i)));
			}
		}
		json_array_append_new(arr, o);
	}
	sqlite3_finalize(st);
	return arr;
}

static json_t *target_json(sqlite3 *db, const struct procstats *ps)
{
	json_t *t = json_object();
	const struct procstat *leader = procstats_leader(ps);
	int64_t v;
	json_object_set_new(t, "command", leader ? report_string(leader->command, strlen(leader->command)) : json_null());
	json_t *pids = json_array();
	for (size_t i = 0; i < ps->n; i++)
		json_array_append_new(pids, json_integer(ps->v[i].pid));
	json_object_set_new(t, "pids", pids);
	json_object_set_new(t, "exit_code",
			    recording_meta_int(db, "exit_code", &v) ? json_null() : json_integer(v));
	if (leader && leader->signal)
		json_object_set_new(t, "killed_by_signal", json_integer(leader->signal));
	double wall_s = report_wall_s(db);
	json_object_set_new(t, "wall_s", wall_s >= 0 ? json_real(wall_s) : json_null());
	if (!recording_meta_int(db, "whole_machine", &v) && v)
		json_object_set_new(t, "whole_machine", json_true());
	if (!recording_meta_int(db, "attached", &v) && v) {
		json_object_set_new(t, "attached", json_true());
		json_object_set_new(t, "target_exited",
				    json_boolean(!recording_meta_int(db, "target_exited", &v) && v));
	}
	static const char *flags[] = { "interrupted", "stopped_by_duration", "escalated" };
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		json_object_set_new(t, flags[i],
				    json_boolean(!recording_meta_int(db, flags[i], &v) && v));
	if (recording_meta_int(db, "wall_ns", &v))
		json_object_set_new(t, "complete", json_false()); /* sonde stopped early */
	json_t *out = json_object();
	static const char *const output_keys[][2] = {
		{ "output_lines", "lines" },	       { "output_lines_truncated", "lines_truncated" },
		{ "output_bytes", "bytes" },	       { "output_binary_bytes", "binary_bytes" },
		{ "output_lines_dropped", "lines_dropped" }, { "output_cap_bytes", "cap_bytes" },
	};
	for (size_t i = 0; i < sizeof(output_keys) / sizeof(output_keys[0]); i++)
		if (!recording_meta_int(db, output_keys[i][0], &v))
			json_object_set_new(out, output_keys[i][1], json_integer(v));
	if (!recording_meta_int(db, "output_capped", &v))
		json_object_set_new(out, "capped", json_boolean(v));
	json_object_set_new(t, "output", out);
	json_t *daemon = rows_json(db, "SELECT t_ns * 1e-9 AS t_s, text FROM notes"
				       " WHERE kind = 'daemonised'");
	if (json_array_size(daemon))
		json_object_set_new(t, "daemonised", daemon);
	else
		json_decref(daemon);
	return t;
}

/* The run's identity: where, when and as what it ran (keys absent when the
 * recording does not have them: an older sonde, or no launcher). */
static json_t *run_json(sqlite3 *db)
{
	json_t *run = json_object();
	static const char *const texts[] = { "host", "boot_id", "started_at", "sonde_version",
					     "kernel", "machine", "rank", "local_rank",
					     "world_size", "job_id" };
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *v = recording_meta_text(db, texts[i]);
		if (v)
			json_object_set_new(run, texts[i], report_string(v, strlen(v)));
		free(v);
	}
	int64_t v;
	if (!recording_meta_int(db, "start_unix_ns", &v))
		json_object_set_new(run, "start_unix_ns", json_integer(v));
	if (!recording_meta_int(db, "start_mono_ns", &v))
		json_object_set_new(run, "start_mono_ns", json_integer(v));
	return run;
}

/* Which slice of the run this report is of (record/slice.h); NULL for a whole run. */
static json_t *slice_json(sqlite3 *db)
{
	int64_t v;
	json_t *slice = json_object();
	if (!recording_meta_int(db, "slice_from_ns", &v))
		json_object_set_new(slice, "from_s", json_real((double)v / 1e9));
	if (!recording_meta_int(db, "slice_to_ns", &v))
		json_object_set_new(slice, "to_s", json_real((double)v / 1e9));
	if (!recording_meta_int(db, "slice_pid", &v))
		json_object_set_new(slice, "pid", json_integer(v));
	if (!recording_meta_int(db, "slice_tid", &v))
		json_object_set_new(slice, "tid", json_integer(v));
	char *phase = recording_meta_text(db, "slice_phase");
	if (phase)
		json_object_set_new(slice, "phase", report_string(phase, strlen(phase)));
	free(phase);
	if (!json_object_size(slice)) {
		json_decref(slice);
		return NULL;
	}
	/* Tables a slice cannot cut (whole-run totals), "a, b" in meta. */
	char *left = recording_meta_text(db, "slice_left_out");
	json_t *names = json_array();
	for (const char *p = left; p && *p;) {
		size_t n = strcspn(p, ",");
		json_array_append_new(names, report_string(p, n));
		p += n;
		p += strspn(p, ", ");
	}
	json_object_set_new(slice, "left_out", names);
	free(left);
	return slice;
}

/* target.program: the process that did the work behind the launched wrapper. */
static json_t *program_json(const struct program *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "pid", json_integer(p->pid));
	json_object_set_new(o, "command", report_string(p->command, strlen(p->command)));
	json_object_set_new(o, "started_through", report_string(p->launcher, strlen(p->launcher)));
	json_object_set_new(o, "from_s", json_real((double)p->from_ns / 1e9));
	json_object_set_new(o, "wrapper_processes", json_integer((json_int_t)p->wrapper_processes));
	set_opt_s(o, "wrapper_cpu_s", p->wrapper_cpu_ns);
	return o;
}

static int overview_run(struct analysis_ctx *ctx)
{
	json_t *slice = slice_json(ctx->db);
	if (slice)
		json_object_set_new(ctx->report, "slice", slice);
	if (!ctx->procs)
		return -1;
	json_object_set_new(ctx->report, "run", run_json(ctx->db));
	json_t *target = target_json(ctx->db, ctx->procs);
	if (ctx->program)
		json_object_set_new(target, "program", program_json(ctx->program));
	json_object_set_new(ctx->report, "target", target);
	int64_t whole = 0;
	recording_meta_int(ctx->db, "whole_machine", &whole);
	json_object_set_new(ctx->report, "processes", processes_json(ctx->procs, whole != 0));
	json_object_set_new(ctx->report, "probes",
			    rows_json(ctx->db, "SELECT name, status, reason FROM probes"));
	json_object_set_new(ctx->report, "notes",
			    rows_json(ctx->db, "SELECT t_ns * 1e-9 AS t_s, probe, kind, text"
					       " FROM notes ORDER BY t_ns"));
	json_object_set_new(ctx->report, "changelog",
			    rows_json(ctx->db, "SELECT file, change, what, lines FROM changelog"));
	return 0;
}

const struct analysis_ops analysis_overview = { .name = "overview", .run = overview_run };
