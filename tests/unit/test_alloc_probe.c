/* Unit tests of the alloc probe without its agent: hand-written record
 * streams (good, malformed, truncated) go into the probe's directory, and the
 * recording must hold the right figures and no more. */
#include "agents/alloc/alloc_wire.h"
#include "probes/probe.h"
#include "record/recorder.h"
#include "util/clock.h"
#include "util/strbuf.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const struct probe_ops probe_alloc;

static int passed, failed;

#define CHECK(name, cond)                                                                   \
	do {                                                                                \
		if (cond) {                                                                 \
			passed++;                                                           \
		} else {                                                                    \
			failed++;                                                           \
			fprintf(stderr, "FAIL: %s (%s:%d: %s)\n", name, __FILE__, __LINE__, \
				#cond);                                                     \
		}                                                                           \
	} while (0)

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

static void put_header(struct stream *s, uint32_t pid, uint64_t t)
{
	struct alloc_rec_header h;
	memset(&h, 0, sizeof(h));
	h.h = (struct alloc_rec_head){ ALLOC_REC_HEADER, sizeof(h), pid, t };
	h.magic = ALLOC_WIRE_MAGIC;
	h.version = ALLOC_WIRE_VERSION;
	h.pid = pid;
	put(s, &h, sizeof(h));
}

static void put_alloc(struct stream *s, uint64_t t, uint64_t ptr, uint64_t size, uint64_t ip)
{
	unsigned char raw[sizeof(struct alloc_rec_alloc) + 8];
	struct alloc_rec_alloc a = { { ALLOC_REC_ALLOC, sizeof(raw), 7, t }, ptr, size };
	memcpy(raw, &a, sizeof(a));
	memcpy(raw + sizeof(a), &ip, 8);
	put(s, raw, sizeof(raw));
}

static void put_free(struct stream *s, uint64_t t, uint64_t ptr)
{
	struct alloc_rec_free f = { { ALLOC_REC_FREE, sizeof(f), 7, t }, ptr };
	put(s, &f, sizeof(f));
}

/* A Python stack of n frames (code, position, identity) for thread 7's next allocation. */
static void put_pystack(struct stream *s, uint64_t t, size_t n, size_t len)
{
	unsigned char raw[sizeof(struct alloc_rec_pystack) + 24 * 4];
	struct alloc_rec_pystack p = { { ALLOC_REC_PYSTACK, (uint16_t)len, 7, t }, 0x030b, 0, 0 };
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

static void write_stream(const char *dir, int pid, const struct stream *s)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%d", dir, pid);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, s->buf, s->len) != (ssize_t)s->len)
		perror(path);
	if (fd >= 0)
		close(fd);
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

int main(void)
{
	char tmp[] = "/tmp/sonde-test-alloc-probe-XXXXXX";
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("SONDE_ALLOC_LIB", "/proc/self/exe", 1); /* any readable file: no agent runs */
	unsetenv("PYTHONMALLOC");
	struct strbuf db_path = STRBUF_INIT, err = STRBUF_INIT, why = STRBUF_INIT;
	strbuf_addf(&db_path, "%s/profile.db", tmp);
	struct recorder *rec;
	if (recorder_open(db_path.buf, &rec, &err)) {
		fprintf(stderr, "recorder_open: %s\n", err.buf);
		return 1;
	}
	struct probe_config cfg = { .interval_ns = 100 * MS, .memory_mode = PROBE_MEMORY_FULL };
	struct probe_env env = PROBE_ENV_INIT;
	uint64_t t0 = (uint64_t)clock_mono_ns();
	struct probe_ctx ctx = { .rec = rec, .cfg = &cfg, .start_ns = (int64_t)t0, .env = &env };
	struct probe p = { .ops = &probe_alloc, .next_poll_ns = INT64_MAX };

	CHECK("the probe is available with an agent file and a launched target",
	      !probe_alloc.available(&ctx, &why));
	CHECK("the probe starts", !probe_alloc.start(&p, &ctx, &why));
	const char *dir = env_get(&env, ALLOC_ENV_DIR);
	const char *preload = env_get(&env, "LD_PRELOAD");
	CHECK("the agent is preloaded", preload && strstr(preload, "/proc/self/exe"));
	CHECK("PYTHONMALLOC=malloc is set", env_get(&env, "PYTHONMALLOC") &&
						    !strcmp(env_get(&env, "PYTHONMALLOC"), "malloc"));
	CHECK("full mode asks the agent for every allocation",
	      env_get(&env, ALLOC_ENV_INTERVAL) && !strcmp(env_get(&env, ALLOC_ENV_INTERVAL), "0"));
	if (!dir) {
		fprintf(stderr, "no SONDE_ALLOC_DIR set\n");
		return 1;
	}

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
	struct alloc_rec_head junk = { ALLOC_REC_ALLOC, 3, 7, t0 };
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

	/* A Python stack sonde cannot resolve (this process has no CPython): the
	 * allocation keeps its native stack. Freed at once: no other figure moves. */
	struct stream py = { .len = 0 };
	put_header(&py, (uint32_t)getpid(), t0 + 1 * MS);
	put_pystack(&py, t0 + 1 * MS + 1000, 2, sizeof(struct alloc_rec_pystack) + 48);
	put_alloc(&py, t0 + 1 * MS + 1000, 0x7000, 777, 0x401234);
	put_free(&py, t0 + 1 * MS + 2000, 0x7000);
	write_stream(dir, getpid(), &py);

	/* A Python stack whose length holds no whole frame: malformed. */
	struct stream pybad = { .len = 0 };
	put_header(&pybad, 4246, t0 + 1 * MS);
	put_pystack(&pybad, t0 + 1 * MS + 1000, 1, sizeof(struct alloc_rec_pystack) + 16);
	put_alloc(&pybad, t0 + 1 * MS + 1000, 0x8000, 888, 0x401234);
	write_stream(dir, 4246, &pybad);

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

	probe_alloc.poll(&p, &ctx, clock_mono_ns());
	probe_alloc.stop(&p, &ctx);
	char *dir_copy = xstrdup(dir);
	probe_alloc.free(&p);
	probe_env_release(&env);
	CHECK("the record directory is removed", access(dir_copy, F_OK) != 0);
	free(dir_copy);
	recorder_close(rec);

	sqlite3 *db;
	if (sqlite3_open_v2(db_path.buf, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return 1;
	CHECK("five process images were read",
	      query(db, "SELECT value FROM meta WHERE key='alloc_processes'") == 5);
	CHECK("two streams were malformed (a bad length, a Python stack of no whole frame)",
	      query(db, "SELECT value FROM meta WHERE key='alloc_bad_streams'") == 2);
	CHECK("a Python stack that cannot be resolved is counted, and its allocation stays native",
	      query(db, "SELECT value FROM meta WHERE key='alloc_python_unresolved'") == 1 &&
		      query(db, "SELECT value FROM meta WHERE key='alloc_python_inprocess'") == 0 &&
		      query(db, "SELECT count(*) FROM alloc_site_python") == 0 &&
		      query(db, "SELECT count(*) FROM frames WHERE kind = 'python'") == 0 &&
		      query(db, "SELECT value FROM meta WHERE key='alloc_allocated_bytes'") ==
			      5000 + 1000 + 100 + 300 + 777);
	CHECK("nothing after the malformed Python stack is read",
	      query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes = 888") == 0);
	CHECK("the malformed stream's records after the bad one are dropped",
	      query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes >= 1073741824") == 0);
	CHECK("the truncated record is not counted",
	      query(db, "SELECT count(*) FROM alloc_sites WHERE allocated_bytes = 999999") == 0);
	CHECK("leaked: 1000 (good) + 100 (bad, before the junk) + 300 (cut)",
	      query(db, "SELECT sum(leaked_bytes) FROM alloc_sites") == 1400);
	CHECK("the heap peak counts every image live at once",
	      query(db, "SELECT value FROM meta WHERE key='alloc_peak_bytes'") == 6400);
	CHECK("the 5000-byte block held 5000 at the peak",
	      query(db, "SELECT count(*) FROM alloc_sites WHERE peak_bytes = 5000") == 1);
	CHECK("alloc_leak samples carry the leaked bytes",
	      query(db, "SELECT sum(weight) FROM samples WHERE source='alloc_leak'") == 1400);
	CHECK("the changelog lists the preload and PYTHONMALLOC",
	      query(db, "SELECT count(*) FROM changelog WHERE what LIKE 'LD_PRELOAD=%'"
			" OR what LIKE 'PYTHONMALLOC=malloc%'") == 2);
	sqlite3_close(db);
	unlink(db_path.buf);
	rmdir(tmp);
	strbuf_release(&db_path);
	strbuf_release(&err);
	strbuf_release(&why);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
