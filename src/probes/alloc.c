/* alloc probe: heap allocations per call site, from the agent that `sonde run
 * --memory` preloads into the command (src/agents/alloc).
 *
 * start() makes a private directory, points the agent at it and preloads the
 * agent (both listed in the changelog); poll() reads what each process image
 * appended, orders the events by time and feeds them to alloc_heap; stop()
 * symbolizes the call sites and writes them (alloc_write.c):
 *   alloc_sites(node, pid, allocations, allocated_bytes, peak_bytes,
 *               leaked_bytes, leaked_allocations, temporary_allocations,
 *               temporary_bytes, peak_bytes_sd, leaked_bytes_sd,
 *               temporary_allocations_sd, mmap_bytes)
 *       node: the call stack in stack_nodes; *_sd: standard deviations of the
 *       sampled estimates (0 in full mode); mmap_bytes: what was mapped
 *   alloc_timeline(t_ns, allocations, allocated_bytes, live_bytes)  per 100 ms
 *   alloc_site_timeline(t_ns, node, allocations, allocated_bytes, freed_bytes)
 *       per site and bucket of meta alloc_site_bucket_ns (at most 20 ms), for
 *       the busiest sites of each bucket (alloc_heap.h)
 *   alloc_site_python(node, method)  how a site's Python frames were found
 *   samples with source alloc_peak (weight: bytes live at the heap peak),
 *   alloc_leak (bytes live at exit), alloc_temp (temporary allocations)
 *   meta alloc_*: mode, interval, peak, totals.
 * In sampled mode every figure is an estimate (see alloc_heap.h). */
#define LOG_DOMAIN "alloc"
#include "probe.h"
#include "alloc_probe.h"
#include "agent_dir.h"
#include "alloc_heap.h"
#include "alloc_decode.h"
#include "alloc_python.h"
#include "alloc_pystack.h"
#include "../agents/alloc/alloc_wire.h"
#include "../record/recorder.h"
#include "../record/stacks.h"
#include "../symbols/fpcheck.h"
#include "../util/clock.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/parse.h"
#include "../util/strbuf.h"
#include "../util/tsc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ALLOC_LIB_NAME "libsonde_alloc.so"
/* Events are applied once this much older than now: threads flush their
 * buffers at different times, and a free must not overtake its allocation. */
#define ALLOC_REORDER_NS (300 * NS_PER_MS)
#define ALLOC_POLL_NS (50 * NS_PER_MS)
/* Read at most this much from one stream per poll: the loop stays responsive. */
#define ALLOC_READ_MAX (16u << 20)
/* Parsed bytes are released from the stream files in steps of this. */
#define ALLOC_PUNCH_BYTES (1u << 20)
/* The per-site timeline's bucket: the RSS readings' interval, at most this. */
#define ALLOC_SITE_BUCKET_MAX_NS (20 * NS_PER_MS)

static const char alloc_schema[] =
	"CREATE TABLE IF NOT EXISTS alloc_sites(node INTEGER PRIMARY KEY, pid INTEGER,"
	" allocations REAL, allocated_bytes REAL, peak_bytes REAL, leaked_bytes REAL,"
	" leaked_allocations REAL, temporary_allocations REAL, temporary_bytes REAL,"
	" peak_bytes_sd REAL, leaked_bytes_sd REAL, temporary_allocations_sd REAL,"
	" mmap_bytes REAL);"
	"CREATE TABLE IF NOT EXISTS alloc_timeline(t_ns INTEGER, allocations REAL,"
	" allocated_bytes REAL, live_bytes REAL);"
	"CREATE TABLE IF NOT EXISTS alloc_site_timeline(t_ns INTEGER, node INTEGER,"
	" allocations REAL, allocated_bytes REAL, freed_bytes REAL);"
	/* By heap site until the sites are symbolized into nodes at the end. */
	"CREATE TEMP TABLE IF NOT EXISTS alloc_site_timeline_raw(t_ns INTEGER, site INTEGER,"
	" allocations REAL, allocated_bytes REAL, freed_bytes REAL);"
	"CREATE TEMP TABLE IF NOT EXISTS alloc_site_node(site INTEGER PRIMARY KEY, node INTEGER);"
	"CREATE TABLE IF NOT EXISTS alloc_site_python(node INTEGER PRIMARY KEY, method TEXT);";

enum { EV_ALLOC, EV_FREE, EV_EXIT, EV_EXEC, EV_UNMAP };

