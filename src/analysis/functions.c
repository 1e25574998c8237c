/* functions: the functions `--function` named, call by call (the fn_*
 * tables of the function and pyfunction probes). Report key `functions`:
 * one object per SPEC, in the order given, with its calls, the distribution
 * of their wall time (and CPU time where measured), its callers and, for a
 * Python function, its lines. A SPEC that matched nothing keeps its row with
 * status and note saying why. */
#include "analysis.h"
#include "../record/reader.h"
#include "../util/stats.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define FN_CALLERS_LISTED 10
#define FN_LINES_LISTED 40

static void set_opt_str(json_t *o, const char *key, const unsigned char *s)
{
	if (s)
		json_object_set_new(o, key,
				    report_string((const char *)s, strlen((const char *)s)));
}

/* The distribution of one column (wall_ns or cpu_ns) of a target's calls, in
 * seconds; NULL when no call has it. */
static json_t *distribution(sqlite3 *db, int64_t id, const char *column)
{
	struct strbuf sql = STRBUF_INIT;
	strbuf_addf(&sql, "SELECT %s FROM fn_calls WHERE target = ? AND %s IS NOT NULL ORDER BY %s",
		    column, column, column);
	sqlite3_stmt *q = recording_prepare(db, "fn_calls", sql.buf);
	strbuf_release(&sql);
	if (!q)
		return NULL;
	sqlite3_bind_int64(q, 1, id);
	double *v = NULL, total = 0;
	size_t n = 0, alloc = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 1024;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		v[n] = (double)sqlite3_column_int64(q, 0) / 1e9;
		total += v[n++];
	}
	sqlite3_finalize(q);
	json_t *d = NULL;
	if (n) {
		d = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "calls", (json_int_t)n,
			      "total_s", total, "mean_s", total / (double)n, "min_s", v[0], "p50_s",
			      stats_quantile(v, n, 0.50), "p95_s", stats_quantile(v, n, 0.95),
			      "p99_s", stats_quantile(v, n, 0.99), "max_s", v[n - 1]);
	}
	free(v);
	return d;
}

static json_t *callers(sqlite3 *db, int64_t id, int64_t timed)
{
	sqlite3_stmt *q = recording_prepare(
	    db, "fn_callers",
	    "SELECT k.function, k.file, k.line, COUNT(*), SUM(c.wall_ns) FROM fn_calls c"
	    " LEFT JOIN fn_callers k ON k.target = c.target AND k.id = c.caller"
	    " WHERE c.target = ? GROUP BY c.caller ORDER BY COUNT(*) DESC, k.function LIMIT ?");
	json_t *list = json_array();
	if (!q)
		return list;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int(q, 2, FN_CALLERS_LISTED);
	while (sqlite3_step(q) == SQLITE_ROW) {
		json_t *c = json_object();
		const unsigned char *fn = sqlite3_column_text(q, 0);
		set_opt_str(c, "function", fn ? fn : (const unsigned char *)"[unknown]");
		set_opt_str(c, "file", sqlite3_column_text(q, 1));
		if (sqlite3_column_type(q, 2) != SQLITE_NULL)
			json_object_set_new(c, "line", json_integer(sqlite3_column_int(q, 2)));
		int64_t calls = sqlite3_column_int64(q, 3);
		json_object_set_new(c, "calls", json_integer(calls));
		json_object_set_new(c, "pct",
				    json_real(timed ? 100.0 * (double)calls / (double)timed : 0));
		json_object_set_new(c, "wall_s",
				    json_real((double)sqlite3_column_int64(q, 4) / 1e9));
		json_array_append_new(list, c);
	}
	sqlite3_finalize(q);
	return list;
}

/* A Python function's lines, summed over its processes, slowest first. */
static json_t *lines(sqlite3 *db, int64_t id)
{
	sqlite3_stmt *q = recording_prepare(
	    db, "fn_lines",
	    "SELECT line, SUM(hits), SUM(wall_ns), MAX(text) FROM fn_lines WHERE target = ?"
	    " GROUP BY line ORDER BY SUM(wall_ns) DESC, line LIMIT ?");
	if (!q)
		return NULL;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int(q, 2, FN_LINES_LISTED);
	json_t *list = json_array();
	double total = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		json_t *l = json_pack("{s:i, s:I, s:f}", "line", sqlite3_column_int(q, 0), "hits",
				      (json_int_t)sqlite3_column_int64(q, 1), "wall_s",
				      (double)sqlite3_column_int64(q, 2) / 1e9);
		set_opt_str(l, "text", sqlite3_column_text(q, 3));
		total += (double)sqlite3_column_int64(q, 2) / 1e9;
		json_array_append_new(list, l);
	}
	sqlite3_finalize(q);
	size_t i;
	json_t *l;
	json_array_foreach(list, i, l)
	{
		double w = json_real_value(json_object_get(l, "wall_s"));
		json_object_set_new(l, "pct", json_real(total > 0 ? 100.0 * w / total : 0));
	}
	if (!json_array_size(list)) {
		json_decref(list);
		return NULL;
	}
	return list;
}

