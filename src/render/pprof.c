/* pprof: profile.pb.gz, the samples the flame graph counts as a gzip'd
 * profile.proto (github.com/google/pprof, proto/profile.proto) for `go tool
 * pprof`, Pyroscope and the other tools that read it.
 *
 * - Sample types: samples/count, then cpu/nanoseconds (wall or gil in those
 *   `--mode`s) = samples x the sampling period; the period type and period
 *   say the same. Without a known rate, samples/count alone.
 * - One sample per distinct stack and thread: location ids leaf first, labels
 *   "thread" (its name), "tid" and "pid".
 * - One location per recorded frame (function, file, line), with one line
 *   entry; one function per (function, file, module), its file name the
 *   frame's source file (the .py file, or a native frame's) or else its
 *   module; one mapping per module (binary, shared object or Python file),
 *   has_functions set, as everything arrives symbolized.
 * - string_table[0] is ""; every string is valid UTF-8 (invalid bytes become
 *   U+FFFD). The protobuf encoding is written by hand (varints and
 *   length-delimited fields), then gzip'd. */
#include "render.h"
#include "thread_samples.h"
#include "../util/gzip.h"
#include "../util/hashmap.h"
#include "../util/pb.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"
#include "../version.h"

#include <stdlib.h>
#include <string.h>

/* profile.proto's field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};

struct mapping {
	const char *module; /* the frames' */
	int64_t filename;   /* index into the string table */
	int files, lines;   /* some frame had a file name, a line number */
};

struct pprof_sample {
	size_t node, thread;
	int64_t count;
};

struct pprof {
	const struct thread_samples *ts;
	struct hashmap strings; /* text -> index */
	struct strbuf table;	/* string_table, encoded */
	int64_t nstrings;
	uint64_t *location_of; /* frame index -> location id (0: none yet) */
	uint64_t *function_of; /* func index -> function id */
	uint64_t nlocations, nfunctions;
	struct hashmap mapping_of; /* module -> mapping id */
	struct mapping *mappings;
	size_t nmappings;
	struct strbuf locations, functions; /* encoded, each field in place */
	struct strbuf text, msg, inner;	    /* scratch */
};

/* The index of s in the string table, added when new. */
static int64_t str_id(struct pprof *p, const char *s)
{
	if (!s || !*s)
		return 0;
	strbuf_reset(&p->text);
	utf8_sanitize(s, strlen(s), &p->text);
	int64_t *ix = hashmap_get(&p->strings, p->text.buf, p->text.len);
	if (ix)
		return *ix;
	pb_bytes(&p->table, PROFILE_STRING_TABLE, p->text.buf, p->text.len);
	hashmap_put(&p->strings, p->text.buf, p->text.len, p->nstrings);
	return p->nstrings++;
}

static uint64_t mapping_id(struct pprof *p, const struct stack_frame_rec *f)
{
	if (!f->module || !*f->module)
		return 0;
	int64_t *id = hashmap_get(&p->mapping_of, f->module, strlen(f->module));
	if (!id) {
		p->mappings = xrealloc(p->mappings, (p->nmappings + 1) * sizeof(*p->mappings));
		p->mappings[p->nmappings] = (struct mapping){f->module, str_id(p, f->module), 0, 0};
		id = hashmap_put(&p->mapping_of, f->module, strlen(f->module),
				 (int64_t)++p->nmappings);
	}
	struct mapping *m = &p->mappings[*id - 1];
	m->files |= f->file != NULL;
	m->lines |= f->line > 0;
	return (uint64_t)*id;
}

static uint64_t function_id(struct pprof *p, size_t func)
{
	if (p->function_of[func])
		return p->function_of[func];
	const struct stack_func *fn = &p->ts->set.funcs[func];
	uint64_t id = p->function_of[func] = ++p->nfunctions;
	int64_t name = str_id(p, fn->function);
	strbuf_reset(&p->msg);
	pb_uint(&p->msg, 1, id);
	pb_uint(&p->msg, 2, (uint64_t)name);
	pb_uint(&p->msg, 3, (uint64_t)name);
	pb_uint(&p->msg, 4, (uint64_t)str_id(p, fn->file ? fn->file : fn->module));
	pb_msg(&p->functions, PROFILE_FUNCTION, &p->msg);
	return id;
}

static uint64_t location_id(struct pprof *p, size_t frame)
{
	if (p->location_of[frame])
		return p->location_of[frame];
	const struct stack_frame_rec *f = &p->ts->set.frames[frame];
	uint64_t id = p->location_of[frame] = ++p->nlocations;
	uint64_t fn = function_id(p, f->func), mapping = mapping_id(p, f);
	strbuf_reset(&p->inner);
	pb_uint(&p->inner, 1, fn);
	pb_uint(&p->inner, 2, f->line > 0 ? (uint64_t)f->line : 0);
	strbuf_reset(&p->msg);
	pb_uint(&p->msg, 1, id);
	pb_uint(&p->msg, 2, mapping);
	pb_msg(&p->msg, 4, &p->inner);
	pb_msg(&p->locations, PROFILE_LOCATION, &p->msg);
	return id;
}