struct alloc_event {
	int64_t t_ns; /* relative to the run's start */
	uint64_t order;
	uint64_t ptr, size;
	uint32_t space, site, tid;
	uint8_t type;
	uint8_t mapped; /* EV_ALLOC: an anonymous mapping */
	uint8_t py_guess; /* no in-process Python stack: time correlation may give one */
};

struct alloc_stream {
	pid_t pid;
	int fd;
	int bad; /* stopped reading: malformed */
	int has_space;
	uint32_t space;
	uint32_t clock; /* enum alloc_clock of the current image */
	struct hashmap stacks; /* (tid, stack id) of the current image -> site */
	uint32_t empty_site; /* for events naming a stack never received */
	int has_empty_site;
	uint32_t last_tid, last_id, last_site; /* the last lookup in stacks (last_id 0: none) */
	struct strbuf pending; /* bytes read and not parsed yet */
	uint64_t read_bytes, punched_bytes;
	/* Stream positions: of the record being parsed, and up to where the
	 * PYSTACK records were resolved ahead of the parsing (stream_ahead). */
	uint64_t parse_pos, ahead_pos;
};

/* ---- where the agent is ---- */

static int alloc_wanted(const struct probe_config *cfg)
{
	return cfg->memory_mode != PROBE_MEMORY_OFF;
}

static int alloc_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT;
	int rc = 0;
	if (!ctx->env) {
		strbuf_addstr(why, "allocation tracking needs the command launched by sonde "
				   "(its agent is preloaded with LD_PRELOAD)");
		rc = -1;
	} else if (agent_find("SONDE_ALLOC_LIB", ALLOC_LIB_NAME, &path)) {
		strbuf_addf(why, "the allocation agent %s is missing: build it with 'make' "
				 "(or set SONDE_ALLOC_LIB to its path)",
			    path.buf);
		rc = -1;
	} else if (strpbrk(path.buf, " :")) {
		/* The loader splits LD_PRELOAD at spaces and colons. */
		strbuf_addf(why, "the allocation agent's path '%s' has a space or a colon, which "
				 "LD_PRELOAD cannot carry: copy it elsewhere and set SONDE_ALLOC_LIB",
			    path.buf);
		rc = -1;
	}
	strbuf_release(&path);
	return rc;
}

/* When the command's program keeps frame pointers, the agent walks them in
 * its frames instead of unwinding with DWARF (stacks.c: about 10x faster). */
static void fp_exe_set(struct probe_ctx *ctx)
{
	char prog[4096];
	char *const *argv = ctx->cfg->argv;
	if (!argv || !argv[0] || fpcheck_resolve_program(argv[0], prog, sizeof(prog)) ||
	    fpcheck_elf(prog) <= 0)
		return;
	char *real = realpath(prog, NULL);
	if (!real)
		return;
	probe_env_set(ctx, ALLOC_ENV_FP_EXE, real);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s=%s: the program keeps frame pointers; the agent walks them there",
		    ALLOC_ENV_FP_EXE, real);
	record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	strbuf_release(&sb);
	free(real);
}

static void site_bucket_write(void *arg, int64_t t_ns, const struct heap_site_delta *v, size_t n)
{
	struct alloc_state *st = arg;
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(st->site_tl_ins, 1, t_ns);
		sqlite3_bind_int64(st->site_tl_ins, 2, v[i].site);
		sqlite3_bind_double(st->site_tl_ins, 3, v[i].allocations);
		sqlite3_bind_double(st->site_tl_ins, 4, v[i].allocated_bytes);
		sqlite3_bind_double(st->site_tl_ins, 5, v[i].freed_bytes);
		recorder_step(st->rec, st->site_tl_ins);
	}
}

/* Every knot is read before the files: what they hold was written before it. */
static void tsc_knot_add(struct alloc_state *st)
{
	uint64_t tsc;
	int64_t ns;
	if (!tsc_pair(&tsc, &ns))
		tsc_map_add(&st->tsc, tsc, ns);
}

/* The agent stamps with the time-stamp counter where it is a clock (a few ns
 * against 20-30 for clock_gettime) unless the environment already says
 * SONDE_ALLOC_CLOCK=monotonic. */
static void clock_set(struct alloc_state *st, struct probe_ctx *ctx)
{
	const char *want = probe_env_get(ctx, ALLOC_ENV_CLOCK);
	int tsc = tsc_usable() && !(want && !strcmp(want, "monotonic"));
	if (tsc)
		tsc_knot_add(st); /* before the target starts: every tick is after it */
	probe_env_set(ctx, ALLOC_ENV_CLOCK, tsc ? "tsc" : "monotonic");
	record_meta(ctx->rec, "alloc_clock", tsc ? "tsc" : "monotonic");
	if (tsc)
		record_changelog(ctx->rec, "environment", "set",
				 ALLOC_ENV_CLOCK "=tsc: the agent stamps allocations with the "
				 "time-stamp counter, which sonde turns into CLOCK_MONOTONIC",
				 NULL);
}

