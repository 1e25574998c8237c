/* trace_events: the run's timeline events from the recording (the
 * contract is in trace_events.h). */
#include "trace_events.h"
#include "render.h"
#include "../analysis/analysis.h"
#include "../analysis/proctimeline.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/demangle.h"
#include "../util/hashmap.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_GAP_NS 50000000LL	 /* 50 ms without a sample: the thread was not seen */
#define TRACE_TAIL_NS 10000000LL /* a thread's last slices last this long past its sample */
#define SECTOR_BYTES 512

struct trace {
	const struct trace_sink *sink;
	struct trace_counts n;
	struct strbuf text; /* a name made valid UTF-8 */
};

/* Starts an event: 1 when it may be handed on, 0 when the cap is reached. */
static int ev_open(struct trace *t)
{
	if (t->n.events >= TRACE_EVENTS_MAX) {
		t->n.dropped++;
		return 0;
	}
	t->n.events++;
	return 1;
}

/* s as valid UTF-8 ("?" for NULL), valid until the next call. */
static const char *ev_text(struct trace *t, const char *s)
{
	if (!s)
		return "?";
	size_t n = strlen(s);
	if (utf8_valid(s, n))
		return s;
	strbuf_reset(&t->text);
	utf8_sanitize(s, n, &t->text);
	return strbuf_str(&t->text);
}

static void ev_name_meta(struct trace *t, int thread, int64_t pid, int64_t tid, const char *name)
{
	if (ev_open(t))
		t->sink->name(t->sink->arg, thread, pid, tid, ev_text(t, name));
}

/* A slice; args_json (may be NULL) is an object's members. */
static void ev_slice(struct trace *t, const char *cat, const char *name, int64_t pid, int64_t tid,
		     int64_t start_ns, int64_t end_ns, const char *args_json)
{
	if (ev_open(t))
		t->sink->slice(t->sink->arg, cat, ev_text(t, name), pid, tid, start_ns,
			       end_ns > start_ns ? end_ns : start_ns, args_json);
}

/* Counter name of process pid at ts_ns, its finite values rounded as
 * printed (none finite: no event). */
static void ev_counter(struct trace *t, const char *name, int64_t pid, int64_t ts_ns,
		       struct trace_arg *args, size_t nargs)
{
	size_t kept = 0;
	for (size_t i = 0; i < nargs; i++) {
		double scale = pow(10.0, args[i].decimals);
		if (!isfinite(args[i].value))
			continue;
		args[kept] = args[i];
		if (fabs(args[kept].value) < 1e15)
			args[kept].value = round(args[kept].value * scale) / scale;
		kept++;
	}
	if (kept && ev_open(t))
		t->sink->counter(t->sink->arg, ev_text(t, name), pid, ts_ns, args, kept);
}

static void ev_flow(struct trace *t, uint64_t id, int end, int64_t pid, int64_t tid, int64_t ts_ns)
{
	if (ev_open(t))
		t->sink->flow(t->sink->arg, id, end, pid, tid, ts_ns);
}

static const char *col_text(sqlite3_stmt *st, int col)
{
	return (const char *)sqlite3_column_text(st, col);
}

static void names_write(struct trace *t, sqlite3 *db)
{
	sqlite3_stmt *st;
	if ((st = recording_prepare(db, "processes", "SELECT pid, command FROM processes"))) {
		while (sqlite3_step(st) == SQLITE_ROW)
			ev_name_meta(t, 0, sqlite3_column_int64(st, 0), 0, col_text(st, 1));
		sqlite3_finalize(st);
	}
	if ((st = recording_prepare(db, "threads", "SELECT pid, tid, name FROM threads"))) {
		while (sqlite3_step(st) == SQLITE_ROW)
			ev_name_meta(t, 1, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
				     col_text(st, 2));
		sqlite3_finalize(st);
	}
}

