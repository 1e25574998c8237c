/* memory_heap: the allocation tracker's figures (report key memory.heap): heap
 * peak and when, leaks at exit, temporaries, the call sites behind them, and
 * the findings they support: leak, dominant peak contributor, churn. */
#include "analysis.h"
#include "frames.h"
#include "memory_heap.h"
#include "nodesite.h"
#include "../record/reader.h"
#include "../util/strbuf.h"
#include "../util/satmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HEAP_TOP_PER_KIND 8
#define HEAP_TIMELINE_POINTS 240
/* Findings thresholds. */
#define LEAK_MIN_BYTES (64 * 1024)
#define LEAK_MIN_SHARE 0.01 /* of the peak: a helper's few buffers at its exit are noise */
#define PEAK_MIN_SHARE 0.25
#define CHURN_MIN_COUNT 10000
/* An assumed cost of one malloc/free pair, to rank churn against time findings. */
#define CHURN_NS_PER_PAIR 100.0

struct heap_row {
	int64_t node, pid;
	double allocations, allocated_bytes, peak_bytes, leaked_bytes, leaked_count, temp_count,
		temp_bytes;
	double peak_sd, leaked_sd, temp_sd; /* standard deviations (sampled mode) */
	double mmap_bytes; /* from anonymous mappings; -1: not recorded */
	int picked;
	json_t *natives; /* one Python line's native paths (rows_group_python_lines); NULL: one */
};