static int alloc_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct alloc_state *st = xcalloc(1, sizeof(*st));
	p->state = st;
	heap_init(&st->heap);
	/* As the python probe's period (py_start) and pystitch: 1.5 periods. */
	int hz = ctx->cfg->rate_hz > 0 ? ctx->cfg->rate_hz : 99;
	alloc_pyticks_init(&st->py, NS_PER_S / hz + NS_PER_S / hz / 2);
	alloc_pystacks_init(&st->pys);
	const char *late = getenv("SONDE_TEST_ALLOC_READ_AT_STOP");
	st->read_at_stop = late && !strcmp(late, "1");
	st->tsc = (struct tsc_map)TSC_MAP_INIT;
	st->mode = ctx->cfg->memory_mode == PROBE_MEMORY_FULL ? PROBE_MEMORY_FULL
							      : PROBE_MEMORY_SAMPLED;
	st->interval_bytes = st->mode == PROBE_MEMORY_FULL ? 0
			     : ctx->cfg->memory_interval_bytes > 0 ? ctx->cfg->memory_interval_bytes
								   : PROBE_MEMORY_INTERVAL_DEFAULT;
	struct strbuf lib = STRBUF_INIT, sb = STRBUF_INIT;
	int rc = -1;
	if (agent_find("SONDE_ALLOC_LIB", ALLOC_LIB_NAME, &lib)) {
		strbuf_addf(why, "the allocation agent %s is missing", lib.buf);
		goto out;
	}
	if (recorder_schema(ctx->rec, alloc_schema)) {
		strbuf_addstr(why, "cannot create the alloc tables");
		goto out;
	}
	if (!(st->dir = agent_dir_acquire(why)))
		goto out;

	/* Copied before probe_env_set() replaces what it points to. */
	char *old = probe_env_get(ctx, "LD_PRELOAD") ? xstrdup(probe_env_get(ctx, "LD_PRELOAD"))
						     : NULL;
	strbuf_addstr(&sb, lib.buf);
	if (old && *old)
		strbuf_addf(&sb, ":%s", old);
	probe_env_set(ctx, "LD_PRELOAD", sb.buf);
	probe_env_set(ctx, ALLOC_ENV_DIR, st->dir);
	strbuf_reset(&sb);
	strbuf_addf(&sb, "%lld", (long long)st->interval_bytes);
	probe_env_set(ctx, ALLOC_ENV_INTERVAL, sb.buf);
	fp_exe_set(ctx);
	clock_set(st, ctx);
	strbuf_reset(&sb);
	strbuf_addf(&sb, "LD_PRELOAD=%s%s: the allocation tracker agent (%s mode), loaded into the "
			 "command and every process it starts; in a CPython 3.8-3.13 it also "
			 "reads the allocating thread's Python stack",
		    lib.buf, old && *old ? ":$LD_PRELOAD" : "",
		    st->mode == PROBE_MEMORY_FULL ? "full" : "sampled");
	free(old);
	record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	strbuf_reset(&sb);
	strbuf_addf(&sb, "%s=%s and %s=%lld: where the agent writes its records and how often "
			 "it samples (0: every allocation); the directory is removed after the run",
		    ALLOC_ENV_DIR, st->dir, ALLOC_ENV_INTERVAL, (long long)st->interval_bytes);
	record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	/* CPython's objects: the agent wraps its allocators in each Python image
	 * (alloc_wire.h, ALLOC_HDR_PYMEM), unless the user chose an allocator. */
	const char *pym = probe_env_get(ctx, "PYTHONMALLOC");
	if (pym && *pym) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "PYTHONMALLOC is already %s: CPython installs that allocator "
				 "itself, and the agent leaves it alone (with malloc every object "
				 "is seen; with pymalloc or debug, objects appear as their arenas)",
			    pym);
		record_note(ctx->rec, 0, "alloc", "info", sb.buf);
	}
	record_meta(ctx->rec, "alloc_mode", st->mode == PROBE_MEMORY_FULL ? "full" : "sampled");
	record_meta_int(ctx->rec, "alloc_interval_bytes", st->interval_bytes);
	int64_t bucket = ctx->cfg->interval_ns > 0 && ctx->cfg->interval_ns < ALLOC_SITE_BUCKET_MAX_NS
				 ? ctx->cfg->interval_ns
				 : ALLOC_SITE_BUCKET_MAX_NS;
	st->rec = ctx->rec;
	if (sqlite3_prepare_v2(recorder_db(ctx->rec),
			       "INSERT INTO alloc_site_timeline_raw VALUES(?,?,?,?,?)", -1,
			       &st->site_tl_ins, NULL) == SQLITE_OK) {
		heap_site_timeline(&st->heap, bucket, site_bucket_write, st);
		record_meta_int(ctx->rec, "alloc_site_bucket_ns", bucket);
	}
	p->next_poll_ns = ctx->start_ns + ALLOC_POLL_NS;
	rc = 0;