static void phases_write(struct trace *t, sqlite3 *db, json_t *report)
{
	json_t *phases = json_object_get(report, "phases"), *p;
	size_t i;
	if (!json_array_size(phases))
		return;
	int64_t leader = 0;
	json_t *pids = json_object_get(json_object_get(report, "target"), "pids");
	if (json_is_integer(json_array_get(pids, 0)))
		leader = json_integer_value(json_array_get(pids, 0));
	ev_name_meta(t, 1, leader, 0, "phases");
	json_array_foreach(phases, i, p)
	{
		json_t *s = json_object_get(p, "start_s"), *e = json_object_get(p, "end_s");
		const char *name = json_string_value(json_object_get(p, "name"));
		if (json_is_number(s) && json_is_number(e))
			ev_slice(t, "phase", name, leader, 0, (int64_t)(json_number_value(s) * 1e9),
				 (int64_t)(json_number_value(e) * 1e9), NULL);
	}
	(void)db;
}

/* The program's NVTX ranges and marks on the track of the thread that
 * opened them. */
static void nvtx_write(struct trace *t, sqlite3 *db)
{
	sqlite3_stmt *st;
	if (!(st = recording_prepare(
		  db, "nvtx_ranges",
		  "SELECT pid, tid, start_ns, end_ns, name, domain, type, closed FROM"
		  " nvtx_ranges ORDER BY start_ns, depth")))
		return;
	struct strbuf args = STRBUF_INIT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *domain = col_text(st, 5), *type = col_text(st, 6);
		if (!type || (strcmp(type, "mark") && strcmp(type, "range")))
			type = "push";
		strbuf_reset(&args);
		strbuf_addf(&args, "\"type\":\"%s\",\"closed\":%d", type,
			    sqlite3_column_int(st, 7) ? 1 : 0);
		if (domain && *domain) {
			json_t *j = report_string(domain, strlen(domain));
			char *enc = json_dumps(j, JSON_ENCODE_ANY);
			strbuf_addf(&args, ",\"domain\":%s", enc ? enc : "\"?\"");
			free(enc);
			json_decref(j);
		}
		ev_slice(t, "nvtx", col_text(st, 4), sqlite3_column_int64(st, 0),
			 sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
			 sqlite3_column_int64(st, 3), args.buf);
	}
	strbuf_release(&args);
	sqlite3_finalize(st);
}

/* The GPU's work, per device and stream. */
static void gpu_write(struct trace *t, sqlite3 *db)
{
	sqlite3_stmt *st;
	struct strbuf name = STRBUF_INIT, args = STRBUF_INIT;
	if ((st = recording_prepare(
		 db, "gpu_kernels",
		 "SELECT DISTINCT device, stream FROM gpu_kernels UNION SELECT device,"
		 " stream FROM gpu_copies"))) {
		int64_t last = -1;
		while (sqlite3_step(st) == SQLITE_ROW) {
			int64_t dev = sqlite3_column_int64(st, 0),
				stream = sqlite3_column_int64(st, 1);
			strbuf_reset(&name);
			if (dev != last) {
				strbuf_addf(&name, "GPU %" PRId64, dev);
				ev_name_meta(t, 0, TRACE_GPU_PID + dev, 0, name.buf);
				last = dev;
			}
			strbuf_reset(&name);
			strbuf_addf(&name, "stream %" PRId64, stream);
			ev_name_meta(t, 1, TRACE_GPU_PID + dev, stream, name.buf);
		}
		sqlite3_finalize(st);
	}
	if ((st = recording_prepare(
		 db, "gpu_kernels",
		 "SELECT device, stream, start_ns, end_ns, name, grid_x, grid_y, grid_z,"
		 " block_x, block_y, block_z, corr FROM gpu_kernels"))) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *raw = col_text(st, 4);
			strbuf_reset(&name);
			if (!raw || demangle_name(raw, &name))
				strbuf_addstr(&name, raw ? raw : "?");
			strbuf_reset(&args);
			strbuf_addf(
			    &args,
			    "\"grid\":[%lld,%lld,%lld],\"block\":[%lld,%lld,%lld],\"corr\":%lld",
			    (long long)sqlite3_column_int64(st, 5),
			    (long long)sqlite3_column_int64(st, 6),
			    (long long)sqlite3_column_int64(st, 7),
			    (long long)sqlite3_column_int64(st, 8),
			    (long long)sqlite3_column_int64(st, 9),
			    (long long)sqlite3_column_int64(st, 10),
			    (long long)sqlite3_column_int64(st, 11));
			ev_slice(t, "kernel", name.buf, TRACE_GPU_PID + sqlite3_column_int64(st, 0),
				 sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
				 sqlite3_column_int64(st, 3), args.buf);
		}
		sqlite3_finalize(st);
	}
	if ((st =
		 recording_prepare(db, "gpu_copies",
				   "SELECT device, stream, start_ns, end_ns, kind, bytes, src_kind,"
				   " dst_kind FROM gpu_copies"))) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			char size[32];
			fmt_bytes(size, sizeof(size), (double)sqlite3_column_int64(st, 5));
			strbuf_reset(&name);
			strbuf_addf(&name, "%s %s (%s to %s)",
				    col_text(st, 4) ? col_text(st, 4) : "?", size,
				    col_text(st, 6) ? col_text(st, 6) : "?",
				    col_text(st, 7) ? col_text(st, 7) : "?");
			ev_slice(t, "copy", name.buf, TRACE_GPU_PID + sqlite3_column_int64(st, 0),
				 sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
				 sqlite3_column_int64(st, 3), NULL);
		}
		sqlite3_finalize(st);
	}
	strbuf_release(&name);
	strbuf_release(&args);
}

