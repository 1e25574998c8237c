/* Unit tests of the alloc probe without its agent: hand-written record
 * streams (good, malformed, truncated) go into the probe's directory, and the
 * recording must hold the right figures and no more. */
#include "agents/alloc/alloc_wire.h"
#include "check.h"
#include "probes/probe.h"
#include "record/recorder.h"
#include "util/clock.h"
#include "util/strbuf.h"
#include "util/tsc.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const struct probe_ops probe_alloc;

#define MS 1000000ULL

struct stream {
	unsigned char buf[4096];
	size_t len;
};

static void put(struct stream *s, const void *rec, size_t len)
{
	memcpy(s->buf + s->len, rec, len);
	s->len += len;
}

static void put_header_with(struct stream *s, uint32_t pid, uint64_t t, uint32_t clock,
			    uint32_t flags)
{
	struct alloc_rec_header h;
	memset(&h, 0, sizeof(h));
	h.h = (struct alloc_rec_head){ ALLOC_REC_HEADER, sizeof(h), pid, t };
	h.magic = ALLOC_WIRE_MAGIC;
	h.version = ALLOC_WIRE_VERSION;
	h.pid = pid;
	h.clock = clock;
	h.flags = flags;
	put(s, &h, sizeof(h));
}

static void put_header(struct stream *s, uint32_t pid, uint64_t t)
{
	put_header_with(s, pid, t, ALLOC_CLOCK_MONOTONIC, 0);
}

/* A stack of one return address, named ip & 0xffff by thread tid. */
static void put_stack(struct stream *s, uint32_t tid, uint64_t t, uint64_t ip)
{
	unsigned char raw[sizeof(struct alloc_rec_stack) + 8];
	struct alloc_rec_stack r = { { ALLOC_REC_STACK, sizeof(raw), tid, t }, ip & 0xffff, 1 };
	memcpy(raw, &r, sizeof(r));
	memcpy(raw + sizeof(r), &ip, 8);
	put(s, raw, sizeof(raw));
}

static unsigned char *uleb(unsigned char *p, uint64_t v)
{
	do {
		*p++ = (unsigned char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return p;
}

static uint64_t zz(uint64_t d)
{
	return (d << 1) ^ (0 - (d >> 63));
}

/* One EVENTS record of thread tid: n events (size 0: a free), times and
 * addresses as given (the stack of an alloc is named ip & 0xffff); pyid 0:
 * allocations without Python stacks, else ALLOC_EV_ALLOC_PY naming pyid. */
struct ev {
	uint64_t t, ptr, size, ip;
};

static void put_events_py(struct stream *s, uint32_t tid, const struct ev *evs, int n,
			  uint32_t pyid)
{
	unsigned char raw[1024];
	size_t len = sizeof(struct alloc_rec_head);
	unsigned char *p = raw + len;
	uint64_t t = evs[0].t, ptr = 0;
	for (int i = 0; i < n; i++) {
		*p++ = !evs[i].size ? ALLOC_EV_FREE : pyid ? ALLOC_EV_ALLOC_PY : ALLOC_EV_ALLOC;
		p = uleb(p, zz(evs[i].t - t));
		p = uleb(p, zz(evs[i].ptr - ptr));
		if (evs[i].size) {
			p = uleb(p, evs[i].size);
			p = uleb(p, evs[i].ip & 0xffff);
			if (pyid)
				p = uleb(p, pyid);
		}
		t = evs[i].t;
		ptr = evs[i].ptr;
	}
	len = (size_t)(p - raw);
	while (len % 8)
		raw[len++] = ALLOC_EV_PAD;
	struct alloc_rec_head h = { ALLOC_REC_EVENTS, (uint16_t)len, tid, evs[0].t };
	memcpy(raw, &h, sizeof(h));
	put(s, raw, len);
}

static void put_events(struct stream *s, uint32_t tid, const struct ev *evs, int n)
{
	put_events_py(s, tid, evs, n, 0);
}

static void put_alloc(struct stream *s, uint64_t t, uint64_t ptr, uint64_t size, uint64_t ip)
{
	struct ev e = { t, ptr, size, ip };
	put_stack(s, 7, t, ip);
	put_events(s, 7, &e, 1);
}

/* An allocation of thread 7 with its Python stack named pyid. */
static void put_alloc_py(struct stream *s, uint64_t t, uint64_t ptr, uint64_t size, uint64_t ip,
			 uint32_t pyid)
{
	struct ev e = { t, ptr, size, ip };
	put_stack(s, 7, t, ip);
	put_events_py(s, 7, &e, 1, pyid);
}

static void put_free(struct stream *s, uint64_t t, uint64_t ptr)
{
	struct ev e = { t, ptr, 0, 0 };
	put_events(s, 7, &e, 1);
}

/* A Python stack of n frames (code, position, identity) of thread 7, named id. */
static void put_pystack(struct stream *s, uint64_t t, uint32_t id, size_t n, size_t len)
{
	unsigned char raw[sizeof(struct alloc_rec_pystack) + 24 * 4];
	struct alloc_rec_pystack p = { { ALLOC_REC_PYSTACK, (uint16_t)len, 7, t }, 0x030b, 0, id };
	memset(raw, 0, sizeof(raw));
	memcpy(raw, &p, sizeof(p));
	for (size_t k = 0; k < n && k < 4; k++) {
		uint64_t frame[3] = { 0x7f0000001000 + k * 64, 0x7f0000001100, 0x1234 };
		memcpy(raw + sizeof(p) + 24 * k, frame, sizeof(frame));
	}
	put(s, raw, len);
}

static void put_exit(struct stream *s, uint64_t t)
{
	struct alloc_rec_head e = { ALLOC_REC_EXIT, sizeof(e), 7, t };
	put(s, &e, sizeof(e));
}

static void write_stream_flags(const char *dir, int pid, const struct stream *s, int flags)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%d", dir, pid);
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0600);
	if (fd < 0 || write(fd, s->buf, s->len) != (ssize_t)s->len)
		perror(path);
	if (fd >= 0)
		close(fd);
}