out:
	strbuf_release(&lib);
	strbuf_release(&sb);
	return rc;
}

/* ---- reading the streams ---- */

static void push_event(struct alloc_state *st, const struct alloc_event *ev)
{
	if (st->nevents == st->aevents) {
		st->aevents = st->aevents ? st->aevents * 2 : 4096;
		st->events = xrealloc(st->events, st->aevents * sizeof(*st->events));
	}
	st->events[st->nevents] = *ev;
	st->events[st->nevents].order = st->order++;
	st->nevents++;
}

static int64_t rel_t(const struct probe_ctx *ctx, uint64_t t_ns)
{
	int64_t t = (int64_t)t_ns - ctx->start_ns;
	return t > 0 ? t : 0;
}

/* A time of the stream's current image, relative to the run's start. */
static int64_t stream_t(struct alloc_state *st, struct probe_ctx *ctx, const struct alloc_stream *s,
			uint64_t t)
{
	if (s->clock == ALLOC_CLOCK_TSC)
		return rel_t(ctx, (uint64_t)tsc_map_ns(&st->tsc, t));
	return rel_t(ctx, t);
}

struct stack_key {
	uint32_t tid, id;
};

/* The site of a stack the thread named by id; an id never received (its
 * record was lost with a dropped chunk) counts under an empty stack. */
static uint32_t stream_site(struct alloc_state *st, struct alloc_stream *s, uint32_t tid,
			    uint32_t id)
{
	struct stack_key k = { tid, id };
	if (id && id == s->last_id && tid == s->last_tid)
		return s->last_site;
	int64_t *site = hashmap_get(&s->stacks, &k, sizeof(k));
	if (site) {
		s->last_tid = tid;
		s->last_id = id;
		s->last_site = (uint32_t)*site;
		return s->last_site;
	}
	st->lost_stacks++;
	if (!s->has_empty_site) {
		uint64_t none = 0;
		s->empty_site = heap_site_intern(&st->heap, s->space, &none, 0);
		s->has_empty_site = 1;
	}
	return s->empty_site;
}

static int parse_events(struct alloc_state *st, struct probe_ctx *ctx, struct alloc_stream *s,
			const unsigned char *rec, size_t len, uint32_t tid)
{
	struct alloc_events it;
	struct alloc_ev e;
	int rc;
	alloc_events_begin(&it, rec, len);
	while ((rc = alloc_events_next(&it, &e)) > 0) {
		int64_t t = stream_t(st, ctx, s, e.t);
		st->records++;
		struct alloc_event ev = { .t_ns = t, .tid = tid, .space = s->space, .ptr = e.ptr };
		if (e.tag != ALLOC_EV_FREE) {
			ev.type = EV_ALLOC;
			ev.site = stream_site(st, s, tid, e.stack);
			ev.size = e.size & ~ALLOC_SIZE_MMAP;
			ev.mapped = !!(e.size & ALLOC_SIZE_MMAP);
			/* The thread's Python stack read in-process; else (none could be
			 * read) maybe the python probe's samples, in events_apply. */
			int64_t py = e.tag == ALLOC_EV_ALLOC_PY
					     ? alloc_pystacks_take(&st->pys, recorder_stacks(ctx->rec),
								   s->space, tid, e.pystack)
					     : 0;
			ev.py_guess = py < 0 || (!py && !alloc_pystacks_active(&st->pys, s->space));
			st->py_inprocess += py > 0;
			if (py > 0)
				ev.site = heap_site_with_py(&st->heap, ev.site, py);
		} else {
			ev.type = EV_FREE;
		}
		push_event(st, &ev);
	}
	return rc;
}

