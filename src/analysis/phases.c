/* phases: the program's own phases, from the markers in what it wrote (its
 * stdout and stderr, and the --log file), each with what it cost and where
 * its time went. Report keys `phases` and `phase_markers`.
 *
 * A line's time is its own timestamp when it has one that fits the run (a
 * log line can reach sonde long after it was written: stdout to a pipe is
 * block-buffered), read as local time (the time zone recorded at the run) or
 * UTC, whichever fits; else the time sonde read it. Markers are applied in
 * time order (phase_table.h). Per phase: CPU time and RSS from the /proc
 * readings (linear between readings), the functions its samples were charged
 * to (the program's own frame, frames.h), and the warnings, errors and
 * retries it logged.
 *
 * When the output has no markers, the program's top-level NVTX ranges are
 * the phases (phase_nvtx.h; sonde.h's and the sonde Python module's regions
 * among them): `origin` "nvtx" instead of "log", a push range's samples
 * are its own thread's, and with the cuda probe each phase has the GPU time
 * launched in it (gpu_nvtx.h). */
#include "analysis.h"
#include "frames.h"
#include "gpu_nvtx.h"
#include "phase_markers.h"
#include "phase_nvtx.h"
#include "phase_table.h"
#include "proctimeline.h"
#include "srcloc.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PHASES_LISTED_MAX 100 /* phases in report.json with their figures */
#define PHASE_TOP_FUNCTIONS 3
#define PHASES_LOCATED 3 /* the longest phases get the source line of their marker */
#define PHASE_MARKERS_MAX PHASE_TABLE_MAX
#define STAMP_SLACK_NS 1000000000LL /* a stamp may lead the run's clock by this much */
#define DAY_NS (86400LL * 1000000000LL)
#define CPU_NS_MAX (1LL << 62)
#define RSS_BYTES_MAX (1LL << 50)

struct line_clock {
	int have_anchor;
	int64_t start_unix_ns; /* t_ns 0 in wall-clock time */
	int64_t utc_offset_ns; /* the run's local time zone */
	uint64_t stamped, arrival;
};

struct timed_marker {
	int64_t t_ns;
	size_t seq; /* keeps markers of one instant in the order written */
	int64_t rowid; /* its line in output_lines */
	struct phase_marker m;
};

struct kind_line {
	int64_t t_ns;
	int kind; /* PHASE_LINE_* */
};

struct phase_stats {
	double cpu_s, rss_start, rss_end, rss_peak;
	double runq_s; /* runnable, waiting for a CPU (0 when not measured) */
	int have_proc;
	int64_t samples;
	struct hashmap funcs; /* func index -> samples charged to it */
	struct hashmap lines; /* {func, line} -> samples charged to that line of it */
	int64_t warnings, errors, retries;
};

struct phases {
	sqlite3 *db;
	struct phase_table table;
	struct timed_marker *markers;
	size_t nmarkers, allocmarkers;
	struct kind_line *kinds;
	size_t nkinds, allockinds;
	uint64_t lines, streams_seen; /* bit per stream number (1 out, 2 err, 3 log) */
	struct line_clock clock;
	long nvtx; /* the phases are this many NVTX ranges (no markers); 0: from the log */
	/* The phases listed with their figures. */
	size_t nlisted;
	struct phase_stats *stats;
	struct stack_set ss;
	long *own_frame; /* per node: the frame charged, -1 none, -2 not computed */
	size_t *path;
};

static void clock_init(struct line_clock *c, sqlite3 *db)
{
	int64_t v;
	memset(c, 0, sizeof(*c));
	if (!recording_meta_int(db, "start_unix_ns", &v) && v > 0) {
		c->have_anchor = 1;
		c->start_unix_ns = v;
	}
	if (!recording_meta_int(db, "utc_offset_s", &v) && v > -86400 && v < 86400) {
		c->utc_offset_ns = v * 1000000000LL;
	} else if (c->have_anchor) { /* an older recording: this machine's zone */
		time_t s = (time_t)(c->start_unix_ns / 1000000000);
		struct tm tm;
		if (localtime_r(&s, &tm))
			c->utc_offset_ns = (int64_t)tm.tm_gmtoff * 1000000000LL;
	}
}

/* The run time a stamp stands for when its fields are wall-clock time at
 * offset_ns from UTC. */
