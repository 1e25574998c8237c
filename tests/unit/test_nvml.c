/* Unit tests of the nvml probe against a fake libnvidia-ml with known answers
 * (tests/fakes/fake_nvml.c, built as FAKE_NVML_LIB): the tables of
 * docs/gpu.md hold its devices, topology, samples and the target's process,
 * and a machine without the library, or whose driver fails, is explained in
 * one line. */
#include "check.h"
#include "probes/probe.h"
#include "record/recorder.h"
#include "target/proctree.h"
#include "util/clock.h"
#include "util/strbuf.h"

#include <dlfcn.h>
#include <sqlite3.h>
#include <time.h>

extern const struct probe_ops probe_nvml;

/* A recording in a fresh directory, and a probe context over it whose
 * target is this process. */
struct fixture {
	char *dir;
	struct strbuf db_path;
	struct recorder *rec;
	struct probe_config cfg;
	struct proctree tree;
	struct probe_ctx ctx;
};

static int fixture_open(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->db_path = (struct strbuf)STRBUF_INIT;
	struct strbuf err = STRBUF_INIT;
	if (!(f->dir = check_tmpdir()))
		return -1;
	strbuf_addf(&f->db_path, "%s/profile.db", f->dir);
	if (recorder_open(f->db_path.buf, &f->rec, &err)) {
		printf("recorder_open: %s\n", err.buf);
		strbuf_release(&err);
		return -1;
	}
	f->cfg.interval_ns = 100 * NS_PER_MS;
	int64_t now = clock_mono_ns();
	proctree_init(&f->tree, getpid(), 1);
	proctree_add(&f->tree, getpid(), getppid(), now);
	f->ctx = (struct probe_ctx){ .rec = f->rec, .cfg = &f->cfg, .tree = &f->tree,
				     .start_ns = now };
	return 0;
}

static void fixture_close(struct fixture *f)
{
	if (f->rec)
		recorder_close(f->rec);
	proctree_release(&f->tree);
	strbuf_release(&f->db_path);
	check_rmtree(f->dir);
}

/* The first column of the first row of sql; -1 when none or NULL. */
static long long query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q;
	long long v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* The same as text, into buf ("" when none, "NULL" when NULL). */