/* One record; returns 0, or -1 when the stream is malformed. */
static int parse_record(struct alloc_state *st, struct probe_ctx *ctx, struct alloc_stream *s,
			const unsigned char *rec, size_t len)
{
	struct alloc_rec_head h;
	memcpy(&h, rec, sizeof(h));
	st->records += h.type != ALLOC_REC_EVENTS; /* events count one by one */
	if (h.type == ALLOC_REC_HEADER) {
		struct alloc_rec_header hd;
		if (len < sizeof(hd))
			return -1;
		memcpy(&hd, rec, sizeof(hd));
		if (hd.magic != ALLOC_WIRE_MAGIC || hd.version != ALLOC_WIRE_VERSION ||
		    hd.clock > ALLOC_CLOCK_TSC)
			return -1;
		s->clock = hd.clock; /* the header's own time is in the new image's clock */
		if (s->has_space) {
			struct alloc_event ev = { .t_ns = stream_t(st, ctx, s, hd.h.t), .tid = h.tid,
						  .type = EV_EXEC, .space = s->space };
			push_event(st, &ev);
		}
		s->space = heap_space_new(&st->heap, s->pid, (int64_t)hd.interval_bytes);
		st->pymem_images += (hd.flags & ALLOC_HDR_PYMEM) != 0;
		s->has_space = 1;
		s->has_empty_site = 0;
		s->last_id = 0;
		hashmap_release(&s->stacks);
		return 0;
	}
	if (!s->has_space)
		return 0; /* the rest of an image whose header was not seen */
	switch (h.type) {
	case ALLOC_REC_MODULE: {
		struct alloc_rec_module m;
		if (len <= sizeof(m))
			return -1;
		memcpy(&m, rec, sizeof(m));
		const char *path = (const char *)rec + sizeof(m);
		if (memchr(path, '\0', len - sizeof(m)) == NULL)
			return -1;
		heap_space_module(&st->heap, s->space, m.bias, m.start, m.end, path);
		return 0;
	}
	case ALLOC_REC_STACK: {
		uint64_t ips[ALLOC_WIRE_MAX_FRAMES];
		struct stack_key k = { h.tid, 0 };
		uint32_t n;
		if (alloc_stack_parse(rec, len, &k.id, ips, &n))
			return -1;
		hashmap_put(&s->stacks, &k, sizeof(k), heap_site_intern(&st->heap, s->space, ips, n));
		if (k.tid == s->last_tid && k.id == s->last_id)
			s->last_id = 0; /* replaced */
		return 0;
	}
	case ALLOC_REC_EVENTS:
		return parse_events(st, ctx, s, rec, len, h.tid);
	case ALLOC_REC_UNMAP: {
		struct alloc_rec_unmap u;
		if (len < sizeof(u))
			return -1;
		memcpy(&u, rec, sizeof(u));
		int64_t t = stream_t(st, ctx, s, h.t);
		struct alloc_event ev = { .t_ns = t, .tid = h.tid, .type = EV_UNMAP,
					  .space = s->space, .ptr = u.addr, .size = u.len };
		push_event(st, &ev);
		return 0;
	}
	case ALLOC_REC_PYMEM_LOST:
		st->pymem_lost++;
		return 0;
	case ALLOC_REC_PYCODE:
		if (s->parse_pos < s->ahead_pos)
			return 0; /* kept ahead */
		return alloc_pystacks_code(&st->pys, s->space, rec, len);
	case ALLOC_REC_PYSTACK:
		if (s->parse_pos < s->ahead_pos)
			return 0; /* resolved ahead */
		return alloc_pystacks_record(&st->pys, recorder_stacks(ctx->rec), s->pid, s->space,
					     h.tid, rec, len);
	case ALLOC_REC_EXIT: {
		int64_t t = stream_t(st, ctx, s, h.t);
		struct alloc_event ev = { .t_ns = t, .tid = h.tid, .type = EV_EXIT,
					  .space = s->space };
		push_event(st, &ev);
		return 0;
	}
	default:
		return -1;
	}
}

/* Resolves the PYSTACK records among the bytes read (with the PYCODE
 * records before them), before the events around them are parsed: a code
 * object the agent did not describe is read from the live process, and
 * parsing a large read may take longer than a short program lives. Stops
 * at a new image's header (its records need the image the parse makes) and
 * at a malformed record (the parse finds it). */
