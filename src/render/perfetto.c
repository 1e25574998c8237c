/* perfetto: trace.perfetto-trace, the run's timeline in Perfetto's native
 * protobuf (protos/perfetto/trace: a Trace is TracePackets, each one field 1
 * of the file), which ui.perfetto.dev and trace_processor load faster and
 * smaller than JSON, and which they do not call "legacy".
 *
 * Made from the events trace.json is made of (trace_events.h), so the two
 * never disagree:
 * - names: a TrackDescriptor per process and per thread (a named track of
 *   its process for tid 0: the phases); a thread with slices and no name
 *   gets one without a name.
 * - slices: TrackEvent SLICE_BEGIN and SLICE_END on their thread's track;
 *   per track sorted by start, the longer first, and nested (a slice that
 *   would outlast the one it starts in ends with it: Perfetto's slices
 *   nest). Names and categories are interned (InternedData, sequence 1).
 * - counters: one counter track per process, counter and argument (the
 *   track "I/O write_MB_s" of process 42), one COUNTER event per value.
 * - flows (a CUDA launch to its GPU work): flow_ids on the
 *   outermost slice of the arrow's track that starts where it does, and
 *   terminating_flow_ids at its end.
 * Slices' arguments (a kernel's grid, an NVTX range's domain) are in
 * trace.json only. Timestamps are nanoseconds since the run's start (the
 * default clock's, as no clock snapshot says otherwise). */