/* The host's CUDA calls, and an arrow from each to the GPU work it
 * started. */
static void gpu_calls_write(struct trace *t, sqlite3 *db)
{
	sqlite3_stmt *st;
	if (!recording_has_table(db, "gpu_api") || !recording_has_table(db, "gpu_kernels"))
		return;
	if (sqlite3_prepare_v2(db, "SELECT pid, tid, start_ns, end_ns, name FROM gpu_api", -1, &st,
			       NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW)
			ev_slice(t, "cuda", col_text(st, 4), sqlite3_column_int64(st, 0),
				 sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
				 sqlite3_column_int64(st, 3), NULL);
		sqlite3_finalize(st);
	}
	if (sqlite3_prepare_v2(
		db,
		"SELECT a.pid, a.tid, a.start_ns, w.device, w.stream, w.start_ns, a.corr"
		" FROM gpu_api a JOIN (SELECT pid, corr, device, stream, start_ns FROM"
		" gpu_kernels UNION ALL SELECT pid, corr, device, stream, start_ns FROM"
		" gpu_copies) w ON w.pid = a.pid AND w.corr = a.corr",
		-1, &st, NULL) != SQLITE_OK)
		return;
	uint64_t id = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		id++;
		ev_flow(t, id, 0, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			sqlite3_column_int64(st, 2));
		ev_flow(t, id, 1, TRACE_GPU_PID + sqlite3_column_int64(st, 3),
			sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5));
	}
	sqlite3_finalize(st);
}

/* Each process's CPU use and I/O rates between its consecutive readings,
 * and from its last reading to its end (its threads' exit records, summed,
 * as what it did after the last reading would show nowhere else); no I/O
 * point for a stretch in which it reaped a child (the child's bytes are the
 * child's). */
