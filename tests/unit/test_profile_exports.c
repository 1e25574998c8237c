/* pprof and speedscope exporters (src/render/pprof.c, speedscope.c): what
 * they write, read back here: profile.pb.gz unzips to a profile.proto whose
 * string table starts with "" and holds only valid UTF-8, with one sample per
 * stack and thread, leaf first, valued in samples and nanoseconds;
 * speedscope.json has one sampled profile per thread, runs of one stack
 * merged, weights in nanoseconds. */
#include "check.h"
#include "render/render.h"
#include "stacks_fixture.h"
#include "util/utf8.h"

#include <zlib.h>

extern const struct renderer render_pprof;
extern const struct renderer render_speedscope;

/* Runs one renderer into memory: its code, *out the bytes (free them). */
static int render_mem(const struct renderer *r, struct fixture *fx, char **out, size_t *len)
{
	struct strbuf err = STRBUF_INIT;
	FILE *f = open_memstream(out, len);
	struct render_ctx ctx = {.db = fx->db, .dir = fx->dir};
	int rc = r->render(&ctx, f, &err);
	fclose(f);
	strbuf_release(&err);
	return rc;
}

/* A recording of 1 s sampled at 100 Hz: a sample stands for 10 ms. */
static void open_100hz(struct fixture *fx)
{
	fixture_open(fx, 1000000000);
	record_meta_int(fx->rec, "cpu_rate_hz", 100);
}

/* Records one sample of the stack of names (outermost first) at t_ns on tid
 * of process 1. */
static void sample_at(struct fixture *fx, int64_t t_ns, pid_t tid, const char *const *names,
		      size_t n)
{
	struct stack_writer *sw = recorder_stacks(fx->rec);
	int64_t ids[8];
	for (size_t i = 0; i < n && i < 8; i++) {
		struct frame_info fi = {.function = names[i],
					.file = "work.c",
					.line = (int)i + 10,
					.module = "/opt/app",
					.kind = "native"};
		ids[i] = stack_frame(sw, &fi);
	}
	struct sample_info si = {.t_ns = t_ns,
				 .pid = 1,
				 .tid = tid,
				 .node = stack_intern(sw, ids, n < 8 ? n : 8),
				 .source = "cpu",
				 .weight = 1,
				 .on_cpu = 1,
				 .gil = -1};
	stack_sample(sw, &si);
}

/* A protobuf field of a message, read from *p (< end): 1, or 0 at the end
 * or on a malformed field. Varints in *v; length-delimited in *data, *len. */
struct pb_field {
	int num, wire;
	uint64_t v;
	const unsigned char *data;
	size_t len;
};

static int pb_varint_read(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 1;
	}
	return 0;
}

static int pb_next(const unsigned char **p, const unsigned char *end, struct pb_field *f)
{
	uint64_t key;
	if (*p >= end || !pb_varint_read(p, end, &key))
		return 0;
	f->num = (int)(key >> 3);
	f->wire = (int)(key & 7);
	if (f->wire == 0)
		return pb_varint_read(p, end, &f->v);
	if (f->wire != 2 || !pb_varint_read(p, end, &f->v) || f->v > (uint64_t)(end - *p))
		return 0;
	f->data = *p;
	f->len = (size_t)f->v;
	*p += f->len;
	return 1;
}

/* The nth field num of the message data[0..len), or 0. */
static int pb_find(const unsigned char *data, size_t len, int num, int nth, struct pb_field *out)
{
	const unsigned char *p = data, *end = data + len;
	struct pb_field f;
	while (pb_next(&p, end, &f))
		if (f.num == num && nth-- == 0) {
			*out = f;
			return 1;
		}
	return 0;
}