static int64_t stamp_to_run(const struct line_clock *c, const struct phase_marker *m,
			    int64_t offset_ns, int64_t arrival_ns)
{
	int64_t unix_ns = m->stamp_ns - offset_ns;
	if (!m->stamp_has_date) { /* a time of day: the day that puts it nearest arrival */
		int64_t arrival_unix = c->start_unix_ns + arrival_ns;
		int64_t day = (arrival_unix - unix_ns) / DAY_NS;
		unix_ns += day * DAY_NS;
		if (arrival_unix - unix_ns > DAY_NS / 2)
			unix_ns += DAY_NS;
	}
	return unix_ns - c->start_unix_ns;
}

/* The time of a line read at arrival_ns: its stamp when one reading of it fits
 * the run before arrival (nearest arrival wins), else arrival. */
static int64_t line_time(struct line_clock *c, const struct phase_marker *m, int64_t arrival_ns)
{
	if (c->have_anchor && m->stamp_ns >= 0) {
		int64_t best = INT64_MIN;
		const int64_t offsets[] = { c->utc_offset_ns, 0 };
		for (size_t i = 0; i < 2; i++) {
			int64_t t = stamp_to_run(c, m, offsets[i], arrival_ns);
			if (t >= -STAMP_SLACK_NS && t <= arrival_ns + STAMP_SLACK_NS && t > best)
				best = t;
		}
		if (best != INT64_MIN) {
			c->stamped++;
			return best > 0 ? best : 0;
		}
	}
	c->arrival++;
	return arrival_ns;
}

static void marker_keep(struct phases *ph, int64_t t_ns, const struct phase_marker *m,
			int64_t rowid)
{
	if (ph->nmarkers >= PHASE_MARKERS_MAX) {
		ph->table.dropped++;
		return;
	}
	if (ph->nmarkers == ph->allocmarkers) {
		ph->allocmarkers = ph->allocmarkers ? 2 * ph->allocmarkers : 64;
		ph->markers = xrealloc(ph->markers, ph->allocmarkers * sizeof(*ph->markers));
	}
	ph->markers[ph->nmarkers] = (struct timed_marker){ t_ns, ph->nmarkers, rowid, *m };
	ph->nmarkers++;
}

static void kind_keep(struct phases *ph, int64_t t_ns, int kind)
{
	if (ph->nkinds == ph->allockinds) {
		ph->allockinds = ph->allockinds ? 2 * ph->allockinds : 64;
		ph->kinds = xrealloc(ph->kinds, ph->allockinds * sizeof(*ph->kinds));
	}
	ph->kinds[ph->nkinds++] = (struct kind_line){ t_ns, kind };
}