static size_t rows_load(sqlite3 *db, struct heap_row **out)
{
	sqlite3_stmt *st;
	*out = NULL;
	/* mmap_bytes came with mapping tracking: -1 in older recordings. */
	int has_mmap = recording_has_column(db, "alloc_sites", "mmap_bytes");
	if (sqlite3_prepare_v2(db,
			       has_mmap ? "SELECT node, pid, allocations, allocated_bytes, peak_bytes,"
					  " leaked_bytes, leaked_allocations, temporary_allocations,"
					  " temporary_bytes, peak_bytes_sd, leaked_bytes_sd,"
					  " temporary_allocations_sd, mmap_bytes FROM alloc_sites"
					: "SELECT node, pid, allocations, allocated_bytes, peak_bytes,"
					  " leaked_bytes, leaked_allocations, temporary_allocations,"
					  " temporary_bytes, peak_bytes_sd, leaked_bytes_sd,"
					  " temporary_allocations_sd, -1 FROM alloc_sites",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	size_t n = 0, alloc = 0;
	struct heap_row *v = NULL;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 64;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		v[n++] = (struct heap_row){
			sqlite3_column_int64(st, 0),  sqlite3_column_int64(st, 1),
			sqlite3_column_double(st, 2), sqlite3_column_double(st, 3),
			sqlite3_column_double(st, 4), sqlite3_column_double(st, 5),
			sqlite3_column_double(st, 6), sqlite3_column_double(st, 7),
			sqlite3_column_double(st, 8),  sqlite3_column_double(st, 9),
			sqlite3_column_double(st, 10), sqlite3_column_double(st, 11),
			sqlite3_column_double(st, 12), 0, NULL,
		};
	}
	sqlite3_finalize(st);
	*out = v;
	return n;
}

static double key_peak(const struct heap_row *r) { return r->peak_bytes; }
static double key_leak(const struct heap_row *r) { return r->leaked_bytes; }
static double key_temp(const struct heap_row *r) { return r->temp_count; }
static double key_bytes(const struct heap_row *r) { return r->allocated_bytes; }

/* Index of the largest row by key (ties: the lowest node), or -1 when all are 0. */
static long row_max(const struct heap_row *v, size_t n, double (*key)(const struct heap_row *),
		    int skip_picked)
{
	long best = -1;
	for (size_t i = 0; i < n; i++) {
		if ((skip_picked && v[i].picked) || key(&v[i]) <= 0)
			continue;
		if (best < 0 || key(&v[i]) > key(&v[best]))
			best = (long)i;
	}
	return best;
}

static int by_peak_then_leak(const void *a, const void *b)
{
	const struct heap_row *x = a, *y = b;
	if (x->peak_bytes != y->peak_bytes)
		return x->peak_bytes < y->peak_bytes ? 1 : -1;
	if (x->leaked_bytes != y->leaked_bytes)
		return x->leaked_bytes < y->leaked_bytes ? 1 : -1;
	if (x->temp_count != y->temp_count)
		return x->temp_count < y->temp_count ? 1 : -1;
	return x->allocated_bytes < y->allocated_bytes ? 1 : -1;
}

/* "mmap" when the site's bytes came from anonymous mappings, "malloc" when
 * from the malloc family, "malloc+mmap" for both; NULL when the recording
 * does not say (mmap_bytes < 0: older than mapping tracking). */
static const char *heap_site_kind(double allocated_bytes, double mmap_bytes)
{
	if (mmap_bytes < 0)
		return NULL;
	if (mmap_bytes <= 0)
		return "malloc";
	/* Sums of doubles: "all of it" within rounding. */
	return mmap_bytes >= allocated_bytes * (1 - 1e-9) ? "mmap" : "malloc+mmap";
}

/* How the site's Python frames were found (alloc_site_python); recordings
 * made before that table knew only the nearest python sample. */
static json_t *python_method(sqlite3 *db, int64_t node)
{
	sqlite3_stmt *st;
	json_t *m = NULL;
	if (sqlite3_prepare_v2(db, "SELECT method FROM alloc_site_python WHERE node = ?", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, node);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			m = json_string((const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	return m ? m : json_string("nearest python sample");
}

json_t *heap_site_describe(sqlite3 *db, int64_t node)
{
	struct node_site f;
	json_t *stack = NULL;
	char *allocator = NULL;
	int python = 0;
	if (node_site_load(db, node, &f, &allocator, &stack, &python))
		return NULL;
	struct strbuf loc = STRBUF_INIT;
	node_site_location(&loc, &f);
	json_t *o = json_object();
	json_object_set_new(o, "function", report_string(f.function, f.function ? strlen(f.function) : 0));
	json_object_set_new(o, "file", report_string(f.file, f.file ? strlen(f.file) : 0));
	json_object_set_new(o, "line", f.line > 0 ? json_integer(f.line) : json_null());
	json_object_set_new(o, "module", report_string(f.module, f.module ? strlen(f.module) : 0));
	json_object_set_new(o, "location", report_string(loc.buf, loc.len));
	if (python) {
		/* Read in-process by the agent, or time-correlated (the Python line
		 * the thread was in at its nearest python sample): docs/memory.md. */
		json_t *ps = json_object();
		json_object_set_new(ps, "function", report_string(f.function, f.function ? strlen(f.function) : 0));
		json_object_set_new(ps, "file", report_string(f.file, f.file ? strlen(f.file) : 0));
		json_object_set_new(ps, "line", f.line > 0 ? json_integer(f.line) : json_null());
		json_object_set_new(ps, "method", python_method(db, node));
		json_object_set_new(o, "python_site", ps);
	}
	/* The function that called the allocator, when the site is its caller. */
	json_object_set_new(o, "allocated_in",
			    report_string(allocator, allocator ? strlen(allocator) : 0));
	free(allocator);
	json_object_set_new(o, "stack", stack);
	node_site_release(&f);
	strbuf_release(&loc);
	return o;
}

static json_t *site_json(sqlite3 *db, const struct heap_row *r, int estimated)
{
	json_t *o = heap_site_describe(db, r->node);
	if (!o)
		return NULL;
	const char *kind = heap_site_kind(r->allocated_bytes, r->mmap_bytes);
	if (kind)
		json_object_set_new(o, "kind", json_string(kind));
	json_object_set_new(o, "pid", json_integer(r->pid));
	json_object_set_new(o, "peak_bytes", json_integer(llround(r->peak_bytes)));
	json_object_set_new(o, "leaked_bytes", json_integer(llround(r->leaked_bytes)));
	json_object_set_new(o, "leaked_allocations", json_integer(llround(r->leaked_count)));
	json_object_set_new(o, "allocations", json_integer(llround(r->allocations)));
	json_object_set_new(o, "allocated_bytes", json_integer(llround(r->allocated_bytes)));
	json_object_set_new(o, "temporary_allocations", json_integer(llround(r->temp_count)));
	json_object_set_new(o, "temporary_bytes", json_integer(llround(r->temp_bytes)));
	/* Bytes held twice (a host copy of device memory, say): the GPU analysis
	 * fills it; null until something measures it. */
	json_object_set_new(o, "redundant_bytes", json_null());
	json_object_set_new(o, "estimated", json_boolean(estimated));
	if (r->natives)
		json_object_set(o, "native_paths", r->natives);
	if (estimated) {
		json_object_set_new(o, "peak_bytes_sd", json_integer(llround(r->peak_sd)));
		json_object_set_new(o, "leaked_bytes_sd", json_integer(llround(r->leaked_sd)));
		json_object_set_new(o, "temporary_allocations_sd", json_integer(llround(r->temp_sd)));
	}
	return o;
}

static json_t *timeline_json(sqlite3 *db)
{
	sqlite3_stmt *st;
	json_t *arr = json_array();
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM alloc_timeline", -1, &st, NULL) != SQLITE_OK)
		return arr;
	size_t n = sqlite3_step(st) == SQLITE_ROW ? (size_t)sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	size_t step = (n + HEAP_TIMELINE_POINTS - 1) / HEAP_TIMELINE_POINTS;
	if (!step)
		step = 1;
	if (sqlite3_prepare_v2(db, "SELECT t_ns, allocations, allocated_bytes, live_bytes"
				   " FROM alloc_timeline ORDER BY t_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return arr;
	/* Buckets merge by sums (counts, bytes) and maximum (live bytes). */
	double a = 0, b = 0, live = 0, t0 = 0;
	size_t k = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (k % step == 0)
			t0 = (double)sqlite3_column_int64(st, 0) / 1e9;
		a += sqlite3_column_double(st, 1);
		b += sqlite3_column_double(st, 2);
		double l = sqlite3_column_double(st, 3);
		live = l > live ? l : live;
		if (++k % step == 0) {
			json_array_append_new(arr, json_pack("{s:f, s:I, s:I, s:I}", "t_s", t0,
							     "allocations", (json_int_t)llround(a),
							     "allocated_bytes", (json_int_t)llround(b),
							     "live_bytes", (json_int_t)llround(live)));
			a = b = live = 0;
		}
	}
	if (k % step)
		json_array_append_new(arr, json_pack("{s:f, s:I, s:I, s:I}", "t_s", t0, "allocations",
						     (json_int_t)llround(a), "allocated_bytes",
						     (json_int_t)llround(b), "live_bytes",
						     (json_int_t)llround(live)));
	sqlite3_finalize(st);
	return arr;
}

static void fmt_mib(struct strbuf *sb, double bytes)
{
	if (bytes >= 1024.0 * 1024.0)
		strbuf_addf(sb, "%.1f MiB", bytes / (1024.0 * 1024.0));
	else
		strbuf_addf(sb, "%.1f KiB", bytes / 1024.0);
}

/* Frames every native stack starts with: they say nothing about the program. */
static int is_startup_frame(const char *fn)
{
	static const char *const names[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "start_thread", "clone3", "__clone3", "clone",
					     "__clone" };
	for (size_t i = 0; fn && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(fn, names[i]))
			return 1;
	return 0;
}

/* The innermost frames of a stack, outermost first: "main → parse → leak_some". */
static void stack_text(struct strbuf *sb, json_t *stack)
{
	size_t n = json_array_size(stack), first = 0;
	while (first < n && is_startup_frame(json_string_value(json_array_get(stack, first))))
		first++;
	size_t from = n - first > 5 ? n - 5 : first;
	if (from > first)
		strbuf_addstr(sb, "… → ");
	for (size_t i = from; i < n; i++)
		strbuf_addf(sb, "%s%s", i > from ? " → " : "",
			    json_string_value(json_array_get(stack, i)));
}

/* " (estimated from samples, ±12%)" in sampled mode, "" otherwise. */
static void uncertainty(struct strbuf *sb, int estimated, double sd, double value)
{
	strbuf_reset(sb);
	if (!estimated)
		return;
	if (value > 0)
		strbuf_addf(sb, " (estimated from samples, ±%.0f%% at one standard deviation)",
			    100.0 * sd / value);
	else
		strbuf_addstr(sb, " (estimated from samples)");
}

/* loc := the site's location, as the findings name it (reset first). */
static void site_location(struct strbuf *loc, json_t *site)
{
	strbuf_reset(loc);
	node_site_location(loc, &(struct node_site){
			      (char *)json_string_value(json_object_get(site, "function")),
			      (char *)json_string_value(json_object_get(site, "file")),
			      (char *)json_string_value(json_object_get(site, "module")),
			      (int)json_integer_value(json_object_get(site, "line")) });
}

/* "; anonymous mappings (mmap)" after the evidence of a site that maps its memory. */
static void mapping_note(struct strbuf *sb, json_t *site)
{
	const char *kind = json_string_value(json_object_get(site, "kind"));
	if (kind && !strcmp(kind, "mmap"))
		strbuf_addstr(sb, "; anonymous mappings made with mmap (release them with munmap)");
	else if (kind && !strcmp(kind, "malloc+mmap"))
		strbuf_addstr(sb, "; partly anonymous mappings made with mmap");
}

/* The rows looked at for grouping: the largest by each measure. A Python
 * line's many small native paths below them all are not worth a site. */
#define GROUP_ROWS_PER_KIND 64

static void row_add(struct heap_row *to, const struct heap_row *r)
{
	to->allocations += r->allocations;
	to->allocated_bytes += r->allocated_bytes;
	to->peak_bytes += r->peak_bytes;
	to->leaked_bytes += r->leaked_bytes;
	to->leaked_count += r->leaked_count;
	to->temp_count += r->temp_count;
	to->temp_bytes += r->temp_bytes;
	/* Standard deviations of independent estimates add in quadrature. */
	to->peak_sd = sqrt(to->peak_sd * to->peak_sd + r->peak_sd * r->peak_sd);
	to->leaked_sd = sqrt(to->leaked_sd * to->leaked_sd + r->leaked_sd * r->leaked_sd);
	to->temp_sd = sqrt(to->temp_sd * to->temp_sd + r->temp_sd * r->temp_sd);
	if (to->mmap_bytes >= 0 && r->mmap_bytes >= 0)
		to->mmap_bytes += r->mmap_bytes;
	else
		to->mmap_bytes = -1;
}

/* A native path under a Python line: what allocated, called from where, how much. */
static json_t *native_path_json(json_t *site, const struct heap_row *r)
{
	json_t *stack = json_object_get(site, "stack");
	size_t n = json_array_size(stack);
	json_t *o = json_object();
	json_object_set(o, "allocated_in", json_object_get(site, "allocated_in"));
	json_object_set_new(o, "called_from",
			    n >= 2 ? json_incref(json_array_get(stack, n - 2)) : json_null());
	json_object_set_new(o, "allocated_bytes", json_integer(llround(r->allocated_bytes)));
	json_object_set_new(o, "peak_bytes", json_integer(llround(r->peak_bytes)));
	json_object_set_new(o, "leaked_bytes", json_integer(llround(r->leaked_bytes)));
	return o;
}

/* Adds r's native path to paths, summed into the entry of the same allocator. */
static void native_path_add(json_t *paths, json_t *site, const struct heap_row *r)
{
	const char *fn = json_string_value(json_object_get(site, "allocated_in"));
	size_t i;
	json_t *p;
	json_array_foreach(paths, i, p)
	{
		const char *have = json_string_value(json_object_get(p, "allocated_in"));
		if (!fn || !have || strcmp(fn, have))
			continue;
		static const char *const keys[] = { "allocated_bytes", "peak_bytes",
						    "leaked_bytes" };
		const double add[] = { r->allocated_bytes, r->peak_bytes, r->leaked_bytes };
		for (size_t k = 0; k < 3; k++)
			json_object_set_new(
			    p, keys[k],
			    json_integer(sat_add_i64(json_integer_value(json_object_get(p, keys[k])),
						     llround(add[k]))));
		return;
	}
	json_array_append_new(paths, native_path_json(site, r));
}

void heap_sites_sort(json_t *arr, const char *key)
{
	for (size_t i = 1; i < json_array_size(arr); i++)
		for (size_t j = i;
		     j > 0 &&
		     json_integer_value(json_object_get(json_array_get(arr, j), key)) >
			 json_integer_value(json_object_get(json_array_get(arr, j - 1), key));
		     j--) {
			json_t *x = json_incref(json_array_get(arr, j));
			json_array_remove(arr, j);
			json_array_insert_new(arr, j - 1, x);
		}
}

/* One Python line is one heap site, whatever native code under it allocated
 * (a list comprehension of bytearrays, json.loads: several callees): the
 * rows of the largest by each measure that share a Python line (and process)
 * become one, summed, described by its largest native path, with every path
 * kept as evidence (natives). Rows with no Python line stay as they are.
 * *v and *n are replaced by the grouped rows (the rest dropped). */
static void rows_group_python_lines(sqlite3 *db, struct heap_row **v, size_t *n)
{
	double (*keys[])(const struct heap_row *) = { key_peak, key_leak, key_temp, key_bytes };
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (int i = 0; i < GROUP_ROWS_PER_KIND; i++) {
			long b = row_max(*v, *n, keys[k], 1);
			if (b < 0)
				break;
			(*v)[b].picked = 1;
		}
	struct heap_row *out = xcalloc(*n ? *n : 1, sizeof(*out));
	char **lines = xcalloc(*n ? *n : 1, sizeof(*lines));
	size_t nout = 0;
	for (size_t i = 0; i < *n; i++) {
		struct heap_row r = (*v)[i];
		if (!r.picked)
			continue;
		r.picked = 0;
		json_t *site = heap_site_describe(db, r.node);
		const char *loc = json_string_value(json_object_get(site, "location"));
		char *line = NULL;
		if (site && loc && json_object_get(site, "python_site")) {
			struct strbuf key = STRBUF_INIT;
			strbuf_addf(&key, "%lld %s", (long long)r.pid, loc);
			line = strbuf_detach(&key);
		}
		size_t g = 0;
		while (line && g < nout && (!lines[g] || strcmp(lines[g], line)))
			g++;
		if (!line || g == nout) {
			lines[nout] = line;
			out[nout] = r;
			if (line) {
				out[nout].natives = json_array();
				json_array_append_new(out[nout].natives,
						      native_path_json(site, &r));
			}
			nout++;
		} else {
			native_path_add(out[g].natives, site, &r);
			if (r.allocated_bytes > out[g].allocated_bytes - r.allocated_bytes)
				out[g].node = r.node; /* described by its largest path */
			row_add(&out[g], &r);
			free(line);
		}
		json_decref(site);
	}
	for (size_t i = 0; i < nout; i++) {
		free(lines[i]);
		if (out[i].natives && json_array_size(out[i].natives) < 2) {
			json_decref(out[i].natives);
			out[i].natives = NULL;
		}
		heap_sites_sort(out[i].natives, "allocated_bytes");
	}
	free(lines);
	free(*v);
	*v = out;
	*n = nout;
}

static void rows_release(struct heap_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(v[i].natives);
	free(v);
}

/* "; 3 native paths under this line: PyByteArray_Resize (4.0 MiB), ..." */
static void natives_text(struct strbuf *sb, json_t *site)
{
	json_t *paths = json_object_get(site, "native_paths");
	size_t i, n = json_array_size(paths);
	json_t *p;
	if (n < 2)
		return;
	strbuf_addf(sb, "; %zu native paths under this line: ", n);
	json_array_foreach(paths, i, p)
	{
		if (i == 4) {
			strbuf_addstr(sb, ", …");
			break;
		}
		const char *fn = json_string_value(json_object_get(p, "allocated_in"));
		strbuf_addf(sb, "%s%s (", i ? ", " : "", fn ? fn : "?");
		fmt_mib(sb, (double)json_integer_value(json_object_get(p, "allocated_bytes")));
		strbuf_addstr(sb, " allocated)");
	}
}

/* 1 when the site is not the program's: the interpreter's own bookkeeping
 * (CPython's code with no Python line above it: its arenas and free lists,
 * kept until exit by design), the C library's with no frame of the program
 * above it (stdio's buffers), or a launcher's (a shell or pyenv shim that
 * exec'd the program: exec, not free, ended its heap). */
static int not_the_programs(json_t *site)
{
	const char *module = json_string_value(json_object_get(site, "module"));
	return (!json_object_get(site, "python_site") &&
		(frame_is_interpreter(module) || frame_is_system(module, NULL))) ||
	       frame_is_launcher(module);
}

#define LEAK_ROWS_TRIED 16

/* The row that leaked most and is the program's (its site in *site), -1
 * when none of the LEAK_ROWS_TRIED largest is. */
static long leak_row(sqlite3 *db, const struct heap_row *v, size_t n, int estimated,
		     json_t **site)
{
	double below = INFINITY;
	*site = NULL;
	for (int tries = 0; tries < LEAK_ROWS_TRIED; tries++) {
		long best = -1;
		for (size_t i = 0; i < n; i++)
			if (v[i].leaked_bytes > 0 && v[i].leaked_bytes < below &&
			    (best < 0 || v[i].leaked_bytes > v[best].leaked_bytes))
				best = (long)i;
		if (best < 0)
			return -1;
		json_t *o = site_json(db, &v[best], estimated);
		if (o && !not_the_programs(o)) {
			*site = o;
			return best;
		}
		json_decref(o);
		below = v[best].leaked_bytes;
	}
	return -1;
}

static void add_findings(struct analysis_ctx *ctx, json_t *heap, const struct heap_row *v,
			 size_t n, int estimated)
{
	double peak = json_number_value(json_object_get(heap, "peak_bytes"));
	double leaked_total = json_number_value(json_object_get(heap, "leaked_bytes"));
	double peak_at = json_number_value(json_object_get(heap, "peak_at_s"));
	json_t *mem = json_object_get(ctx->report, "memory");
	double rss = json_number_value(json_object_get(mem, "peak_rss_bytes"));
	double denom = rss > peak ? rss : peak;
	double wall = report_wall_s(ctx->db);
	struct strbuf est = STRBUF_INIT;
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, loc = STRBUF_INIT, next = STRBUF_INIT;

	json_t *leak_site = NULL;
	long li = leak_row(ctx->db, v, n, estimated, &leak_site);
	if (li >= 0 && v[li].leaked_bytes >= LEAK_MIN_BYTES &&
	    v[li].leaked_bytes >= LEAK_MIN_SHARE * denom && denom > 0) {
		const struct heap_row *r = &v[li];
		json_t *site = leak_site;
		site_location(&loc, site);
		strbuf_addf(&title, "Memory leak: %s never frees ",
			    json_string_value(json_object_get(site, "function")));
		fmt_mib(&title, r->leaked_bytes);
		fmt_mib(&ev, r->leaked_bytes);
		uncertainty(&est, estimated, r->leaked_sd, r->leaked_bytes);
		strbuf_addf(&ev, " in %.0f allocations still live at exit%s, allocated at ",
			    r->leaked_count, est.buf);
		stack_text(&ev, json_object_get(site, "stack"));
		natives_text(&ev, site);
		mapping_note(&ev, site);
		strbuf_addstr(&ev, "; ");
		fmt_mib(&ev, leaked_total);
		strbuf_addstr(&ev, " leaked in all");
		strbuf_addf(&next, "Free what %s allocates once it is no longer needed (or give it "
				   "one owner that does); if it must live until exit, allocate it "
				   "once instead of on every call",
			    json_string_value(json_object_get(site, "function")));
		struct finding f = {
			.id = "memory.leak",
			.title = title.buf,
			.dimension = "memory",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Leak: allocations that are never freed, so the heap grows with "
				     "every call",
			.next_step = next.buf,
			.validation = "memory.heap.leaked_bytes falls; this site leaves memory.heap."
				      "top_sites' leaked_bytes",
			.impact_s = -1,
			.impact_bytes = r->leaked_bytes,
			.impact_pct = fmin(100.0, 100.0 * r->leaked_bytes / denom),
			.blames_code = FINDING_BLAMES_CODE,
		};
		findings_add(ctx->findings, &f);
	}
	json_decref(leak_site);

	long pi = row_max(v, n, key_peak, 0);
	if (pi >= 0 && peak > 0 && v[pi].peak_bytes >= PEAK_MIN_SHARE * peak) {
		const struct heap_row *r = &v[pi];
		json_t *site = site_json(ctx->db, r, estimated);
		strbuf_reset(&title);
		strbuf_reset(&ev);
		strbuf_reset(&loc);
		strbuf_reset(&next);
		site_location(&loc, site);
		strbuf_addf(&title, "%s holds %.0f%% of the heap peak",
			    json_string_value(json_object_get(site, "function")),
			    100.0 * r->peak_bytes / peak);
		fmt_mib(&ev, r->peak_bytes);
		strbuf_addstr(&ev, " of the ");
		fmt_mib(&ev, peak);
		uncertainty(&est, estimated, r->peak_sd, r->peak_bytes);
		strbuf_addf(&ev, " heap peak at %.3f s%s, allocated at ", peak_at, est.buf);
		stack_text(&ev, json_object_get(site, "stack"));
		natives_text(&ev, site);
		mapping_note(&ev, site);
		struct finding f = {
			.id = "memory.peak_site",
			.title = title.buf,
			.dimension = "memory",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Dominant peak contributor: one call site decides how much memory "
				     "the program needs",
			.next_step = json_object_get(site, "python_site")
					     ? "Hold less at once here: process the data in chunks "
					       "(iterate, a generator instead of a list), keep only what "
					       "later steps need (a summary, not every object), or drop "
					       "the references once they are used"
					     : "Make this allocation smaller or shorter-lived: process the "
					       "data in chunks (stream it), reuse one buffer, or free it "
					       "before the next large allocation",
			.validation = "memory.heap.peak_bytes and memory.peak_rss_bytes fall",
			.impact_s = -1,
			.impact_bytes = r->peak_bytes,
			.impact_pct = fmin(100.0, 100.0 * r->peak_bytes / denom),
			.blames_code = FINDING_BLAMES_CODE,
		};
		findings_add(ctx->findings, &f);
		json_decref(site);
	}

	long ti = row_max(v, n, key_temp, 0);
	if (ti >= 0 && v[ti].temp_count >= CHURN_MIN_COUNT) {
		const struct heap_row *r = &v[ti];
		json_t *site = site_json(ctx->db, r, estimated);
		double cost_s = r->temp_count * CHURN_NS_PER_PAIR / 1e9;
		strbuf_reset(&title);
		strbuf_reset(&ev);
		site_location(&loc, site);
		strbuf_addf(&title, "Allocation churn: %.0f temporary allocations in %s",
			    r->temp_count, json_string_value(json_object_get(site, "function")));
		strbuf_addf(&ev, "%.0f of its %.0f allocations (", r->temp_count, r->allocations);
		fmt_mib(&ev, r->temp_bytes);
		uncertainty(&est, estimated, r->temp_sd, r->temp_count);
		strbuf_addf(&ev, ") were freed within 1 ms%s%s; about %.3f s at an assumed %.0f ns "
				 "per malloc/free pair; at ",
			    estimated ? "" : " or before the thread's next allocation", est.buf,
			    cost_s, CHURN_NS_PER_PAIR);
		stack_text(&ev, json_object_get(site, "stack"));
		natives_text(&ev, site);
		struct finding f = {
			.id = "memory.churn",
			.title = title.buf,
			.dimension = "memory",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Churn of temporaries: a block is allocated and freed again at "
				     "once, over and over",
			.next_step = json_object_get(site, "python_site")
					     ? "Make fewer short-lived objects in this loop: build "
					       "strings with str.join or io.StringIO instead of += or "
					       "%-formatting in pieces, reuse one list or bytearray, and "
					       "move work that does not change out of the loop"
					     : "Hoist the buffer out of the loop and reuse it, keep small "
					       "buffers on the stack, or reserve capacity once",
			.validation = "memory.heap.temporary_allocations falls (and the wall time "
				      "with it)",
			.impact_s = cost_s,
			.impact_bytes = -1,
			.impact_pct = wall > 0 ? fmin(100.0, 100.0 * cost_s / wall) : 0,
			.blames_code = FINDING_BLAMES_CODE,
		};
		findings_add(ctx->findings, &f);
		json_decref(site);
	}
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&loc);
	strbuf_release(&next);
	strbuf_release(&est);
}

static int64_t meta_or(sqlite3 *db, const char *key, int64_t dflt)
{
	int64_t v;
	return recording_meta_int(db, key, &v) ? dflt : v;
}

static int memory_heap_run(struct analysis_ctx *ctx)
{
	sqlite3 *db = ctx->db;
	if (!recording_has_table(db, "alloc_sites"))
		return 0;
	json_t *mem = json_object_get(ctx->report, "memory");
	if (!mem) {
		mem = json_object();
		json_object_set_new(ctx->report, "memory", mem);
	}
	if (meta_or(db, "alloc_processes", 0) <= 0) {
		report_not_measured(ctx->report, "heap",
				    "the allocation tracker ran but its agent sent nothing: the "
				    "command is statically linked (or ignores LD_PRELOAD), so its "
				    "allocations could not be seen");
		return 0;
	}
	json_t *nm = json_object_get(ctx->report, "not_measured");
	if (nm)
		json_object_del(nm, "heap");
	char *mode = recording_meta_text(db, "alloc_mode");
	int estimated = !mode || strcmp(mode, "full");
	json_t *heap = json_object();
	json_object_set_new(heap, "mode", json_string(estimated ? "sampled" : "full"));
	json_object_set_new(heap, "sampling_interval_bytes",
			    estimated ? json_integer(meta_or(db, "alloc_interval_bytes", 0))
				      : json_null());
	json_object_set_new(heap, "estimated", json_boolean(estimated));
	json_object_set_new(heap, "peak_bytes", json_integer(meta_or(db, "alloc_peak_bytes", 0)));
	json_object_set_new(heap, "peak_at_s",
			    json_real((double)meta_or(db, "alloc_peak_ns", 0) / 1e9));
	json_object_set_new(heap, "leaked_bytes",
			    json_integer(meta_or(db, "alloc_leaked_bytes", 0)));
	json_object_set_new(heap, "temporary_allocations",
			    json_integer(meta_or(db, "alloc_temporary_allocations", 0)));
	json_object_set_new(heap, "allocations",
			    json_integer(meta_or(db, "alloc_allocations", 0)));
	json_object_set_new(heap, "allocated_bytes",
			    json_integer(meta_or(db, "alloc_allocated_bytes", 0)));
	json_object_set_new(heap, "processes", json_integer(meta_or(db, "alloc_processes", 0)));
	free(mode);

	struct heap_row *v;
	size_t n = rows_load(db, &v);
	double leaked_count = 0;
	for (size_t i = 0; i < n; i++)
		leaked_count += v[i].leaked_count;
	rows_group_python_lines(db, &v, &n);
	json_object_set_new(heap, "leaked_allocations", json_integer(llround(leaked_count)));
	/* The top sites by each measure, so the leak, the peak and the churn all show. */
	double (*keys[])(const struct heap_row *) = { key_peak, key_leak, key_temp, key_bytes };
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (int i = 0; i < HEAP_TOP_PER_KIND; i++) {
			long b = row_max(v, n, keys[k], 1);
			if (b < 0)
				break;
			v[b].picked = 1;
		}
	struct heap_row *top = xcalloc(n ? n : 1, sizeof(*top));
	size_t ntop = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].picked)
			top[ntop++] = v[i];
	qsort(top, ntop, sizeof(*top), by_peak_then_leak);
	json_t *sites = json_array();
	for (size_t i = 0; i < ntop; i++) {
		json_t *s = site_json(db, &top[i], estimated);
		if (s)
			json_array_append_new(sites, s);
	}
	free(top);
	json_object_set_new(heap, "top_sites", sites);
	json_object_set_new(heap, "timeline", timeline_json(db));
	json_object_set_new(mem, "heap", heap);
	add_findings(ctx, heap, v, n, estimated);
	rows_release(v, n);
	return 0;
}

static const char *const memory_heap_needs[] = { "memory", NULL };
static const char *const memory_heap_provides[] = { "memory:heap", NULL };

static const char *const memory_heap_findings[] = {
	"memory.leak",
	"memory.peak_site",
	"memory.churn",
	NULL,
};

const struct analysis_ops analysis_memory_heap = {
	.name = "memory_heap",
	.findings = memory_heap_findings,
	.needs = memory_heap_needs,
	.provides = memory_heap_provides,
	.run = memory_heap_run,
};