#include "render.h"
#include "trace_events.h"
#include "../util/hashmap.h"
#include "../util/pb.h"
#include "../util/strbuf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Field numbers, protos/perfetto/trace/. */
enum {
	TRACE_PACKET = 1,
	PACKET_TIMESTAMP = 8,
	PACKET_SEQUENCE_ID = 10,
	PACKET_TRACK_EVENT = 11,
	PACKET_INTERNED_DATA = 12,
	PACKET_SEQUENCE_FLAGS = 13,
	PACKET_TRACK_DESCRIPTOR = 60,
	TRACK_UUID = 1,
	TRACK_NAME = 2,
	TRACK_PROCESS = 3,
	TRACK_THREAD = 4,
	TRACK_PARENT_UUID = 5,
	TRACK_COUNTER = 8,
	PROCESS_PID = 1,
	PROCESS_NAME = 6,
	THREAD_PID = 1,
	THREAD_TID = 2,
	THREAD_NAME = 5,
	EVENT_CATEGORY_IIDS = 3,
	EVENT_TYPE = 9,
	EVENT_NAME_IID = 10,
	EVENT_TRACK_UUID = 11,
	EVENT_DOUBLE_VALUE = 44,
	EVENT_FLOW_IDS = 47,
	EVENT_TERMINATING_FLOW_IDS = 48,
	INTERNED_CATEGORIES = 1,
	INTERNED_NAMES = 2,
	INTERNED_IID = 1,
	INTERNED_NAME = 2,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_COUNTER = 4 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
#define SEQUENCE_ID 1

struct pf_slice {
	uint64_t track, name_iid, cat_iid;
	int64_t start_ns, end_ns;
	size_t seq; /* order read: ties keep it */
};

struct pf_flow {
	uint64_t track, id;
	int64_t at_ns;
	int terminating, used;
};

/* Interned strings: iid (from 1) by string, and string by iid. */
struct strtab {
	struct hashmap ids;
	char **v; /* v[iid - 1] */
	size_t n, alloc;
	unsigned char *sent; /* sent[iid - 1]: defined in a packet already */
};

struct pf {
	FILE *out;
	struct strbuf packet, body;
	struct hashmap tracks; /* "p PID", "t PID TID", "c PID NAME ARG" -> uuid */
	struct strtab names, cats;
	uint64_t next_uuid;
	struct strbuf interned; /* the InternedData of the packet being made */
	struct pf_slice *slices;
	size_t nslices, aslices;
	struct pf_flow *flows;
	size_t nflows, aflows;
	int first;
};

static void packet_write(struct pf *p)
{
	struct strbuf framed = STRBUF_INIT;
	if (p->first) {
		pb_uint(&p->packet, PACKET_SEQUENCE_FLAGS, SEQ_CLEARED);
		p->first = 0;
	}
	pb_uint(&p->packet, PACKET_SEQUENCE_ID, SEQUENCE_ID);
	pb_msg(&framed, TRACE_PACKET, &p->packet);
	fwrite(framed.buf, 1, framed.len, p->out);
	strbuf_release(&framed);
	strbuf_reset(&p->packet);
}

/* A track descriptor packet of body (the descriptor's fields). */
static void descriptor_write(struct pf *p, const struct strbuf *body)
{
	pb_msg(&p->packet, PACKET_TRACK_DESCRIPTOR, body);
	packet_write(p);
}

static uint64_t track_find(struct pf *p, const struct strbuf *key)
{
	int64_t *v = hashmap_get(&p->tracks, key->buf, key->len);
	return v ? (uint64_t)*v : 0;
}

static uint64_t track_add(struct pf *p, const struct strbuf *key)
{
	uint64_t uuid = ++p->next_uuid;
	hashmap_put(&p->tracks, key->buf, key->len, (int64_t)uuid);
	return uuid;
}

/* The uuid of process pid's track, described (without a name) when new. */
static uint64_t process_track(struct pf *p, int64_t pid, const char *name)
{
	struct strbuf key = STRBUF_INIT, body = STRBUF_INIT, proc = STRBUF_INIT;
	strbuf_addf(&key, "p %" PRId64, pid);
	uint64_t uuid = track_find(p, &key);
	if (!uuid || name) {
		if (!uuid)
			uuid = track_add(p, &key);
		pb_uint(&body, TRACK_UUID, uuid);
		pb_uint_always(&proc, PROCESS_PID, (uint64_t)pid);
		if (name)
			pb_bytes(&proc, PROCESS_NAME, name, strlen(name));
		pb_msg(&body, TRACK_PROCESS, &proc);
		descriptor_write(p, &body);
	}
	strbuf_release(&key);
	strbuf_release(&body);
	strbuf_release(&proc);
	return uuid;
}

/* The uuid of thread tid's track (tid 0: a track of the process named
 * name), described when new or named now. */
static uint64_t thread_track(struct pf *p, int64_t pid, int64_t tid, const char *name)
{
	struct strbuf key = STRBUF_INIT, body = STRBUF_INIT, th = STRBUF_INIT;
	strbuf_addf(&key, "t %" PRId64 " %" PRId64, pid, tid);
	uint64_t uuid = track_find(p, &key);
	if (!uuid || name) {
		uint64_t parent = process_track(p, pid, NULL);
		if (!uuid)
			uuid = track_add(p, &key);
		pb_uint(&body, TRACK_UUID, uuid);
		if (tid) {
			pb_uint_always(&th, THREAD_PID, (uint64_t)pid);
			pb_uint_always(&th, THREAD_TID, (uint64_t)tid);
			if (name)
				pb_bytes(&th, THREAD_NAME, name, strlen(name));
			pb_msg(&body, TRACK_THREAD, &th);
		} else {
			pb_uint(&body, TRACK_PARENT_UUID, parent);
			if (name)
				pb_bytes(&body, TRACK_NAME, name, strlen(name));
		}
		descriptor_write(p, &body);
	}
	strbuf_release(&key);
	strbuf_release(&body);
	strbuf_release(&th);
	return uuid;
}

/* The uuid of the counter track "name arg" of process pid. */
static uint64_t counter_track(struct pf *p, int64_t pid, const char *name, const char *arg)
{
	struct strbuf key = STRBUF_INIT, body = STRBUF_INIT, label = STRBUF_INIT,
		      empty = STRBUF_INIT;
	strbuf_addf(&key, "c %" PRId64 " %s %s", pid, name, arg);
	uint64_t uuid = track_find(p, &key);
	if (!uuid) {
		uint64_t parent = process_track(p, pid, NULL);
		uuid = track_add(p, &key);
		strbuf_addf(&label, "%s %s", name, arg);
		pb_uint(&body, TRACK_UUID, uuid);
		pb_uint(&body, TRACK_PARENT_UUID, parent);
		pb_bytes(&body, TRACK_NAME, label.buf, label.len);
		pb_msg(&body, TRACK_COUNTER, &empty);
		descriptor_write(p, &body);
	}
	strbuf_release(&key);
	strbuf_release(&body);
	strbuf_release(&label);
	return uuid;
}

/* The iid of s in t, new ones numbered from 1. */
static uint64_t intern(struct strtab *t, const char *s)
{
	size_t n = strlen(s);
	int64_t *v = hashmap_get(&t->ids, s, n);
	if (v)
		return (uint64_t)*v;
	if (t->n == t->alloc) {
		t->alloc = t->alloc ? 2 * t->alloc : 256;
		t->v = xrealloc(t->v, t->alloc * sizeof(*t->v));
		t->sent = xrealloc(t->sent, t->alloc);
	}
	t->v[t->n] = xstrdup(s);
	t->sent[t->n] = 0;
	hashmap_put(&t->ids, s, n, (int64_t)++t->n);
	return t->n;
}

static void strtab_release(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->sent);
	hashmap_release(&t->ids);
}