static void write_stream(const char *dir, int pid, const struct stream *s)
{
	write_stream_flags(dir, pid, s, O_TRUNC);
}

static double query(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	double v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

static const char *env_get(const struct probe_env *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], name, n) && env->v[i][n] == '=')
			return env->v[i] + n + 1;
	return NULL;
}

TEST(streams_become_the_recording,
     "the alloc probe turns good, malformed and truncated streams into the right figures")
{
	char tmp[] = "/tmp/sonde-test-alloc-probe-XXXXXX";
	REQUIRE(mkdtemp(tmp));
	setenv("SONDE_ALLOC_LIB", "/proc/self/exe", 1); /* any readable file: no agent runs */
	unsetenv("PYTHONMALLOC");
	struct strbuf db_path = STRBUF_INIT, err = STRBUF_INIT, why = STRBUF_INIT;
	strbuf_addf(&db_path, "%s/profile.db", tmp);
	struct recorder *rec;
	int rc = recorder_open(db_path.buf, &rec, &err);
	if (rc)
		fprintf(stderr, "recorder_open: %s\n", err.buf);
	REQUIRE(rc == 0);
	struct probe_config cfg = { .interval_ns = 100 * MS, .memory_mode = PROBE_MEMORY_FULL };
	struct probe_env env = PROBE_ENV_INIT;
	uint64_t t0 = (uint64_t)clock_mono_ns();
	struct probe_ctx ctx = { .rec = rec, .cfg = &cfg, .start_ns = (int64_t)t0, .env = &env };
	struct probe p = { .ops = &probe_alloc, .next_poll_ns = INT64_MAX };

	CHECK_NAMED("the probe is available with an agent file and a launched target",
		    !probe_alloc.available(&ctx, &why));
	CHECK_NAMED("the probe starts", !probe_alloc.start(&p, &ctx, &why));
	const char *dir = env_get(&env, ALLOC_ENV_DIR);
	const char *preload = env_get(&env, "LD_PRELOAD");
	CHECK_NAMED("the agent is preloaded", preload && strstr(preload, "/proc/self/exe"));
	CHECK_NAMED("PYTHONMALLOC is left unset (the agent wraps CPython's allocators instead)",
		    !env_get(&env, "PYTHONMALLOC"));
	CHECK_NAMED("full mode asks the agent for every allocation",
		    env_get(&env, ALLOC_ENV_INTERVAL) &&
			!strcmp(env_get(&env, ALLOC_ENV_INTERVAL), "0"));
	REQUIRE(dir); /* SONDE_ALLOC_DIR is set */

	/* A good image: 1000 bytes leaked, 5000 transient; the peak is 6000. */
	struct stream good = { .len = 0 };
	put_header(&good, 4242, t0 + 1 * MS);
	put_alloc(&good, t0 + 2 * MS, 0x1000, 1000, 0x401234);
	put_alloc(&good, t0 + 3 * MS, 0x2000, 5000, 0x405678);
	put_free(&good, t0 + 4 * MS, 0x2000);
	put_exit(&good, t0 + 5 * MS);
	/* The free of the first block arrives after the exit: not applied. */
	put_free(&good, t0 + 6 * MS, 0x1000);
	write_stream(dir, 4242, &good);

	/* A valid start, then a record with an impossible length. */
	struct stream bad = { .len = 0 };
	put_header(&bad, 4243, t0 + 1 * MS);
	put_alloc(&bad, t0 + 2 * MS, 0x3000, 100, 0x401234);
	struct alloc_rec_head junk = { ALLOC_REC_EVENTS, 3, 7, t0 };
	put(&bad, &junk, sizeof(junk));
	put_alloc(&bad, t0 + 3 * MS, 0x4000, 1u << 30, 0x401234);
	write_stream(dir, 4243, &bad);

	/* Ends in the middle of a record: the whole records before it count. */
	struct stream cut = { .len = 0 };
	put_header(&cut, 4244, t0 + 1 * MS);
	put_alloc(&cut, t0 + 2 * MS, 0x5000, 300, 0x401234);
	put_alloc(&cut, t0 + 3 * MS, 0x6000, 999999, 0x401234);
	cut.len -= 5;
	write_stream(dir, 4244, &cut);

	/* A Python stack sonde cannot resolve (this process has no CPython),
	 * named by two allocations: they keep their native stack. Freed at once:
	 * no other figure moves. Its header says the image's CPython allocators
	 * were wrapped. */
	struct stream py = { .len = 0 };
	put_header_with(&py, (uint32_t)getpid(), t0 + 1 * MS, ALLOC_CLOCK_MONOTONIC,
			ALLOC_HDR_PYMEM);
	put_pystack(&py, t0 + 1 * MS + 1000, 5, 2, sizeof(struct alloc_rec_pystack) + 48);
	put_alloc_py(&py, t0 + 1 * MS + 1000, 0x7000, 777, 0x401234, 5);
	put_free(&py, t0 + 1 * MS + 2000, 0x7000);
	put_alloc_py(&py, t0 + 1 * MS + 3000, 0x7100, 1111, 0x401234, 5);
	put_free(&py, t0 + 1 * MS + 4000, 0x7100);
	write_stream(dir, getpid(), &py);

	/* A Python stack id never sent (its record lost): an unresolved stack. */
	struct stream pyrep = { .len = 0 };
	put_header(&pyrep, 4249, t0 + 1 * MS);
	put_alloc_py(&pyrep, t0 + 1 * MS + 1000, 0x9000, 2222, 0x401234, 9);
	put_free(&pyrep, t0 + 1 * MS + 2000, 0x9000);
	write_stream(dir, 4249, &pyrep);

	/* A Python stack whose length holds no whole frame: malformed. */
	struct stream pybad = { .len = 0 };
	put_header(&pybad, 4248, t0 + 1 * MS);
	put_pystack(&pybad, t0 + 1 * MS + 1000, 5, 1, sizeof(struct alloc_rec_pystack) + 16);
	put_alloc(&pybad, t0 + 1 * MS + 1000, 0x8000, 888, 0x401234);
	write_stream(dir, 4248, &pybad);

	/* One stack record serves two allocations; a third names a stack whose
	 * record never came (a dropped chunk): it still counts. Never exits. */
	struct stream packed = { .len = 0 };
	put_header(&packed, 4245, t0 + 1 * MS);
	put_stack(&packed, 7, t0 + 2 * MS, 0x401111);
	struct ev two[] = { { t0 + 2 * MS, 0x7000, 10, 0x401111 },
			    { t0 + 2 * MS + MS / 2, 0x7100, 20, 0x401111 },
			    { t0 + 3 * MS, 0x7200, 40, 0x402222 } };
	put_events(&packed, 7, two, 3);
	write_stream(dir, 4245, &packed);
	int images = 7; /* with the three Python ones */
	double leaked = 1400 + 30; /* the 40 bytes have no site */

	/* Counter ticks, and an address that moves between threads: the free
	 * (thread 9) arrives after both allocations (thread 8) in the file, yet
	 * sorts between them. */
	const char *clock = env_get(&env, ALLOC_ENV_CLOCK);
	int tsc = clock && !strcmp(clock, "tsc");
	if (tsc) {
		usleep(10000); /* after the other images' peak */
		struct stream ticks = { .len = 0 };
		uint64_t a = tsc_read();
		put_header_with(&ticks, 4246, a, ALLOC_CLOCK_TSC, 0);
		put_stack(&ticks, 8, a, 0x403333);
		struct ev allocs[] = { { a + 1000, 0x9000, 555, 0x403333 },
				       { a + 3000, 0x9000, 777, 0x403333 } };
		struct ev frees[] = { { a + 2000, 0x9000, 0, 0 } };
		put_events(&ticks, 8, allocs, 2);
		put_events(&ticks, 9, frees, 1);
		write_stream(dir, 4246, &ticks);
		images++;
		leaked += 777;
	} else {
		printf("SKIP: the time-stamp counter is not a clock here: its stream is not tested\n");
	}

	/* Not a stream at all: a name that is not a pid is ignored. */
	struct stream other = { .len = 4 };
	memcpy(other.buf, "junk", 4);
	char path[4096];
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs("junk", f);
		fclose(f);
	}

	/* Events read at one poll wait (they are younger than the reorder window)
	 * and meet older ones of another thread read at the next: the free of
	 * thread 9 goes between the two allocations of thread 8. */
	struct stream first = { .len = 0 }, second = { .len = 0 };
	put_header(&first, 4247, t0 + 1 * MS);
	put_stack(&first, 8, t0 + 20 * MS, 0x404444);
	struct ev reuse[] = { { t0 + 20 * MS, 0xa000, 11, 0x404444 },
			      { t0 + 40 * MS, 0xa000, 13, 0x404444 } };
	put_events(&first, 8, reuse, 2);
	write_stream(dir, 4247, &first);
	images++;
	leaked += 13;
	/* A file that exists before its process wrote anything: read empty at
	 * one poll, whole at the next. */
	struct stream late = { .len = 0 };
	write_stream(dir, 4250, &late);
	probe_alloc.poll(&p, &ctx, clock_mono_ns());
	struct ev freed[] = { { t0 + 30 * MS, 0xa000, 0, 0 } };
	put_events(&second, 9, freed, 1);
	write_stream_flags(dir, 4247, &second, O_APPEND);
	put_header(&late, 4250, t0 + 50 * MS);
	put_exit(&late, t0 + 51 * MS);
	write_stream_flags(dir, 4250, &late, O_APPEND);
	images++;
	probe_alloc.poll(&p, &ctx, clock_mono_ns());
	probe_alloc.stop(&p, &ctx);
	char *dir_copy = xstrdup(dir);
	probe_alloc.free(&p);
	probe_env_release(&env);
	CHECK_NAMED("the record directory is removed", access(dir_copy, F_OK) != 0);
	free(dir_copy);
	recorder_close(rec);

	sqlite3 *db;
	REQUIRE(sqlite3_open_v2(db_path.buf, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	CHECK_NAMED("every process image was read",
		    query(db, "SELECT value FROM meta WHERE key='alloc_processes'") == images);
	CHECK_NAMED("two streams were malformed (a bad length, a Python stack of no whole frame)",
		    query(db, "SELECT value FROM meta WHERE key='alloc_bad_streams'") == 2);
	CHECK_NAMED(
	    "each allocation with a Python stack that cannot be resolved is counted, and one "
	    "naming a stack never sent",
	    query(db, "SELECT value FROM meta WHERE key='alloc_python_unresolved'") == 3 &&
		query(db, "SELECT value FROM meta WHERE key='alloc_python_inprocess'") == 0);
	CHECK_NAMED("an allocation whose Python stack cannot be resolved stays native",
		    query(db, "SELECT count(*) FROM alloc_site_python") == 0 &&
			query(db, "SELECT count(*) FROM frames WHERE kind = 'python'") == 0);
	/* good 6000, bad 100, cut 300, Python 777, 1111 and 2222, packed 70 (its 40 under no
	 * site are not in the sites' sums), the poll-crossing stream 24, and the
	 * counter stream 1332. */
	CHECK_NAMED("an allocation whose Python stack cannot be resolved still counts",
		    query(db, "SELECT value FROM meta WHERE key='alloc_allocated_bytes'") ==
			6000 + 100 + 300 + 777 + 1111 + 2222 + 70 + 24 + (tsc ? 1332 : 0));
	CHECK_NAMED("nothing after the malformed Python stack is read",
		    query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes = 888") == 0);
	CHECK_NAMED(
	    "the malformed stream's records after the bad one are dropped",
	    query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes >= 1073741824") == 0);
	CHECK_NAMED("the truncated record is not counted",
		    query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes = 999999") ==
			0);
	CHECK_NAMED("leaked: 1000 (good) + 100 (bad, before the junk) + 300 (cut) + 30 (packed) + "
		    "777 (ticks)",
		    query(db, "SELECT sum(leaked_bytes) FROM alloc_sites") == leaked);
	CHECK_NAMED("the heap peak counts every image live at once",
		    query(db, "SELECT value FROM meta WHERE key='alloc_peak_bytes'") == 6470);
	CHECK_NAMED("one stack record serves every allocation that names it",
		    query(db, "SELECT count(*) FROM alloc_sites WHERE allocations = 2 AND "
			      "allocated_bytes = 30") == 1);
	CHECK_NAMED("an allocation naming a stack never received counts in the heap, not as a site",
		    query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes = 40") == 0 &&
			query(db, "SELECT value FROM meta WHERE key='alloc_lost_stacks'") == 1);
	CHECK_NAMED("a free read at a later poll sorts between the waiting allocations around it",
		    query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes = 24 AND "
			      "leaked_bytes = 13") == 1);
	if (tsc) {
		CHECK_NAMED(
		    "counter ticks of two threads sort a free between the allocations around it",
		    query(db, "SELECT value FROM meta WHERE key='alloc_unknown_frees'") == 0 &&
			query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes = 1332 "
				  "AND leaked_bytes = 777") == 1);
		CHECK_NAMED(
		    "the agent is told to stamp with the counter",
		    query(db,
			  "SELECT count(*) FROM meta WHERE key='alloc_clock' AND value='tsc'") ==
			1);
	}
	CHECK_NAMED("the 5000-byte block held 5000 at the peak",
		    query(db, "SELECT count(*) FROM alloc_sites WHERE peak_bytes = 5000") == 1);
	CHECK_NAMED("alloc_leak samples carry the leaked bytes",
		    query(db, "SELECT sum(weight) FROM samples WHERE source='alloc_leak'") ==
			leaked);
	CHECK_NAMED("the changelog lists the preload",
		    query(db, "SELECT count(*) FROM changelog WHERE what LIKE 'LD_PRELOAD=%'") ==
			1);
	CHECK_NAMED("the changelog says in how many images CPython's allocators were wrapped",
		    query(db, "SELECT count(*) FROM changelog WHERE change = 'wrapped' AND "
			      "what LIKE '%wrapped by the agent in 1 process image,%'") == 1);
	CHECK_NAMED("no changelog line speaks of PYTHONMALLOC",
		    query(db, "SELECT count(*) FROM changelog WHERE what LIKE '%PYTHONMALLOC%'") ==
			0);
	sqlite3_close(db);
	unlink(db_path.buf);
	rmdir(tmp);
	strbuf_release(&db_path);
	strbuf_release(&err);
	strbuf_release(&why);
}

CHECK_MAIN()