static void process_rates_write(struct trace *t, sqlite3 *db)
{
	struct proc_reaps reaps;
	struct strbuf sql = STRBUF_INIT;
	proc_reaps_load(db, &reaps);
	strbuf_addf(
	    &sql,
	    "SELECT pid, t_ns, coalesce(user_ns,0) + coalesce(sys_ns,0), rchar, wchar, %s, 0"
	    " FROM proc_samples",
	    recording_has_column(db, "proc_samples", "syscr")
		? "coalesce(syscr,0) + coalesce(syscw,0)"
		: "NULL");
	if (recording_has_table(db, "task_exits"))
		strbuf_addf(&sql,
			    " UNION ALL SELECT pid, max(t_ns), sum(coalesce(user_ns,0) +"
			    " coalesce(sys_ns,0)), sum(rchar), sum(wchar), %s, 1 FROM task_exits"
			    " GROUP BY pid HAVING max(tid = pid) = 1",
			    recording_has_column(db, "task_exits", "syscr")
				? "sum(coalesce(syscr,0) + coalesce(syscw,0))"
				: "NULL");
	strbuf_addstr(&sql, " ORDER BY 1, 2, 7");
	sqlite3_stmt *st = recording_prepare(db, "proc_samples", sql.buf);
	strbuf_release(&sql);
	int64_t pid = -1, t0 = 0, v0[4] = {0};
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		int64_t p = sqlite3_column_int64(st, 0), t1 = sqlite3_column_int64(st, 1), v1[4];
		for (int i = 0; i < 4; i++)
			v1[i] = sqlite3_column_type(st, 2 + i) == SQLITE_NULL
				    ? -1
				    : sqlite3_column_int64(st, 2 + i);
		if (p == pid && t1 > t0) {
			double s = ((double)t1 - (double)t0) / 1e9;
			if (v1[0] >= v0[0] && v0[0] >= 0) {
				struct trace_arg a[] = {
				    {"cores", ((double)v1[0] - (double)v0[0]) / 1e9 / s, 3}};
				ev_counter(t, "CPU", p, t1, a, 1);
			}
			if (v1[1] >= v0[1] && v0[1] >= 0 && v1[2] >= v0[2] && v0[2] >= 0 &&
			    !proc_reaps_in(&reaps, p, t0, sat_add_i64(t1, reaps.slack_ns))) {
				struct trace_arg a[] = {
				    {"read_MB_s", ((double)v1[1] - (double)v0[1]) / 1e6 / s, 3},
				    {"write_MB_s", ((double)v1[2] - (double)v0[2]) / 1e6 / s, 3},
				    {"calls_s", ((double)v1[3] - (double)v0[3]) / s, 1}};
				ev_counter(t, "I/O", p, t1, a,
					   v1[3] >= v0[3] && v0[3] >= 0 ? 3 : 2);
			}
		}
		pid = p;
		t0 = t1;
		memcpy(v0, v1, sizeof(v0));
	}
	sqlite3_finalize(st);
	proc_reaps_release(&reaps);
}

/* b - a as a share (percent) of whole, or -1 when a reading is missing. */
static double share_pct(int64_t a, int64_t b, double whole)
{
	return a >= 0 && b >= a && whole > 0 ? 100.0 * (double)(b - a) / whole : -1;
}