/* iid's string into the packet's InternedData (field: names or
 * categories), the first time a packet uses it. */
static void interned_add(struct pf *p, struct strtab *t, int field, uint64_t iid)
{
	if (t->sent[iid - 1])
		return;
	t->sent[iid - 1] = 1;
	struct strbuf e = STRBUF_INIT;
	const char *s = t->v[iid - 1];
	pb_uint(&e, INTERNED_IID, iid);
	pb_bytes(&e, INTERNED_NAME, s, strlen(s));
	pb_msg(&p->interned, field, &e);
	strbuf_release(&e);
}

static void slice_add(struct pf *p, uint64_t track, const char *cat, const char *name,
		      int64_t start_ns, int64_t end_ns)
{
	if (p->nslices == p->aslices) {
		p->aslices = p->aslices ? 2 * p->aslices : 1024;
		p->slices = xrealloc(p->slices, p->aslices * sizeof(*p->slices));
	}
	p->slices[p->nslices] = (struct pf_slice){
	    .track = track,
	    .name_iid = intern(&p->names, name),
	    .cat_iid = intern(&p->cats, cat),
	    .start_ns = start_ns > 0 ? start_ns : 0,
	    .end_ns = end_ns > start_ns ? end_ns : start_ns,
	    .seq = p->nslices,
	};
	p->nslices++;
}

static void flow_add(struct pf *p, uint64_t track, int64_t at_ns, uint64_t id, int terminating)
{
	if (p->nflows == p->aflows) {
		p->aflows = p->aflows ? 2 * p->aflows : 256;
		p->flows = xrealloc(p->flows, p->aflows * sizeof(*p->flows));
	}
	p->flows[p->nflows++] = (struct pf_flow){track, id, at_ns, terminating, 0};
}

static void pf_name(void *arg, int thread, int64_t pid, int64_t tid, const char *name)
{
	if (thread)
		thread_track(arg, pid, tid, name);
	else
		process_track(arg, pid, name);
}

static void pf_slice(void *arg, const char *cat, const char *name, int64_t pid, int64_t tid,
		     int64_t start_ns, int64_t end_ns, const char *args_json)
{
	struct pf *p = arg;
	(void)args_json;
	slice_add(p, thread_track(p, pid, tid, NULL), cat, name, start_ns, end_ns);
}

static void pf_counter(void *arg, const char *name, int64_t pid, int64_t ts_ns,
		       const struct trace_arg *args, size_t nargs)
{
	struct pf *p = arg;
	for (size_t i = 0; i < nargs; i++) {
		uint64_t track = counter_track(p, pid, name, args[i].key);
		strbuf_reset(&p->body);
		pb_uint(&p->body, EVENT_TYPE, TYPE_COUNTER);
		pb_uint(&p->body, EVENT_TRACK_UUID, track);
		pb_double(&p->body, EVENT_DOUBLE_VALUE, args[i].value);
		pb_uint_always(&p->packet, PACKET_TIMESTAMP, (uint64_t)(ts_ns > 0 ? ts_ns : 0));
		pb_msg(&p->packet, PACKET_TRACK_EVENT, &p->body);
		packet_write(p);
	}
}

static void pf_flow(void *arg, uint64_t id, int end, int64_t pid, int64_t tid, int64_t ts_ns)
{
	struct pf *p = arg;
	flow_add(p, thread_track(p, pid, tid, NULL), ts_ns, id, end);
}