static int marker_cmp(const void *a, const void *b)
{
	const struct timed_marker *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Reads every stored line: markers, and the lines that count. */
static int lines_read(struct phases *ph, const struct phase_pattern *user, struct strbuf *err)
{
	sqlite3_stmt *st;
	if (!recording_has_table(ph->db, "output_lines"))
		return 0;
	if (sqlite3_prepare_v2(ph->db,
			       "SELECT t_ns, stream, line, rowid FROM output_lines ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK) {
		strbuf_addf(err, "cannot read the output lines: %s", sqlite3_errmsg(ph->db));
		return -1;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t arrival_ns = sqlite3_column_int64(st, 0);
		int stream = sqlite3_column_int(st, 1);
		const char *line = (const char *)sqlite3_column_blob(st, 2);
		int len = sqlite3_column_bytes(st, 2);
		if (!line || len <= 0)
			continue;
		ph->lines++;
		if (stream > 0 && stream < 16)
			ph->streams_seen |= 1u << stream;
		struct phase_marker m;
		int is_marker = phase_marker_parse(line, (size_t)len, user, &m);
		int kind = phase_line_kind(line, (size_t)len);
		if (!is_marker && !kind)
			continue;
		int64_t t = line_time(&ph->clock, &m, arrival_ns);
		if (is_marker)
			marker_keep(ph, t, &m, sqlite3_column_int64(st, 3));
		if (kind)
			kind_keep(ph, t, kind);
	}
	sqlite3_finalize(st);
	if (ph->nmarkers > 1)
		qsort(ph->markers, ph->nmarkers, sizeof(*ph->markers), marker_cmp);
	for (size_t i = 0; i < ph->nmarkers; i++)
		phase_table_add(&ph->table, ph->markers[i].t_ns, &ph->markers[i].m,
				ph->markers[i].rowid);
	return 0;
}

static void stats_proc(struct phases *ph)
{
	struct proc_point *cpu = NULL, *rss = NULL, *runq = NULL;
	size_t ncpu = proc_timeline_load(ph->db, "user_ns + sys_ns", CPU_NS_MAX, &cpu);
	size_t nrunq = proc_timeline_load(ph->db, "runq_wait_ns", CPU_NS_MAX, &runq);
	size_t nrss = proc_timeline_load(ph->db, "rss_bytes", RSS_BYTES_MAX, &rss);
	for (size_t i = 0; i < ph->nlisted; i++) {
		const struct phase *p = &ph->table.v[i];
		struct phase_stats *s = &ph->stats[i];
		if (!ncpu || !nrss)
			continue;
		s->have_proc = 1;
		s->cpu_s = (proc_timeline_at(cpu, ncpu, p->end_ns) -
			    proc_timeline_at(cpu, ncpu, p->start_ns)) / 1e9;
		if (s->cpu_s < 0)
			s->cpu_s = 0; /* a process's readings ended (it was reaped) */
		s->runq_s = (proc_timeline_at(runq, nrunq, p->end_ns) -
			     proc_timeline_at(runq, nrunq, p->start_ns)) / 1e9;
		if (s->runq_s < 0)
			s->runq_s = 0;
		s->rss_start = proc_timeline_at(rss, nrss, p->start_ns);
		s->rss_end = proc_timeline_at(rss, nrss, p->end_ns);
		s->rss_peak = s->rss_start > s->rss_end ? s->rss_start : s->rss_end;
		for (size_t k = 0; k < nrss; k++)
			if (rss[k].t_ns >= p->start_ns && rss[k].t_ns <= p->end_ns &&
			    (double)rss[k].value > s->rss_peak)
				s->rss_peak = (double)rss[k].value;
	}
	free(cpu);
	free(rss);
	free(runq);
}

/* The frame a sample of node is charged to (frames.h), cached per node. */
static long own_frame_of(struct phases *ph, size_t node)
{
	if (ph->own_frame[node] != -2)
		return ph->own_frame[node];
	size_t n = stack_set_path(&ph->ss, node, ph->path, STACK_DEPTH_MAX);
	size_t k = frame_own_index(&ph->ss, ph->path, n);
	if (k == n && n) /* nothing of the program's own: the leaf */
		k = n - 1;
	ph->own_frame[node] = k < n ? (long)ph->path[k] : -1;
	return ph->own_frame[node];
}

static void count_key(struct hashmap *m, const void *key, size_t len)
{
	int64_t *c = hashmap_get(m, key, len);
	if (c)
		(*c)++;
	else
		hashmap_put(m, key, len, 1);
}

static void on_sample(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct phases *ph = arg;
	(void)weight;
	long fr = -1;
	for (size_t i = 0; i < ph->nlisted; i++) {
		const struct phase *p = &ph->table.v[i];
		if (t_ns < p->start_ns || t_ns >= p->end_ns || (p->tid && p->tid != tid))
			continue;
		if (fr == -1 && (fr = own_frame_of(ph, node)) < 0)
			return;
		const struct stack_frame_rec *f = &ph->ss.frames[fr];
		struct phase_stats *s = &ph->stats[i];
		s->samples++;
		int64_t key = (int64_t)f->func, line_key[2] = { key, f->line };
		count_key(&s->funcs, &key, sizeof(key));
		count_key(&s->lines, line_key, sizeof(line_key));
	}
}

static int stats_samples(struct phases *ph, const char **source, struct strbuf *err)
{
	if (stack_set_load_mode(ph->db, stack_mode_of(ph->db), &ph->ss, source, err))
		return -1;
	if (!ph->ss.total_samples)
		return 0;
	ph->own_frame = xmalloc((ph->ss.nnodes ? ph->ss.nnodes : 1) * sizeof(*ph->own_frame));
	for (size_t i = 0; i < ph->ss.nnodes; i++)
		ph->own_frame[i] = -2;
	ph->path = xmalloc(STACK_DEPTH_MAX * sizeof(*ph->path));
	int64_t from = INT64_MAX, to = INT64_MIN;
	for (size_t i = 0; i < ph->nlisted; i++) {
		if (ph->table.v[i].start_ns < from)
			from = ph->table.v[i].start_ns;
		if (ph->table.v[i].end_ns > to)
			to = ph->table.v[i].end_ns;
	}
	return stack_set_each_sample(ph->db, &ph->ss, from, to, on_sample, ph, err);
}

static void stats_lines(struct phases *ph)
{
	for (size_t k = 0; k < ph->nkinds; k++)
		for (size_t i = 0; i < ph->nlisted; i++) {
			const struct phase *p = &ph->table.v[i];
			const struct kind_line *l = &ph->kinds[k];
			if (l->t_ns < p->start_ns || l->t_ns > p->end_ns)
				continue;
			ph->stats[i].warnings += !!(l->kind & PHASE_LINE_WARNING);
			ph->stats[i].errors += !!(l->kind & PHASE_LINE_ERROR);
			ph->stats[i].retries += !!(l->kind & PHASE_LINE_RETRY);
		}
}

struct func_share {
	long func;
	int64_t samples;
};

static int share_cmp(const void *a, const void *b)
{
	const struct func_share *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

/* The line of func with the most samples of the phase, 0 when none is known. */
static int hot_line(const struct phase_stats *s, long func)
{
	int64_t best = 0;
	int line = 0;
	for (size_t i = 0; i < s->lines.cap; i++) {
		const struct hashmap_slot *slot = &s->lines.slots[i];
		int64_t key[2];
		if (!slot->key)
			continue;
		memcpy(key, slot->key, sizeof(key));
		if (key[0] == func && key[1] > 0 && slot->value > best) {
			best = slot->value;
			line = (int)key[1];
		}
	}
	return line;
}

static json_t *top_functions_json(const struct phases *ph, const struct phase_stats *s)
{
	json_t *arr = json_array();
	size_t n = 0;
	struct func_share *v = xmalloc((s->funcs.len ? s->funcs.len : 1) * sizeof(*v));
	for (size_t i = 0; i < s->funcs.cap; i++) {
		const struct hashmap_slot *slot = &s->funcs.slots[i];
		if (!slot->key)
			continue;
		int64_t f;
		memcpy(&f, slot->key, sizeof(f));
		v[n++] = (struct func_share){ (long)f, slot->value };
	}
	qsort(v, n, sizeof(*v), share_cmp);
	for (size_t i = 0; i < n && i < PHASE_TOP_FUNCTIONS; i++) {
		const struct stack_func *fn = &ph->ss.funcs[v[i].func];
		json_t *o = json_object();
		json_object_set_new(o, "function", report_string(fn->function, strlen(fn->function)));
		json_object_set_new(o, "file", fn->file ? report_string(fn->file, strlen(fn->file))
							: json_null());
		json_object_set_new(o, "module",
				    fn->module ? report_string(fn->module, strlen(fn->module))
					       : json_null());
		int line = hot_line(s, v[i].func);
		json_object_set_new(o, "line", line ? json_integer(line) : json_null());
		json_object_set_new(o, "pct", json_real(100.0 * (double)v[i].samples /
							(double)s->samples));
		json_object_set_new(o, "samples", json_integer(v[i].samples));
		json_array_append_new(arr, o);
	}
	free(v);
	return arr;
}

static json_t *bytes_or_null(int have, double v)
{
	return have ? json_integer((json_int_t)v) : json_null();
}

static json_t *phase_json(const struct phases *ph, size_t i)
{
	const struct phase *p = &ph->table.v[i];
	const struct phase_stats *s = &ph->stats[i];
	double duration_s = (double)(p->end_ns - p->start_ns) / 1e9;
	json_t *o = json_object();
	json_object_set_new(o, "name", report_string(p->name, strlen(p->name)));
	json_object_set_new(o, "origin", json_string(ph->nvtx ? "nvtx" : "log"));
	json_object_set_new(o, "tid", p->tid ? json_integer(p->tid) : json_null());
	json_object_set_new(o, "start_s", json_real((double)p->start_ns / 1e9));
	json_object_set_new(o, "end_s", json_real((double)p->end_ns / 1e9));
	json_object_set_new(o, "duration_s", json_real(duration_s));
	json_object_set_new(o, "logged_duration_s",
			    p->logged_s >= 0 ? json_real(p->logged_s) : json_null());
	json_object_set_new(o, "ended_by", json_string(phase_ended_by_name(p->ended_by)));
	json_object_set_new(o, "parent",
			    p->parent >= 0 ? report_string(ph->table.v[p->parent].name,
							   strlen(ph->table.v[p->parent].name))
					   : json_null());
	json_object_set_new(o, "depth", json_integer(p->depth));
	json_object_set_new(o, "cpu_s", s->have_proc ? json_real(s->cpu_s) : json_null());
	json_object_set_new(o, "cpu_utilization", s->have_proc && duration_s > 0
							  ? json_real(s->cpu_s / duration_s)
							  : json_null());
	json_object_set_new(o, "runq_wait_s", s->have_proc ? json_real(s->runq_s) : json_null());
	json_object_set_new(o, "rss_start_bytes", bytes_or_null(s->have_proc, s->rss_start));
	json_object_set_new(o, "rss_end_bytes", bytes_or_null(s->have_proc, s->rss_end));
	json_object_set_new(o, "rss_peak_bytes", bytes_or_null(s->have_proc, s->rss_peak));
	json_object_set_new(o, "rss_delta_bytes",
			    bytes_or_null(s->have_proc, s->rss_end - s->rss_start));
	json_object_set_new(o, "samples", json_integer(s->samples));
	json_object_set_new(o, "top_functions", top_functions_json(ph, s));
	json_object_set_new(o, "warnings", json_integer(s->warnings));
	json_object_set_new(o, "errors", json_integer(s->errors));
	json_object_set_new(o, "retries", json_integer(s->retries));
	return o;
}

static const char *clock_name(const struct line_clock *c)
{
	if (c->stamped && c->arrival)
		return "log timestamps where lines have them, else arrival";
	return c->stamped ? "log timestamps" : "arrival";
}

static json_t *markers_json(const struct phases *ph, const char *pattern)
{
	json_t *o = json_object();
	json_object_set_new(o, "pattern", pattern ? report_string(pattern, strlen(pattern))
						  : json_null());
	json_object_set_new(o, "lines_read", json_integer((json_int_t)ph->lines));
	json_object_set_new(o, "origin", json_string(ph->nvtx ? "nvtx" : "log"));
	json_object_set_new(o, "nvtx_ranges", json_integer(ph->nvtx));
	json_object_set_new(o, "markers", json_integer((json_int_t)ph->nmarkers));
	json_object_set_new(o, "phases_total", json_integer((json_int_t)ph->table.n));
	json_object_set_new(o, "phases_dropped", json_integer((json_int_t)ph->table.dropped));
	json_object_set_new(o, "unmatched_ends",
			    json_integer((json_int_t)ph->table.unmatched_ends));
	json_object_set_new(o, "clock", json_string(clock_name(&ph->clock)));
	json_object_set_new(o, "log_file", json_boolean(ph->streams_seen & (1u << 3)));
	return o;
}

/* The source line that wrote the marker of each of the PHASES_LOCATED longest
 * phases (srcloc.h), as their "source". */
static void phases_locate(struct phases *ph, json_t *arr)
{
	struct srcloc_index *ix = NULL;
	sqlite3_stmt *st = NULL;
	int done[PHASES_LISTED_MAX] = { 0 };
	for (size_t k = 0; k < PHASES_LOCATED; k++) {
		size_t best = ph->nlisted;
		for (size_t i = 0; i < ph->nlisted; i++) {
			const struct phase *p = &ph->table.v[i];
			if (!done[i] && (p->end_line >= 0 || p->start_line >= 0) &&
			    (best == ph->nlisted ||
			     p->end_ns - p->start_ns > ph->table.v[best].end_ns - ph->table.v[best].start_ns))
				best = i;
		}
		if (best == ph->nlisted)
			break;
		done[best] = 1;
		if (!ix && !(ix = srcloc_index_new(ph->db)))
			break;
		if (!st && sqlite3_prepare_v2(ph->db, "SELECT line FROM output_lines WHERE rowid = ?",
					      -1, &st, NULL) != SQLITE_OK)
			break;
		const struct phase *p = &ph->table.v[best];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, p->end_line >= 0 ? p->end_line : p->start_line);
		if (sqlite3_step(st) != SQLITE_ROW)
			continue;
		json_t *where = srcloc_find(ix, (const char *)sqlite3_column_blob(st, 0),
					    (size_t)sqlite3_column_bytes(st, 0));
		if (where)
			json_object_set_new(json_array_get(arr, best), "source", where);
	}
	sqlite3_finalize(st);
	srcloc_index_free(ix);
}

static void phases_release(struct phases *ph)
{
	for (size_t i = 0; i < ph->nlisted && ph->stats; i++) {
		hashmap_release(&ph->stats[i].funcs);
		hashmap_release(&ph->stats[i].lines);
	}
	free(ph->stats);
	free(ph->markers);
	free(ph->kinds);
	free(ph->own_frame);
	free(ph->path);
	stack_set_release(&ph->ss);
	phase_table_release(&ph->table);
}

static int phases_run(struct analysis_ctx *ctx)
{
	struct phases ph = { .db = ctx->db, .table = PHASE_TABLE_INIT, .ss = STACK_SET_INIT };
	struct phase_pattern user = { .compiled = 0 };
	struct strbuf err = STRBUF_INIT;
	int ret = 0;
	char *pattern = ctx->opts->phase_pattern ? xstrdup(ctx->opts->phase_pattern)
						 : recording_meta_text(ctx->db, "phase_pattern");
	if (pattern && phase_pattern_compile(&user, pattern, &err)) {
		report_not_measured(ctx->report, "phases", err.buf);
		goto out;
	}
	clock_init(&ph.clock, ctx->db);
	if (lines_read(&ph, pattern ? &user : NULL, &err)) {
		report_not_measured(ctx->report, "phases", err.buf);
		ret = -1;
		goto out;
	}
	if (!ph.table.n && (ph.nvtx = phase_nvtx_read(ctx->db, &ph.table, &err)) < 0) {
		report_not_measured(ctx->report, "phases", err.buf);
		ret = -1;
		goto out;
	}
	double wall_s = report_wall_s(ctx->db);
	int64_t end_ns = wall_s > 0 ? (int64_t)(wall_s * 1e9) : 0;
	if (ph.nmarkers && ph.markers[ph.nmarkers - 1].t_ns > end_ns)
		end_ns = ph.markers[ph.nmarkers - 1].t_ns;
	phase_table_finish(&ph.table, end_ns);
	if (!ph.table.n) {
		strbuf_reset(&err);
		strbuf_addf(&err, "no phase markers in the %llu lines the target wrote",
			    (unsigned long long)ph.lines);
		if (!pattern)
			strbuf_addstr(&err, " (markers like 'phase=NAME start', 'Starting NAME',"
					    " 'NAME done in 1.2s'; --phase REGEX names your own)");
		report_not_measured(ctx->report, "phases", err.buf);
		json_object_set_new(ctx->report, "phase_markers", markers_json(&ph, pattern));
		goto out;
	}
	ph.nlisted = ph.table.n < PHASES_LISTED_MAX ? ph.table.n : PHASES_LISTED_MAX;
	ph.stats = xcalloc(ph.nlisted, sizeof(*ph.stats));
	stats_proc(&ph);
	const char *source = NULL;
	strbuf_reset(&err);
	if (stats_samples(&ph, &source, &err))
		report_not_measured(ctx->report, "phase_functions", err.buf);
	stats_lines(&ph);
	json_t *arr = json_array();
	for (size_t i = 0; i < ph.nlisted; i++)
		json_array_append_new(arr, phase_json(&ph, i));
	phases_locate(&ph, arr);
	if (ph.nvtx)
		gpu_nvtx_phases_add(ctx->db, ph.table.v, ph.nlisted, arr);
	json_object_set_new(ctx->report, "phases", arr);
	json_t *markers = markers_json(&ph, pattern);
	json_object_set_new(markers, "samples_source", source && ph.ss.total_samples
							       ? json_string(source)
							       : json_null());
	json_object_set_new(ctx->report, "phase_markers", markers);
out:
	if (user.compiled)
		phase_pattern_release(&user);
	free(pattern);
	strbuf_release(&err);
	phases_release(&ph);
	return ret;
}

static const char *const phases_provides[] = { "phases", "phase_markers", NULL };

const struct analysis_ops analysis_phases = {
	.name = "phases",
	.provides = phases_provides,
	.run = phases_run,
};