/* The system probe's readings: a "machine" process with its counters. */
static void machine_write(struct trace *t, sqlite3 *db)
{
	sqlite3_stmt *st = recording_prepare(
	    db, "machine_samples",
	    "SELECT t_ns, running, blocked, busy_ticks, iowait_ticks, steal_ticks, total_ticks,"
	    " psi_cpu_us, psi_memory_us, psi_io_us FROM machine_samples ORDER BY t_ns");
	int64_t p[10] = {0}, have = 0;
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		int64_t v[10];
		for (int i = 0; i < 10; i++)
			v[i] = sqlite3_column_type(st, i) == SQLITE_NULL
				   ? -1
				   : sqlite3_column_int64(st, i);
		if (!have++)
			ev_name_meta(t, 0, TRACE_MACHINE_PID, 0, "machine");
		if (v[1] >= 0) {
			struct trace_arg a[] = {{"runnable", (double)v[1], 0},
						{"blocked", v[2] > 0 ? (double)v[2] : 0, 0}};
			ev_counter(t, "tasks", TRACE_MACHINE_PID, v[0], a, 2);
		}
		double ticks = v[6] >= 0 && p[6] >= 0 ? ((double)v[6] - (double)p[6]) : 0;
		double busy = share_pct(p[3], v[3], ticks), wait = share_pct(p[4], v[4], ticks);
		double steal = share_pct(p[5], v[5], ticks);
		if (have > 1 && busy >= 0) {
			struct trace_arg a[] = {{"busy_pct", busy, 1},
						{"iowait_pct", wait > 0 ? wait : 0, 1},
						{"steal_pct", steal > 0 ? steal : 0, 1}};
			ev_counter(t, "CPUs", TRACE_MACHINE_PID, v[0], a, 3);
		}
		double us = ((double)v[0] - (double)p[0]) / 1e3, cpu = share_pct(p[7], v[7], us);
		if (have > 1 && cpu >= 0) {
			struct trace_arg a[] = {{"cpu_pct", cpu, 1},
						{"memory_pct", share_pct(p[8], v[8], us), 1},
						{"io_pct", share_pct(p[9], v[9], us), 1}};
			ev_counter(t, "pressure", TRACE_MACHINE_PID, v[0], a, 3);
		}
		memcpy(p, v, sizeof(p));
	}
	sqlite3_finalize(st);
	st = recording_prepare(db, "disk_samples",
			       "SELECT device, t_ns, read_sectors, write_sectors, io_ms FROM"
			       " disk_samples ORDER BY device, t_ns");
	struct strbuf dev = STRBUF_INIT, name = STRBUF_INIT;
	int64_t t0 = 0, rd0 = 0, wr0 = 0, io0 = 0;
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		const char *d = col_text(st, 0);
		int64_t t1 = sqlite3_column_int64(st, 1), rd = sqlite3_column_int64(st, 2);
		int64_t wr = sqlite3_column_int64(st, 3), io = sqlite3_column_int64(st, 4);
		if (d && dev.len && !strcmp(d, dev.buf) && t1 > t0 && rd >= rd0 && wr >= wr0 &&
		    io >= io0) {
			double s = ((double)t1 - (double)t0) / 1e9;
			strbuf_reset(&name);
			strbuf_addf(&name, "disk %s", d);
			struct trace_arg a[] = {
			    {"busy_pct", ((double)io - (double)io0) / 10.0 / s, 1},
			    {"read_MB_s", ((double)rd - (double)rd0) * SECTOR_BYTES / 1e6 / s, 3},
			    {"write_MB_s", ((double)wr - (double)wr0) * SECTOR_BYTES / 1e6 / s, 3}};
			ev_counter(t, name.buf, TRACE_MACHINE_PID, t1, a, 3);
		}
		strbuf_reset(&dev);
		strbuf_addstr(&dev, d ? d : "");
		t0 = t1, rd0 = rd, wr0 = wr, io0 = io;
	}
	sqlite3_finalize(st);
	strbuf_release(&dev);
	strbuf_release(&name);
}

static void counters_write(struct trace *t, sqlite3 *db)
{
	sqlite3_stmt *st;
	if ((st = recording_prepare(db, "proc_samples",
				    "SELECT t_ns, pid, rss_bytes FROM proc_samples WHERE rss_bytes"
				    " IS NOT NULL ORDER BY t_ns"))) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			struct trace_arg a[] = {
			    {"MiB", (double)sqlite3_column_int64(st, 2) / 1048576.0, 3}};
			ev_counter(t, "RSS", sqlite3_column_int64(st, 1),
				   sqlite3_column_int64(st, 0), a, 1);
		}
		sqlite3_finalize(st);
	}
	if ((st = recording_prepare(db, "nvml_samples",
				    "SELECT t_ns, device, sm_pct, mem_pct, mem_used_bytes FROM"
				    " nvml_samples ORDER BY t_ns"))) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			int64_t pid = (int64_t)(TRACE_GPU_PID + sqlite3_column_int64(st, 1));
			int64_t t_ns = sqlite3_column_int64(st, 0);
			struct trace_arg use[] = {{"sm_pct", sqlite3_column_double(st, 2), 1},
						  {"mem_pct", sqlite3_column_double(st, 3), 1}};
			ev_counter(t, "GPU utilisation", pid, t_ns, use, 2);
			struct trace_arg mem[] = {
			    {"used_MiB", sqlite3_column_double(st, 4) / 1048576.0, 1}};
			ev_counter(t, "GPU memory", pid, t_ns, mem, 1);
		}
		sqlite3_finalize(st);
	}
}

/* The flame chart of each thread's samples. */
struct open_frame {
	size_t func;
	int64_t start_ns;
};

struct thread_chart {
	int64_t tid, pid, last_ns;
	struct open_frame *open;
	size_t depth;
};

struct chart {
	struct trace *t;
	const struct stack_set *ss;
	struct hashmap tids; /* tid -> index in v */
	struct hashmap pids; /* tid -> pid, from the threads table */
	struct thread_chart *v;
	size_t n, alloc;
	size_t *path;
};