static int slice_cmp(const void *x, const void *y)
{
	const struct pf_slice *a = x, *b = y;
	if (a->track != b->track)
		return a->track < b->track ? -1 : 1;
	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	if (a->end_ns != b->end_ns)
		return a->end_ns > b->end_ns ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int flow_cmp(const void *x, const void *y)
{
	const struct pf_flow *a = x, *b = y;
	if (a->track != b->track)
		return a->track < b->track ? -1 : 1;
	return a->at_ns < b->at_ns ? -1 : a->at_ns > b->at_ns;
}

/* The arrows of s's track at its start not yet on a slice, onto body. */
static void flows_attach(struct pf *p, const struct pf_slice *s)
{
	size_t lo = 0, hi = p->nflows;
	struct pf_flow key = {.track = s->track, .at_ns = s->start_ns};
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (flow_cmp(&p->flows[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < p->nflows && !flow_cmp(&p->flows[i], &key); i++) {
		if (p->flows[i].used)
			continue;
		p->flows[i].used = 1;
		pb_fixed64(&p->body,
			   p->flows[i].terminating ? EVENT_TERMINATING_FLOW_IDS : EVENT_FLOW_IDS,
			   p->flows[i].id);
	}
}

static void slice_event(struct pf *p, const struct pf_slice *s, int type, int64_t at_ns)
{
	strbuf_reset(&p->body);
	strbuf_reset(&p->interned);
	pb_uint(&p->body, EVENT_TYPE, (uint64_t)type);
	pb_uint(&p->body, EVENT_TRACK_UUID, s->track);
	if (type == TYPE_SLICE_BEGIN) {
		pb_uint(&p->body, EVENT_CATEGORY_IIDS, s->cat_iid);
		pb_uint(&p->body, EVENT_NAME_IID, s->name_iid);
		interned_add(p, &p->cats, INTERNED_CATEGORIES, s->cat_iid);
		interned_add(p, &p->names, INTERNED_NAMES, s->name_iid);
		if (p->nflows)
			flows_attach(p, s);
	}
	pb_uint_always(&p->packet, PACKET_TIMESTAMP, (uint64_t)at_ns);
	pb_msg(&p->packet, PACKET_TRACK_EVENT, &p->body);
	if (p->interned.len)
		pb_msg(&p->packet, PACKET_INTERNED_DATA, &p->interned);
	pb_uint(&p->packet, PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_STATE);
	packet_write(p);
}

/* The slices, track by track, nested: each begins after the ends of those
 * it does not start in. */
static void slices_write(struct pf *p)
{
	qsort(p->slices, p->nslices, sizeof(*p->slices), slice_cmp);
	if (p->nflows)
		qsort(p->flows, p->nflows, sizeof(*p->flows), flow_cmp);
	struct pf_slice **open = NULL;
	size_t nopen = 0, aopen = 0;
	for (size_t i = 0; i <= p->nslices; i++) {
		struct pf_slice *s = i < p->nslices ? &p->slices[i] : NULL;
		while (nopen && (!s || s->track != open[nopen - 1]->track ||
				 open[nopen - 1]->end_ns <= s->start_ns)) {
			struct pf_slice *o = open[--nopen];
			slice_event(p, o, TYPE_SLICE_END, o->end_ns);
		}
		if (!s)
			break;
		if (nopen && s->end_ns > open[nopen - 1]->end_ns)
			s->end_ns = open[nopen - 1]->end_ns;
		slice_event(p, s, TYPE_SLICE_BEGIN, s->start_ns);
		if (nopen == aopen) {
			aopen = aopen ? 2 * aopen : 64;
			open = xrealloc(open, aopen * sizeof(*open));
		}
		open[nopen++] = s;
	}
	free(open);
}

static int perfetto_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct pf p = {.out = out,
		       .packet = STRBUF_INIT,
		       .body = STRBUF_INIT,
		       .interned = STRBUF_INIT,
		       .tracks = HASHMAP_INIT,
		       .names = {.ids = HASHMAP_INIT},
		       .cats = {.ids = HASHMAP_INIT},
		       .first = 1};
	const struct trace_sink sink = {.arg = &p,
					.name = pf_name,
					.slice = pf_slice,
					.counter = pf_counter,
					.flow = pf_flow};
	struct trace_counts n;
	int rc = -1;
	if (trace_events_each(ctx, &sink, &n, err) < 0)
		goto out;
	slices_write(&p);
	rc = ferror(out) ? -1 : 0;
	if (rc)
		strbuf_addstr(err, "the trace could not be written");
out:
	free(p.slices);
	free(p.flows);
	hashmap_release(&p.tracks);
	strtab_release(&p.names);
	strtab_release(&p.cats);
	strbuf_release(&p.packet);
	strbuf_release(&p.body);
	strbuf_release(&p.interned);
	return rc;
}

const struct renderer render_perfetto = {
    .name = "perfetto", .file = "trace.perfetto-trace", .render = perfetto_render};

const struct exporter export_perfetto = {
	.name = "perfetto",
	.description = "the same timeline in Perfetto's native protobuf (ui.perfetto.dev, "
		       "trace_processor): smaller and faster to open than the JSON",
	.renderer = &render_perfetto,
	.needs_report = 1,
};
