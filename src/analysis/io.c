/* io: what the target's processes read and wrote through system calls, from
 * /proc/PID/io and the kernel's exit records (procstats): the totals, the
 * processes that did the most, and the whole tree's throughput and calls
 * over the run (proctimeline). Report key `io`; no finding of its own: the
 * syscalls probe's and the phases' findings say where and why. */
#include "analysis.h"
#include "procstats.h"
#include "proctimeline.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <stdlib.h>

#define IO_PROCESSES_MAX 10
#define IO_TIMELINE_POINTS 120
#define IO_COUNTER_MAX (INT64_C(1) << 60) /* past it a reading is damaged */

static json_t *opt_int(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static int64_t io_bytes(const struct procstat *p)
{
	return sat_add_i64(p->rchar > 0 ? p->rchar : 0, p->wchar > 0 ? p->wchar : 0);
}

static int64_t io_calls(const struct procstat *p)
{
	return sat_add_i64(p->syscr > 0 ? p->syscr : 0, p->syscw > 0 ? p->syscw : 0);
}

static int by_bytes_desc(const void *a, const void *b)
{
	const struct procstat *const *x = a, *const *y = b;
	int64_t u = io_bytes(*x), v = io_bytes(*y);
	if (u != v)
		return u < v ? 1 : -1;
	return (*x)->pid < (*y)->pid ? -1 : (*x)->pid > (*y)->pid;
}

static json_t *process_json(const struct procstat *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "pid", json_integer(p->pid));
	json_object_set_new(o, "command", json_string(p->command));
	json_object_set_new(o, "read_bytes", opt_int(p->rchar));
	json_object_set_new(o, "write_bytes", opt_int(p->wchar));
	json_object_set_new(o, "read_calls", opt_int(p->syscr));
	json_object_set_new(o, "write_calls", opt_int(p->syscw));
	json_object_set_new(o, "storage_read_bytes", opt_int(p->read_bytes));
	json_object_set_new(o, "storage_write_bytes", opt_int(p->write_bytes));
	return o;
}

/* The processes that read or wrote anything, most bytes first (then by pid). */
static json_t *processes_json(const struct procstats *ps, size_t *with_io)
{
	const struct procstat **v = xcalloc(ps->n ? ps->n : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < ps->n; i++)
		if (io_bytes(&ps->v[i]) > 0 || io_calls(&ps->v[i]) > 0)
			v[n++] = &ps->v[i];
	qsort(v, n, sizeof(*v), by_bytes_desc);
	json_t *list = json_array();
	for (size_t i = 0; i < n && i < IO_PROCESSES_MAX; i++)
		json_array_append_new(list, process_json(v[i]));
	*with_io = n;
	free(v);
	return list;
}

struct io_series {
	struct proc_point *v;
	size_t n;
};

static double series_rate(const struct io_series *s, int64_t from_ns, int64_t to_ns)
{
	double moved = proc_timeline_at(s->v, s->n, to_ns) - proc_timeline_at(s->v, s->n, from_ns);
	return moved > 0 ? moved / ((double)(to_ns - from_ns) / 1e9) : 0;
}

/* The tree's read and write throughput and calls per second over the run,
 * at most IO_TIMELINE_POINTS equal stretches; the busiest one's in *peak. */
static json_t *timeline_json(sqlite3 *db, json_t **peak)
{
	struct io_series rd = {0}, wr = {0}, calls = {0};
	json_t *tl = json_array();
	*peak = NULL;
	rd.n = proc_timeline_load_own(db, "rchar", IO_COUNTER_MAX, &rd.v);
	wr.n = proc_timeline_load_own(db, "wchar", IO_COUNTER_MAX, &wr.v);
	calls.n = proc_timeline_load_own(db, "syscr + syscw", IO_COUNTER_MAX, &calls.v);
	if (rd.n < 2)
		goto out;
	int64_t t0 = rd.v[0].t_ns, t1 = rd.v[rd.n - 1].t_ns;
	if (t0 < 0 || t1 <= t0)
		goto out; /* a damaged recording's times */
	size_t points = rd.n - 1 < IO_TIMELINE_POINTS ? rd.n - 1 : IO_TIMELINE_POINTS;
	double best = 0;
	for (size_t i = 0; i < points; i++) {
		int64_t a = t0 + (int64_t)((double)(t1 - t0) * (double)i / (double)points);
		int64_t b = t0 + (int64_t)((double)(t1 - t0) * (double)(i + 1) / (double)points);
		if (b <= a)
			continue;
		double r = series_rate(&rd, a, b), w = series_rate(&wr, a, b);
		json_t *p = json_pack("{s:f, s:f, s:f}", "t_s", (double)b / 1e9, "read_mb_s",
				      r / 1e6, "write_mb_s", w / 1e6);
		if (calls.n >= 2)
			json_object_set_new(p, "calls_s", json_real(series_rate(&calls, a, b)));
		json_array_append_new(tl, p);
		if (r + w > best) {
			best = r + w;
			json_decref(*peak);
			*peak =
			    json_pack("{s:f, s:f, s:f, s:f}", "start_s", (double)a / 1e9, "end_s",
				      (double)b / 1e9, "read_mb_s", r / 1e6, "write_mb_s", w / 1e6);
		}
	}
out:
	free(rd.v);
	free(wr.v);
	free(calls.v);
	return tl;
}

static int io_run(struct analysis_ctx *ctx)
{
	const struct procstats *ps = ctx->procs;
	if (!ps)
		return 0;
	json_t *io = json_object();
	json_object_set_new(io, "read_bytes",
			    json_integer(procstats_sum(ps, PROCSTAT_FIELD(rchar))));
	json_object_set_new(io, "write_bytes",
			    json_integer(procstats_sum(ps, PROCSTAT_FIELD(wchar))));
	json_object_set_new(io, "read_calls", opt_int(procstats_sum(ps, PROCSTAT_FIELD(syscr))));
	json_object_set_new(io, "write_calls", opt_int(procstats_sum(ps, PROCSTAT_FIELD(syscw))));
	json_object_set_new(io, "storage_read_bytes",
			    opt_int(procstats_sum(ps, PROCSTAT_FIELD(read_bytes))));
	json_object_set_new(io, "storage_write_bytes",
			    opt_int(procstats_sum(ps, PROCSTAT_FIELD(write_bytes))));
	size_t with_io = 0;
	json_object_set_new(io, "processes", processes_json(ps, &with_io));
	json_object_set_new(io, "processes_with_io", json_integer((json_int_t)with_io));
	json_t *peak;
	json_object_set_new(io, "timeline", timeline_json(ctx->db, &peak));
	json_object_set_new(io, "busiest", peak ? peak : json_null());
	json_object_set_new(ctx->report, "io", io);
	return 0;
}

const struct analysis_ops analysis_io = {.name = "io", .run = io_run};