static const char *query_text(sqlite3 *db, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *q;
	buf[0] = '\0';
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return buf;
	if (sqlite3_step(q) == SQLITE_ROW)
		snprintf(buf, size, "%s",
			 sqlite3_column_type(q, 0) == SQLITE_NULL ? "NULL"
								   : (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	return buf;
}

/* How many nvmlInit_v2 calls of the fake are not shut down; -1 unknown. */
static int fake_inits(void)
{
	void *lib = dlopen(FAKE_NVML_LIB, RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		return -1;
	int (*fn)(void) = (int (*)(void))dlsym(lib, "fake_nvml_inits");
	int n = fn ? fn() : -1;
	dlclose(lib);
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* available() under the environment given; its reason into why. */
static int available_with(const char *lib, const char *name, const char *value,
			  struct strbuf *why)
{
	struct fixture f;
	if (fixture_open(&f))
		return 99;
	setenv("SONDE_NVML_LIB", lib, 1);
	if (name)
		setenv(name, value, 1);
	int rc = probe_nvml.available(&f.ctx, why);
	if (name)
		unsetenv(name);
	fixture_close(&f);
	return rc;
}

TEST(no_library, "without libnvidia-ml the probe is off, with one line saying there is no "
		 "NVIDIA driver")
{
	struct strbuf why = STRBUF_INIT;
	CHECK(available_with("/nonexistent/libnvidia-ml.so.1", NULL, NULL, &why) == -1);
	CHECK_CONTAINS(why.buf, "no NVIDIA driver here");
	CHECK_CONTAINS(why.buf, "/nonexistent/libnvidia-ml.so.1 not found");
	CHECK(!strchr(why.buf, '\n'));
	strbuf_release(&why);
}

TEST(init_fails, "a driver that cannot start is explained in its own words")
{
	struct strbuf why = STRBUF_INIT;
	CHECK(available_with(FAKE_NVML_LIB, "FAKE_NVML_INIT_FAIL", "1", &why) == -1);
	CHECK_STR_EQ(why.buf, "NVML could not start: Driver Not Loaded");
	strbuf_release(&why);
}

TEST(no_gpu, "a driver that sees no GPU turns the probe off and leaves NVML shut down")
{
	struct strbuf why = STRBUF_INIT;
	CHECK(available_with(FAKE_NVML_LIB, "FAKE_NVML_DEVICES", "0", &why) == -1);
	CHECK_STR_EQ(why.buf, "the NVIDIA driver sees no GPU");
	CHECK_INT_EQ(fake_inits(), 0);
	strbuf_release(&why);
}

TEST(tables, "with the fake driver the nvml tables hold its two devices, their NVLinks, "
	     "their samples and the target's GPU memory")
{
	struct fixture f;
	struct strbuf why = STRBUF_INIT;
	char pid[32], buf[256];
	REQUIRE(!fixture_open(&f));
	setenv("SONDE_NVML_LIB", FAKE_NVML_LIB, 1);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("FAKE_NVML_PID", pid, 1);
	struct probe p = { .ops = &probe_nvml, .next_poll_ns = INT64_MAX };
	int ok = !probe_nvml.available(&f.ctx, &why) && !probe_nvml.start(&p, &f.ctx, &why);
	CHECK(ok);
	if (!ok) {
		printf("  why: %s\n", why.buf);
		probe_nvml.free(&p);
		goto out;
	}
	CHECK(p.next_poll_ns <= clock_mono_ns());
	for (int i = 0; i < 3; i++) {
		probe_nvml.poll(&p, &f.ctx, clock_mono_ns());
		CHECK(p.next_poll_ns > clock_mono_ns());
		sleep_ms(110);
	}
	probe_nvml.stop(&p, &f.ctx);
	probe_nvml.free(&p);
	CHECK_INT_EQ(fake_inits(), 0);
	recorder_close(f.rec);
	f.rec = NULL;

	sqlite3 *db;
	REQUIRE(sqlite3_open_v2(f.db_path.buf, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	/* nvml_devices: two rows, the fake's values; no NUMA node function, so NULL. */
	CHECK_INT_EQ(query_int(db, "SELECT count(*) FROM nvml_devices"), 2);
	CHECK_STR_EQ(query_text(db, "SELECT group_concat(name, '|') FROM (SELECT name FROM "
				    "nvml_devices ORDER BY device)",
				buf, sizeof(buf)),
		     "Sonde Fake GPU 0|Sonde Fake GPU 1");
	CHECK_STR_EQ(query_text(db, "SELECT uuid || ' ' || bus_id FROM nvml_devices WHERE device=1",
				buf, sizeof(buf)),
		     "GPU-fa4e0000-0000-0000-0000-000000000001 00000000:11:00.0");
	CHECK_INT_EQ(query_int(db, "SELECT count(*) FROM nvml_devices WHERE "
				   "mem_total_bytes = 80000000000 AND numa_node IS NULL AND "
				   "power_limit_mw = 700000 AND max_sm_mhz = 1980 AND "
				   "max_mem_mhz = 2619 AND pcie_gen = 5 AND pcie_width = 16"),
		     2);
	/* nvml_topology: every ordered pair, X on the diagonal, NV4 across. */
	CHECK_INT_EQ(query_int(db, "SELECT count(*) FROM nvml_topology"), 4);
	CHECK_INT_EQ(query_int(db, "SELECT count(*) FROM nvml_topology WHERE a = b AND link = 'X'"),
		     2);
	CHECK_STR_EQ(query_text(db, "SELECT link FROM nvml_topology WHERE a=0 AND b=1", buf,
				sizeof(buf)),
		     "NV4");
	CHECK_STR_EQ(query_text(db, "SELECT link FROM nvml_topology WHERE a=1 AND b=0", buf,
				sizeof(buf)),
		     "NV4");
	/* nvml_samples: both devices, several times, with the fake's values. */
	long long n0 = query_int(db, "SELECT count(*) FROM nvml_samples WHERE device=0 AND "
				     "sm_pct=50 AND mem_pct=20 AND mem_used_bytes=1000000000 AND "
				     "mem_total_bytes=80000000000 AND pcie_tx_kbps=1000 AND "
				     "pcie_rx_kbps=2000 AND power_mw=300000 AND sm_mhz=1500 AND "
				     "mem_mhz=2600 AND throttle=4");
	long long n1 = query_int(db, "SELECT count(*) FROM nvml_samples WHERE device=1 AND "
				     "sm_pct=51 AND mem_pct=21 AND mem_used_bytes=2000000000 AND "
				     "pcie_tx_kbps=1001 AND pcie_rx_kbps=2001 AND power_mw IS NULL "
				     "AND sm_mhz=1501 AND mem_mhz=2601 AND throttle=1");
	CHECK(n0 >= 2);
	CHECK(n1 >= 2);
	CHECK_INT_EQ(query_int(db, "SELECT count(*) FROM nvml_samples"), n0 + n1);
	long long run_ns = clock_mono_ns() - f.ctx.start_ns;
	CHECK(query_int(db, "SELECT min(t_ns) FROM nvml_samples") >= 0);
	CHECK(query_int(db, "SELECT max(t_ns) FROM nvml_samples") <= run_ns);
	/* nvml_proc_memory: the target's pid on device 0, and not pid 1 (not ours). */
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM nvml_proc_memory WHERE device=0 AND pid=%s AND "
		 "bytes=123456789",
		 pid);
	CHECK(query_int(db, sql) >= 3);
	CHECK_INT_EQ(query_int(db, "SELECT count(*) FROM nvml_proc_memory WHERE pid=1"), 0);
	CHECK_INT_EQ(query_int(db, "SELECT value FROM meta WHERE key='nvml_devices'"), 2);
	sqlite3_close(db);
out:
	unsetenv("FAKE_NVML_PID");
	strbuf_release(&why);
	fixture_close(&f);
}

CHECK_MAIN()