static void count_distinct(sqlite3 *db, int64_t id, json_t *f)
{
	sqlite3_stmt *q = recording_prepare(
	    db, "fn_calls",
	    "SELECT COUNT(DISTINCT pid), COUNT(DISTINCT tid) FROM fn_calls WHERE target = ?");
	if (!q)
		return;
	sqlite3_bind_int64(q, 1, id);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) > 0) {
		json_object_set_new(f, "processes", json_integer(sqlite3_column_int64(q, 0)));
		json_object_set_new(f, "threads", json_integer(sqlite3_column_int64(q, 1)));
	}
	sqlite3_finalize(q);
}

static json_t *target(sqlite3 *db, sqlite3_stmt *t, double wall_s)
{
	int64_t id = sqlite3_column_int64(t, 0);
	json_t *f = json_object();
	static const char *const text_keys[] = {"spec", "kind", "function", "file"};
	for (int k = 0; k < 4; k++)
		set_opt_str(f, text_keys[k], sqlite3_column_text(t, k + 1));
	if (sqlite3_column_type(t, 5) != SQLITE_NULL)
		json_object_set_new(f, "line", json_integer(sqlite3_column_int(t, 5)));
	set_opt_str(f, "status", sqlite3_column_text(t, 6));
	set_opt_str(f, "note", sqlite3_column_text(t, 7));
	int64_t timed = sqlite3_column_int64(t, 9);
	if (sqlite3_column_type(t, 8) != SQLITE_NULL)
		json_object_set_new(f, "calls", json_integer(sqlite3_column_int64(t, 8)));
	if (sqlite3_column_type(t, 9) != SQLITE_NULL)
		json_object_set_new(f, "calls_timed", json_integer(timed));
	if (sqlite3_column_type(t, 10) != SQLITE_NULL)
		json_object_set_new(f, "overhead_ns_per_call",
				    json_real(sqlite3_column_double(t, 10)));
	count_distinct(db, id, f);
	json_t *wall = distribution(db, id, "wall_ns");
	int64_t from_ns;
	if (!recording_meta_int(db, "slice_from_ns", &from_ns) && json_object_get(f, "calls")) {
		/* A slice: the run's count is not the window's; its timed calls are. */
		json_object_set_new(
		    f, "calls",
		    json_integer(
			wall ? (json_int_t)json_integer_value(json_object_get(wall, "calls")) : 0));
		json_object_del(f, "calls_timed");
	}
	if (wall) {
		double total = json_real_value(json_object_get(wall, "total_s"));
		if (wall_s > 0)
			json_object_set_new(f, "wall_share_pct", json_real(100.0 * total / wall_s));
		json_object_set_new(f, "wall", wall);
		json_object_set_new(f, "callers", callers(db, id, timed));
	}
	json_t *cpu = distribution(db, id, "cpu_ns");
	if (cpu)
		json_object_set_new(f, "cpu", cpu);
	json_t *ls = lines(db, id);
	if (ls)
		json_object_set_new(f, "lines", ls);
	return f;
}

/* 1 when list has an entry for spec. */
static int listed(json_t *list, const char *spec, size_t len)
{
	size_t i;
	json_t *f;
	json_array_foreach(list, i, f)
	{
		const char *s = json_string_value(json_object_get(f, "spec"));
		if (s && strlen(s) == len && !strncmp(s, spec, len))
			return 1;
	}
	return 0;
}

/* The SPECs given (meta functions: "kind<TAB>spec" lines) that no probe
 * wrote a row for: their probe did not run, and says why. */
static void unmeasured(sqlite3 *db, json_t *list)
{
	char *specs = recording_meta_text(db, "functions");
	for (char *l = specs, *nl; l && *l; l = nl ? nl + 1 : l + strlen(l)) {
		nl = strchr(l, '\n');
		char *tab = strchr(l, '\t');
		if (!tab || (nl && tab > nl))
			continue;
		const char *spec = tab + 1;
		size_t len = nl ? (size_t)(nl - spec) : strlen(spec);
		if (listed(list, spec, len))
			continue;
		int python = !strncmp(l, "python", 6);
		json_t *f = json_pack("{s:s%, s:s, s:s}", "spec", spec, len, "kind",
				      python ? "python" : "native", "status", "not_measured");
		sqlite3_stmt *q = recording_prepare(
		    db, "probes", "SELECT status, reason FROM probes WHERE name = ?");
		if (q) {
			sqlite3_bind_text(q, 1, python ? "pyfunction" : "function", -1,
					  SQLITE_STATIC);
			if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 1))
				json_object_set_new(
				    f, "note",
				    json_pack("s+++", "the ", python ? "pyfunction" : "function",
					      " probe did not run: ",
					      (const char *)sqlite3_column_text(q, 1)));
			sqlite3_finalize(q);
		}
		json_array_append_new(list, f);
	}
	free(specs);
}

static int functions_run(struct analysis_ctx *ctx)
{
	sqlite3_stmt *t = recording_prepare(ctx->db, "fn_targets",
					    "SELECT id, spec, kind, function, file, line, status,"
					    " note, calls, calls_timed, overhead_ns FROM fn_targets"
					    " ORDER BY id");
	double wall_s = report_wall_s(ctx->db);
	json_t *list = json_array();
	while (t && sqlite3_step(t) == SQLITE_ROW)
		json_array_append_new(list, target(ctx->db, t, wall_s));
	sqlite3_finalize(t);
	unmeasured(ctx->db, list);
	if (json_array_size(list))
		json_object_set_new(ctx->report, "functions", list);
	else
		json_decref(list); /* no --function in this run */
	return 0;
}

const struct analysis_ops analysis_functions = {.name = "functions", .run = functions_run};