/* gunzip of in[0..n) into a malloc'd buffer, *len its size; NULL on error. */
static unsigned char *gunzip(const char *in, size_t n, size_t *len)
{
	z_stream z = {0};
	size_t cap = 1 << 16;
	unsigned char *out = malloc(cap);
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return NULL;
	z.next_in = (unsigned char *)in;
	z.avail_in = (unsigned)n;
	int rc;
	do {
		if (z.total_out == cap)
			out = realloc(out, cap *= 2);
		z.next_out = out + z.total_out;
		z.avail_out = (unsigned)(cap - z.total_out);
		rc = inflate(&z, Z_NO_FLUSH);
	} while (rc == Z_OK);
	*len = z.total_out;
	inflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

/* The string table entry i of the profile, in a static buffer ("" when absent). */
static const char *pb_string(const unsigned char *prof, size_t len, uint64_t i)
{
	static char buf[256];
	struct pb_field f;
	buf[0] = '\0';
	if (pb_find(prof, len, 6, (int)i, &f))
		snprintf(buf, sizeof(buf), "%.*s", (int)f.len, (const char *)f.data);
	return buf;
}

/* The name of the function of location id loc (each location has one line). */
static const char *location_name(const unsigned char *prof, size_t len, uint64_t loc)
{
	struct pb_field l, line, fid, fn, id, name;
	for (int i = 0; pb_find(prof, len, 4, i, &l); i++) {
		if (!pb_find(l.data, l.len, 1, 0, &id) || id.v != loc ||
		    !pb_find(l.data, l.len, 4, 0, &line) ||
		    !pb_find(line.data, line.len, 1, 0, &fid))
			continue;
		for (int k = 0; pb_find(prof, len, 5, k, &fn); k++)
			if (pb_find(fn.data, fn.len, 1, 0, &id) && id.v == fid.v &&
			    pb_find(fn.data, fn.len, 2, 0, &name))
				return pb_string(prof, len, name.v);
	}
	return "?";
}

TEST(pprof_profile_proto,
     "profile.pb.gz unzips to a profile.proto: string_table[0] is \"\", names valid UTF-8, one "
     "sample per stack and thread, leaf first, valued in samples and nanoseconds")
{
	struct fixture fx;
	open_100hz(&fx);
	const char *const work[] = {"main", "work"}, *const bad[] = {"main", "bad\xff"};
	for (int k = 0; k < 3; k++)
		sample_at(&fx, k, 1, work, 2);
	sample_at(&fx, 5, 2, work, 2);
	sample_at(&fx, 6, 2, bad, 2);
	fixture_reopen(&fx);
	char *raw = NULL;
	size_t n = 0, len = 0;
	CHECK(render_mem(&render_pprof, &fx, &raw, &n) == 0);
	unsigned char *prof = gunzip(raw, n, &len);
	CHECK(prof != NULL);
	struct pb_field f, v;
	/* string_table[0] is "", and every string is valid UTF-8. */
	CHECK(prof && pb_find(prof, len, 6, 0, &f) && f.len == 0);
	int strings = 0, sanitized = 0;
	for (int i = 0; prof && pb_find(prof, len, 6, i, &f); i++, strings++) {
		CHECK(utf8_valid((const char *)f.data, f.len) || !f.len);
		sanitized += f.len == 6 && !memcmp(f.data, "bad\xef\xbf\xbd", 6);
	}
	CHECK(strings > 5 && sanitized == 1);
	/* Three samples: work on tid 1 (3), work and bad on tid 2 (1 each). */
	int64_t total = 0, ns = 0, samples = 0;
	for (int i = 0; prof && pb_find(prof, len, 2, i, &f); i++, samples++) {
		struct pb_field locs;
		CHECK(pb_find(f.data, f.len, 1, 0, &locs) && locs.wire == 2);
		const unsigned char *p = locs.data;
		uint64_t leaf = 0, root = 0, count = 0, nanos = 0;
		CHECK(pb_varint_read(&p, locs.data + locs.len, &leaf));
		CHECK(pb_varint_read(&p, locs.data + locs.len, &root));
		CHECK(p == locs.data + locs.len);
		CHECK(!strcmp(location_name(prof, len, root), "main"));
		const char *name = location_name(prof, len, leaf);
		CHECK(!strcmp(name, "work") || !strcmp(name, "bad\xef\xbf\xbd"));
		CHECK(pb_find(f.data, f.len, 2, 0, &v));
		p = v.data;
		CHECK(pb_varint_read(&p, v.data + v.len, &count));
		CHECK(pb_varint_read(&p, v.data + v.len, &nanos));
		CHECK(nanos == count * 10000000);
		total += (int64_t)count;
		ns += (int64_t)nanos;
	}
	CHECK(samples == 3 && total == 5 && ns == 50000000);
	/* period 10 ms of cpu/nanoseconds. */
	CHECK(prof && pb_find(prof, len, 12, 0, &f) && f.v == 10000000);
	CHECK(prof && pb_find(prof, len, 11, 0, &f) && pb_find(f.data, f.len, 1, 0, &v) &&
	      !strcmp(pb_string(prof, len, v.v), "cpu"));
	free(prof);
	free(raw);
	fixture_close(&fx);
}

TEST(speedscope_per_thread,
     "speedscope.json: one sampled profile per thread, outermost first, consecutive samples "
     "of one stack one entry, weights in nanoseconds")
{
	struct fixture fx;
	open_100hz(&fx);
	const char *const a[] = {"main", "a"}, *const b[] = {"main", "b"};
	sample_at(&fx, 1, 1, a, 2);
	sample_at(&fx, 2, 1, a, 2);
	sample_at(&fx, 3, 1, b, 2);
	sample_at(&fx, 4, 1, a, 2);
	sample_at(&fx, 7, 2, b, 2);
	stack_thread_name(recorder_stacks(fx.rec), 1, 2, "worker");
	fixture_reopen(&fx);
	char *raw = NULL;
	size_t n = 0;
	CHECK(render_mem(&render_speedscope, &fx, &raw, &n) == 0);
	json_error_t jerr;
	json_t *doc = json_loadb(raw, n, 0, &jerr);
	CHECK(doc != NULL);
	CHECK(!strcmp(json_string_value(json_object_get(doc, "$schema")),
		      "https://www.speedscope.app/file-format-schema.json"));
	json_t *frames = json_object_get(json_object_get(doc, "shared"), "frames");
	json_t *profiles = json_object_get(doc, "profiles");
	CHECK(json_array_size(frames) == 3 && json_array_size(profiles) == 2);
	CHECK(json_integer_value(json_object_get(doc, "activeProfileIndex")) == 0);
	json_t *p0 = json_array_get(profiles, 0), *p1 = json_array_get(profiles, 1);
	CHECK(!strcmp(json_string_value(json_object_get(p0, "type")), "sampled"));
	CHECK(!strcmp(json_string_value(json_object_get(p0, "unit")), "nanoseconds"));
	CHECK(!strcmp(json_string_value(json_object_get(p1, "name")), "worker (tid 2, pid 1)"));
	/* Thread 1: a a b a -> [a x2, b, a]; each entry main first. */
	json_t *samples = json_object_get(p0, "samples"), *weights = json_object_get(p0, "weights");
	CHECK(json_array_size(samples) == 3 && json_array_size(weights) == 3);
	const char *leaf[3] = {"a", "b", "a"};
	const int64_t w[3] = {20000000, 10000000, 10000000};
	for (size_t i = 0; i < 3 && json_array_size(samples) == 3; i++) {
		json_t *s = json_array_get(samples, i);
		json_t *outer =
		    json_array_get(frames, (size_t)json_integer_value(json_array_get(s, 0)));
		json_t *inner =
		    json_array_get(frames, (size_t)json_integer_value(json_array_get(s, 1)));
		CHECK(json_array_size(s) == 2);
		CHECK(!strcmp(json_string_value(json_object_get(outer, "name")), "main"));
		CHECK(!strcmp(json_string_value(json_object_get(inner, "name")), leaf[i]));
		CHECK(!strcmp(json_string_value(json_object_get(inner, "file")), "work.c"));
		CHECK(json_integer_value(json_object_get(inner, "line")) == 11);
		CHECK(json_integer_value(json_array_get(weights, i)) == w[i]);
	}
	CHECK(json_integer_value(json_object_get(p0, "startValue")) == 1);
	CHECK(json_integer_value(json_object_get(p0, "endValue")) == 40000001);
	json_decref(doc);
	free(raw);
	fixture_close(&fx);
}

TEST(nothing_to_export, "without on-CPU samples pprof and speedscope write nothing")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 4, "offcpu", 5000, "main", "sleep");
	fixture_reopen(&fx);
	char *raw = NULL;
	size_t n = 0;
	CHECK(render_mem(&render_pprof, &fx, &raw, &n) == 1);
	free(raw);
	raw = NULL;
	CHECK(render_mem(&render_speedscope, &fx, &raw, &n) == 1);
	free(raw);
	fixture_close(&fx);
}

CHECK_MAIN()