static void stream_ahead(struct alloc_state *st, struct probe_ctx *ctx, struct alloc_stream *s,
			 size_t off)
{
	/* Walked from the first unparsed record, at off in pending (lengths frame
	 * the rest); those before ahead_pos were resolved at an earlier read. */
	uint64_t base = s->read_bytes - s->pending.len;
	for (;;) {
		struct alloc_rec_head h;
		const unsigned char *rec = (const unsigned char *)s->pending.buf + off;
		if (alloc_frame(rec, s->pending.len - off, &h) <= 0 || h.type == ALLOC_REC_HEADER)
			break;
		if (h.type == ALLOC_REC_PYSTACK && base + off >= s->ahead_pos &&
		    (!s->has_space || alloc_pystacks_record(&st->pys, recorder_stacks(ctx->rec),
							    s->pid, s->space, h.tid, rec, h.len)))
			break;
		if (h.type == ALLOC_REC_PYCODE && base + off >= s->ahead_pos &&
		    (!s->has_space || alloc_pystacks_code(&st->pys, s->space, rec, h.len)))
			break;
		off += h.len;
	}
	if (base + off > s->ahead_pos)
		s->ahead_pos = base + off;
}

/* Parses the headers that come first among the bytes read (a new image: the
 * records after it can then be resolved ahead); returns the offset after
 * them in pending. */
static size_t stream_headers(struct alloc_state *st, struct probe_ctx *ctx, struct alloc_stream *s)
{
	size_t off = 0;
	struct alloc_rec_head h;
	while (alloc_frame((const unsigned char *)s->pending.buf + off, s->pending.len - off, &h) >
		       0 &&
	       h.type == ALLOC_REC_HEADER) {
		s->parse_pos = s->read_bytes - s->pending.len + off;
		if (parse_record(st, ctx, s, (const unsigned char *)s->pending.buf + off, h.len)) {
			s->bad = 1;
			break;
		}
		off += h.len;
	}
	return off;
}

/* Returns the number of bytes read (at most ALLOC_READ_MAX). */
static size_t stream_read(struct alloc_state *st, struct probe_ctx *ctx, struct alloc_stream *s)
{
	unsigned char chunk[1 << 16];
	size_t total = 0;
	while (!s->bad && s->fd >= 0 && total < ALLOC_READ_MAX) {
		ssize_t n = read(s->fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += (size_t)n;
		s->read_bytes += (uint64_t)n;
		strbuf_add(&s->pending, chunk, (size_t)n);
	}
	if (s->bad || !s->pending.len)
		return total; /* (an empty pending may have no buffer yet) */
	size_t off = stream_headers(st, ctx, s);
	if (!s->bad)
		stream_ahead(st, ctx, s, off);
	for (;;) {
		struct alloc_rec_head h;
		int whole = alloc_frame((const unsigned char *)s->pending.buf + off,
					s->pending.len - off, &h);
		if (whole < 0)
			s->bad = 1;
		if (whole <= 0)
			break;
		s->parse_pos = s->read_bytes - s->pending.len + off;
		if (parse_record(st, ctx, s, (const unsigned char *)s->pending.buf + off, h.len)) {
			s->bad = 1;
			break;
		}
		off += h.len;
	}
	if (s->bad) {
		st->bad_streams++;
		log_warn("allocation records of process %d are malformed; the rest of them is ignored",
			 (int)s->pid);
		return total;
	}
	memmove(s->pending.buf, s->pending.buf + off, s->pending.len - off);
	s->pending.len -= off;
	s->pending.buf[s->pending.len] = '\0';
	/* What is parsed needs no disk any more: a long full-mode run stays small. */
	uint64_t done = (s->read_bytes - s->pending.len) & ~(uint64_t)(ALLOC_PUNCH_BYTES - 1);
	if (s->fd >= 0 && done > s->punched_bytes &&
	    !fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)s->punched_bytes,
		       (off_t)(done - s->punched_bytes)))
		s->punched_bytes = done;
	return total;
}

static void streams_scan(struct alloc_state *st)
{
	DIR *d = opendir(st->dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		size_t i;
		for (i = 0; i < st->nstreams && st->streams[i].pid != (pid_t)pid; i++)
			;
		if (i < st->nstreams)
			continue;
		struct strbuf path = STRBUF_INIT;
		strbuf_addf(&path, "%s/%s", st->dir, de->d_name);
		/* RDWR: to punch holes. The target names these files: a FIFO, a
		 * device or a link planted there is refused, never read blocking. */
		int fd = file_open_regular(path.buf, O_RDWR | O_NOFOLLOW);
		if (fd == -EACCES || fd == -EROFS)
			fd = file_open_regular(path.buf, O_NOFOLLOW);
		strbuf_release(&path);
		if (fd < 0)
			continue;
		if (st->nstreams == st->astreams) {
			st->astreams = st->astreams ? st->astreams * 2 : 16;
			st->streams = xrealloc(st->streams, st->astreams * sizeof(*st->streams));
		}
		st->streams[st->nstreams++] = (struct alloc_stream){ .pid = (pid_t)pid, .fd = fd,
								     .pending = STRBUF_INIT };
	}
	closedir(d);
}