static void chart_close(struct chart *c, struct thread_chart *th, size_t keep, int64_t at_ns)
{
	while (th->depth > keep) {
		const struct open_frame *f = &th->open[--th->depth];
		ev_slice(c->t, "cpu", c->ss->funcs[f->func].function, th->pid, th->tid, f->start_ns,
			 at_ns, NULL);
	}
}

static void chart_sample(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct chart *c = arg;
	(void)weight;
	int64_t *ix = hashmap_get(&c->tids, &tid, sizeof(tid));
	struct thread_chart *th;
	if (ix) {
		th = &c->v[*ix];
	} else {
		if (c->n == c->alloc) {
			c->alloc = c->alloc ? 2 * c->alloc : 16;
			c->v = xrealloc(c->v, c->alloc * sizeof(*c->v));
		}
		th = &c->v[c->n];
		int64_t *pid = hashmap_get(&c->pids, &tid, sizeof(tid));
		*th = (struct thread_chart){.tid = tid, .pid = pid ? *pid : tid, .last_ns = t_ns};
		th->open = xmalloc(STACK_DEPTH_MAX * sizeof(*th->open));
		hashmap_put(&c->tids, &tid, sizeof(tid), (int64_t)c->n++);
	}
	if (t_ns - th->last_ns > TRACE_GAP_NS)
		chart_close(c, th, 0, th->last_ns + TRACE_TAIL_NS);
	size_t n = stack_set_path(c->ss, node, c->path, STACK_DEPTH_MAX), keep = 0;
	while (keep < n && keep < th->depth &&
	       th->open[keep].func == c->ss->frames[c->path[keep]].func)
		keep++;
	chart_close(c, th, keep, t_ns);
	for (size_t i = keep; i < n; i++)
		th->open[th->depth++] = (struct open_frame){c->ss->frames[c->path[i]].func, t_ns};
	th->last_ns = t_ns;
}

static int samples_write(struct trace *t, sqlite3 *db, struct strbuf *err)
{
	struct stack_set ss = STACK_SET_INIT;
	if (stack_set_load_mode(db, stack_mode_of(db), &ss, NULL, err) < 0)
		return -1;
	struct chart c = {.t = t, .ss = &ss, .tids = HASHMAP_INIT, .pids = HASHMAP_INIT};
	sqlite3_stmt *st;
	if ((st = recording_prepare(db, "threads", "SELECT tid, pid FROM threads"))) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			int64_t tid = sqlite3_column_int64(st, 0);
			hashmap_put(&c.pids, &tid, sizeof(tid), sqlite3_column_int64(st, 1));
		}
		sqlite3_finalize(st);
	}
	c.path = xmalloc(STACK_DEPTH_MAX * sizeof(*c.path));
	int rc = ss.total_samples
		     ? stack_set_each_sample(db, &ss, INT64_MIN, INT64_MAX, chart_sample, &c, err)
		     : 0;
	for (size_t i = 0; i < c.n; i++) {
		chart_close(&c, &c.v[i], 0, c.v[i].last_ns + TRACE_TAIL_NS);
		free(c.v[i].open);
	}
	free(c.v);
	free(c.path);
	hashmap_release(&c.tids);
	hashmap_release(&c.pids);
	stack_set_release(&ss);
	return rc;
}

int trace_events_each(const struct render_ctx *ctx, const struct trace_sink *sink,
		      struct trace_counts *n, struct strbuf *err)
{
	struct trace t = {.sink = sink, .text = STRBUF_INIT};
	names_write(&t, ctx->db);
	phases_write(&t, ctx->db, ctx->report);
	nvtx_write(&t, ctx->db);
	gpu_write(&t, ctx->db);
	counters_write(&t, ctx->db);
	int rc = samples_write(&t, ctx->db, err);
	gpu_calls_write(&t, ctx->db);
	/* Last: past the cap, these go before the stacks and the CUDA calls. */
	process_rates_write(&t, ctx->db);
	machine_write(&t, ctx->db);
	strbuf_release(&t.text);
	*n = t.n;
	return rc < 0 ? -1 : 0;
}