static void value_type(struct pprof *p, struct strbuf *out, int field, const char *type,
		       const char *unit)
{
	strbuf_reset(&p->msg);
	pb_uint(&p->msg, 1, (uint64_t)str_id(p, type));
	pb_uint(&p->msg, 2, (uint64_t)str_id(p, unit));
	pb_msg(out, field, &p->msg);
}

static void label(struct strbuf *sb, int64_t key, int64_t str, int64_t num)
{
	struct strbuf l = STRBUF_INIT;
	pb_uint(&l, 1, (uint64_t)key);
	pb_uint(&l, 2, (uint64_t)str);
	pb_uint(&l, 3, (uint64_t)num);
	pb_msg(sb, 3, &l);
	strbuf_release(&l);
}

/* The samples summed per stack and thread, in the order first seen. */
static struct pprof_sample *samples_sum(const struct thread_samples *ts, size_t *n)
{
	struct hashmap index = HASHMAP_INIT;
	struct pprof_sample *v = NULL;
	size_t alloc = 0;
	*n = 0;
	for (size_t t = 0; t < ts->nthreads; t++) {
		for (size_t i = 0; i < ts->threads[t].n; i++) {
			uint64_t key[2] = {ts->threads[t].v[i].node, t};
			int64_t *ix = hashmap_get(&index, key, sizeof(key));
			if (ix) {
				v[*ix].count++;
				continue;
			}
			if (*n == alloc) {
				alloc = alloc ? 2 * alloc : 256;
				v = xrealloc(v, alloc * sizeof(*v));
			}
			v[*n] = (struct pprof_sample){key[0], t, 1};
			hashmap_put(&index, key, sizeof(key), (int64_t)(*n)++);
		}
	}
	hashmap_release(&index);
	return v;
}

static void samples_write(struct pprof *p, struct strbuf *out)
{
	const struct thread_samples *ts = p->ts;
	size_t n, *path = xmalloc(STACK_DEPTH_MAX * sizeof(*path));
	struct pprof_sample *v = samples_sum(ts, &n);
	int64_t k_thread = str_id(p, "thread"), k_tid = str_id(p, "tid"), k_pid = str_id(p, "pid");
	struct strbuf sample = STRBUF_INIT, packed = STRBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		const struct sampled_thread *th = &ts->threads[v[i].thread];
		size_t depth = stack_set_path(&ts->set, v[i].node, path, STACK_DEPTH_MAX);
		strbuf_reset(&sample);
		strbuf_reset(&packed);
		for (size_t d = depth; d-- > 0;) /* the leaf first */
			pb_varint(&packed, location_id(p, path[d]));
		pb_bytes(&sample, 1, packed.buf, packed.len);
		strbuf_reset(&packed);
		pb_varint(&packed, (uint64_t)v[i].count);
		if (ts->period_ns > 0)
			pb_varint(&packed, (uint64_t)(v[i].count * ts->period_ns));
		pb_bytes(&sample, 2, packed.buf, packed.len);
		if (th->name)
			label(&sample, k_thread, str_id(p, th->name), 0);
		label(&sample, k_tid, 0, th->tid);
		label(&sample, k_pid, 0, th->pid);
		pb_msg(out, PROFILE_SAMPLE, &sample);
	}
	strbuf_release(&sample);
	strbuf_release(&packed);
	free(v);
	free(path);
}

/* 1 when module looks like a program: a path, not a shared object (name.so,
 * name.so.6), not a Python file. */
static int is_program(const char *module)
{
	const char *base = strrchr(module, '/'), *so;
	if (*module != '/' || !base)
		return 0;
	size_t n = strlen(base);
	if (n > 3 && !strcmp(base + n - 3, ".py"))
		return 0;
	for (so = strstr(base, ".so"); so; so = strstr(so + 1, ".so"))
		if (!so[3] || so[3] == '.' || so[3] == '_')
			return 0;
	return 1;
}

static void mapping_write(struct pprof *p, struct strbuf *out, size_t i)
{
	strbuf_reset(&p->msg);
	pb_uint(&p->msg, 1, i + 1);
	pb_uint(&p->msg, 5, (uint64_t)p->mappings[i].filename);
	pb_uint(&p->msg, 7, 1);
	pb_uint(&p->msg, 8, (uint64_t)p->mappings[i].files);
	pb_uint(&p->msg, 9, (uint64_t)p->mappings[i].lines);
	pb_msg(out, PROFILE_MAPPING, &p->msg);
}