static int event_cmp(const void *a, const void *b)
{
	const struct alloc_event *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int events_sorted(const struct alloc_event *e, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (event_cmp(&e[i - 1], &e[i]) > 0)
			return 0;
	return 1;
}

/* Sorts the waiting events: the new ones among themselves (a thread's come
 * in order, so usually nothing moves), then merged with the older waiting
 * ones when the two interleave (several threads or processes). Each event is
 * sorted once, not at every poll it waits through. */
static void events_order(struct alloc_state *st)
{
	struct alloc_event *e = st->events;
	size_t h = st->head, s = st->nsorted, n = st->nevents;
	if (!events_sorted(e + s, n - s))
		qsort(e + s, n - s, sizeof(*e), event_cmp);
	if (s > h && s < n && event_cmp(&e[s - 1], &e[s]) > 0) {
		if (st->ascratch < st->aevents) {
			st->ascratch = st->aevents;
			st->scratch = xrealloc(st->scratch, st->ascratch * sizeof(*st->scratch));
		}
		size_t a = h, b = s, k = 0;
		while (a < s && b < n)
			st->scratch[k++] = event_cmp(&e[b], &e[a]) < 0 ? e[b++] : e[a++];
		while (a < s)
			st->scratch[k++] = e[a++];
		while (b < n)
			st->scratch[k++] = e[b++];
		/* The merged list takes the place of the old one, which becomes the scratch. */
		struct alloc_event *merged = st->scratch;
		size_t amerged = st->ascratch;
		st->scratch = e;
		st->ascratch = st->aevents;
		st->events = merged;
		st->aevents = amerged;
		st->head = 0;
		st->nevents = k;
	}
	st->nsorted = st->nevents;
}

/* Applies the events older than until_ns (all of them with INT64_MAX). The
 * python samples up to now are in the recording: an allocation applied here is
 * at least ALLOC_REORDER_NS old, more than the gap allowed to its sample. */
static void events_apply(struct alloc_state *st, struct recorder *rec, int64_t until_ns)
{
	if (st->head == st->nevents)
		return;
	sqlite3 *db = recorder_db(rec);
	struct stack_writer *sw = recorder_stacks(rec);
	alloc_pyticks_load(&st->py, db);
	events_order(st);
	size_t n = st->nevents, i;
	for (i = st->head; i < n && st->events[i].t_ns <= until_ns; i++) {
		const struct alloc_event *e = &st->events[i];
		switch (e->type) {
		case EV_ALLOC: {
			uint32_t site = e->site;
			int64_t py = e->py_guess ? alloc_pyticks_attribute(&st->py, db, sw, e->tid,
									   e->t_ns)
						 : 0;
			if (py)
				site = heap_site_with_py(&st->heap, site, py);
			if (e->mapped)
				heap_map(&st->heap, e->t_ns, e->space, site, e->tid, e->ptr, e->size);
			else
				heap_alloc(&st->heap, e->t_ns, e->space, site, e->tid, e->ptr, e->size);
			break;
		}
		case EV_UNMAP: heap_unmap(&st->heap, e->t_ns, e->space, e->ptr, e->size); break;
		case EV_FREE: heap_free(&st->heap, e->t_ns, e->space, e->ptr); break;
		case EV_EXIT: heap_space_end(&st->heap, e->t_ns, e->space, 1); break;
		case EV_EXEC: heap_space_end(&st->heap, e->t_ns, e->space, 0); break;
		}
	}
	/* Compacted once the applied part outweighs the rest: an event moves at
	 * most once on average. */
	st->head = i;
	if (st->head == n) {
		st->head = st->nsorted = st->nevents = 0;
	} else if (st->head >= n - st->head) {
		memmove(st->events, st->events + st->head, (n - st->head) * sizeof(*st->events));
		st->nevents = st->nsorted = n - st->head;
		st->head = 0;
	}
}

/* Returns the bytes read over every stream. */
static size_t alloc_read_all(struct alloc_state *st, struct probe_ctx *ctx)
{
	size_t total = 0;
	tsc_knot_add(st);
	streams_scan(st);
	for (size_t i = 0; i < st->nstreams; i++)
		total += stream_read(st, ctx, &st->streams[i]);
	return total;
}

static void alloc_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct alloc_state *st = p->state;
	p->next_poll_ns = now_ns + ALLOC_POLL_NS;
	if (st->read_at_stop)
		return;
	alloc_read_all(st, ctx);
	events_apply(st, ctx->rec, now_ns - ctx->start_ns - ALLOC_REORDER_NS);
}

static void alloc_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct alloc_state *st = p->state;
	/* Everything the images wrote, however much is left. */
	while (alloc_read_all(st, ctx))
		events_apply(st, ctx->rec,
			     clock_mono_ns() - ctx->start_ns - ALLOC_REORDER_NS);
	events_apply(st, ctx->rec, INT64_MAX);
	int64_t end = clock_mono_ns() - ctx->start_ns;
	heap_finish(&st->heap, end);
	alloc_write(st, ctx, end);
	log_info("%llu allocation records from %zu process images",
		 (unsigned long long)st->records, st->heap.nspaces);
}

static void alloc_free(struct probe *p)
{
	struct alloc_state *st = p->state;
	if (!st)
		return;
	for (size_t i = 0; i < st->nstreams; i++) {
		if (st->streams[i].fd >= 0)
			close(st->streams[i].fd);
		strbuf_release(&st->streams[i].pending);
		hashmap_release(&st->streams[i].stacks);
	}
	if (st->dir)
		agent_dir_release();
	free(st->streams);
	free(st->events);
	free(st->scratch);
	sqlite3_finalize(st->site_tl_ins);
	heap_release(&st->heap);
	alloc_pyticks_release(&st->py);
	alloc_pystacks_release(&st->pys);
	tsc_map_release(&st->tsc);
	free(st);
	p->state = NULL;
}

static int alloc_memory_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	if (!arg || !strcmp(arg, "sampled")) {
		cfg->memory_mode = PROBE_MEMORY_SAMPLED;
	} else if (!strcmp(arg, "full")) {
		cfg->memory_mode = PROBE_MEMORY_FULL;
	} else {
		strbuf_addf(err, "--memory=%s: the mode is 'sampled' or 'full'", arg);
		return -1;
	}
	return 0;
}

/* "524288", "512k", "1m": bytes, at least 1 and at most 1 GiB; the
 * interval turns tracking on (sampled) when --memory did not. */
static int alloc_interval_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	char num[32];
	size_t n = strlen(arg);
	long mult = 1, v;
	if (n && n < sizeof(num)) {
		memcpy(num, arg, n + 1);
		if (num[n - 1] == 'k' || num[n - 1] == 'K')
			mult = 1024;
		else if (num[n - 1] == 'm' || num[n - 1] == 'M')
			mult = 1024 * 1024;
		if (mult > 1)
			num[n - 1] = '\0';
	}
	if (!n || n >= sizeof(num) || parse_long_range(num, 1, (1L << 30) / mult, &v)) {
		strbuf_addf(err,
			    "--memory-interval '%s' is not a byte count from 1 to 1g (examples: "
			    "524288, 64k, 1m)",
			    arg);
		return -1;
	}
	cfg->memory_interval_bytes = (int64_t)v * mult;
	if (!cfg->memory_mode)
		cfg->memory_mode = PROBE_MEMORY_SAMPLED;
	return 0;
}

#define ALLOC_RUN_ONLY                                                                             \
	"--memory needs the process to start under sonde: use 'sonde run --memory -- COMMAND'"

static const struct probe_option alloc_options[] = {
	{ .name = "memory", .arg = PROBE_ARG_OPTIONAL, .arg_name = "MODE",
	  .help = "track heap allocations: peak, leaks, temporaries per\n"
		  "call site (an agent is preloaded into the command and\n"
		  "its children). MODE: sampled (default: Poisson samples\n"
		  "by bytes, low overhead) or full (every allocation)",
	  .run_only = ALLOC_RUN_ONLY, .parse = alloc_memory_parse },
	{ .name = "memory-interval", .arg = PROBE_ARG_REQUIRED, .arg_name = "BYTES",
	  .help = "mean bytes between two samples (default\n"
		  "524288; suffixes k, m)",
	  .run_only = ALLOC_RUN_ONLY, .parse = alloc_interval_parse },
	{ .name = NULL },
};

static const char *const alloc_writes[] = {
	"alloc_sites",
	"alloc_timeline",
	"alloc_site_timeline",
	"alloc_site_python",
	"samples:alloc_peak",
	"samples:alloc_leak",
	"samples:alloc_temp",
	NULL,
};

const struct probe_ops probe_alloc = {
	.name = "alloc",
	.writes = alloc_writes,
	.summary = "heap allocations per call site: peak, leaks, temporaries (sonde run --memory)",
	.options = alloc_options,
	.enabled_by_default = 0,
	.wanted = alloc_wanted,
	.available = alloc_available,
	.start = alloc_start,
	.poll = alloc_poll,
	.stop = alloc_stop,
	.free = alloc_free,
};