/* The mappings, the first program among them first: pprof takes the first
 * mapping for the main binary (its "File:" line). */
static void mappings_write(struct pprof *p, struct strbuf *out)
{
	size_t first = 0;
	while (first < p->nmappings && !is_program(p->mappings[first].module))
		first++;
	if (first < p->nmappings)
		mapping_write(p, out, first);
	for (size_t i = 0; i < p->nmappings; i++)
		if (i != first)
			mapping_write(p, out, i);
}

/* The run's length: the recording's, else the samples' span. */
static int64_t duration_ns(const struct thread_samples *ts)
{
	if (ts->wall_ns > 0)
		return ts->wall_ns;
	int64_t first = INT64_MAX, last = 0;
	for (size_t t = 0; t < ts->nthreads; t++) {
		const struct sampled_thread *th = &ts->threads[t];
		if (th->n && th->v[0].t_ns < first)
			first = th->v[0].t_ns;
		if (th->n && th->v[th->n - 1].t_ns > last)
			last = th->v[th->n - 1].t_ns;
	}
	return first <= last ? last - first + ts->period_ns : 0;
}

/* The whole profile, unzipped, in out. */
static void profile_encode(struct pprof *p, struct strbuf *out)
{
	const struct thread_samples *ts = p->ts;
	const char *what = stack_mode_name(ts->mode);
	value_type(p, out, PROFILE_SAMPLE_TYPE, "samples", "count");
	if (ts->period_ns > 0)
		value_type(p, out, PROFILE_SAMPLE_TYPE, what, "nanoseconds");
	samples_write(p, out);
	mappings_write(p, out);
	strbuf_add(out, p->locations.buf, p->locations.len);
	strbuf_add(out, p->functions.buf, p->functions.len);
	pb_uint(out, PROFILE_TIME_NANOS, (uint64_t)ts->start_unix_ns);
	pb_uint(out, PROFILE_DURATION_NANOS, (uint64_t)duration_ns(ts));
	if (ts->period_ns > 0) {
		value_type(p, out, PROFILE_PERIOD_TYPE, what, "nanoseconds");
		pb_uint(out, PROFILE_PERIOD, (uint64_t)ts->period_ns);
		pb_uint(out, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)str_id(p, what));
	}
	struct strbuf comment = STRBUF_INIT;
	strbuf_addf(&comment, "sonde %s: %s samples (--mode %s)", SONDE_VERSION, ts->source, what);
	pb_uint(out, PROFILE_COMMENT, (uint64_t)str_id(p, comment.buf));
	strbuf_release(&comment);
	/* Last, once every string above was added. */
	strbuf_add(out, p->table.buf, p->table.len);
}

static int pprof_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct thread_samples ts;
	if (thread_samples_load(ctx->db, &ts, err) < 0)
		return -1;
	int rc = 1;
	if (!ts.nthreads)
		goto out;
	struct pprof p = {.ts = &ts,
			  .strings = HASHMAP_INIT,
			  .table = STRBUF_INIT,
			  .mapping_of = HASHMAP_INIT,
			  .locations = STRBUF_INIT,
			  .functions = STRBUF_INIT,
			  .text = STRBUF_INIT,
			  .msg = STRBUF_INIT,
			  .inner = STRBUF_INIT};
	pb_bytes(&p.table, PROFILE_STRING_TABLE, "", 0); /* string_table[0] = "" */
	hashmap_put(&p.strings, "", 0, p.nstrings++);
	p.location_of = xcalloc(ts.set.nframes, sizeof(*p.location_of));
	p.function_of = xcalloc(ts.set.nfuncs ? ts.set.nfuncs : 1, sizeof(*p.function_of));
	struct strbuf pb = STRBUF_INIT;
	profile_encode(&p, &pb);
	rc = gzip_write(out, pb.buf, pb.len, err);
	strbuf_release(&pb);
	free(p.location_of);
	free(p.function_of);
	free(p.mappings);
	hashmap_release(&p.strings);
	hashmap_release(&p.mapping_of);
	strbuf_release(&p.table);
	strbuf_release(&p.locations);
	strbuf_release(&p.functions);
	strbuf_release(&p.text);
	strbuf_release(&p.msg);
	strbuf_release(&p.inner);
out:
	thread_samples_release(&ts);
	return rc;
}

const struct renderer render_pprof = {
    .name = "pprof", .file = "profile.pb.gz", .render = pprof_render};

const struct exporter export_pprof = {
	.name = "pprof",
	.description = "gzip'd pprof profile.proto (go tool pprof, Pyroscope): stacks per thread",
	.renderer = &render_pprof,
};
