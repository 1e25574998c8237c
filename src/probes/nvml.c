/* nvml probe: NVIDIA GPUs as their driver sees them, through NVML
 * (nvml_api.h), into the nvml_* tables of docs/gpu.md.
 *
 * Once, at start: the devices and the link between each ordered pair (as
 * `nvidia-smi topo -m`). Every NVML_POLL_NS: one nvml_samples row per device,
 * read on a thread of the probe's own (a PCIe throughput read holds the
 * caller about 20 ms, two a device: too long for the session's loop), and the
 * GPU memory of each of the target's processes, read in poll() on the
 * session's thread (it looks the pids up in the process tree).
 *
 * available() leaves NVML initialised for start(); stop() or free() shuts it
 * down. A call that fails leaves its column NULL; nothing here stops the run. */
#define LOG_DOMAIN "nvml"
#include "probe.h"
#include "nvml_api.h"
#include "nvml_topo.h"
#include "../record/recorder.h"
#include "../target/proctree.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVML_POLL_NS (100 * NS_PER_MS)
#define NVML_PROCS_MAX 4096 /* processes read per device per poll */

static const char nvml_schema[] =
	"CREATE TABLE IF NOT EXISTS nvml_devices(device INTEGER PRIMARY KEY, name TEXT,"
	" uuid TEXT, bus_id TEXT, mem_total_bytes INTEGER, numa_node INTEGER,"
	" power_limit_mw INTEGER, max_sm_mhz INTEGER, max_mem_mhz INTEGER,"
	" pcie_gen INTEGER, pcie_width INTEGER);"
	"CREATE TABLE IF NOT EXISTS nvml_samples(t_ns INTEGER, device INTEGER, sm_pct INTEGER,"
	" mem_pct INTEGER, mem_used_bytes INTEGER, mem_total_bytes INTEGER,"
	" pcie_tx_kbps INTEGER, pcie_rx_kbps INTEGER, power_mw INTEGER, sm_mhz INTEGER,"
	" mem_mhz INTEGER, throttle INTEGER);"
	"CREATE TABLE IF NOT EXISTS nvml_proc_memory(t_ns INTEGER, device INTEGER, pid INTEGER,"
	" bytes INTEGER);"
	"CREATE TABLE IF NOT EXISTS nvml_topology(a INTEGER, b INTEGER, link TEXT,"
	" PRIMARY KEY(a, b));";

enum { INS_DEVICE, INS_SAMPLE, INS_PROC, INS_TOPO, INS_N };

static const char *const ins_sql[INS_N] = {
	"INSERT OR REPLACE INTO nvml_devices VALUES(?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO nvml_samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO nvml_proc_memory VALUES(?,?,?,?)",
	"INSERT OR REPLACE INTO nvml_topology VALUES(?,?,?)",
};

struct nvml_state {
	struct nvml_api api; /* the library (never unloaded), started from start() to stop() */
	int started;
	unsigned int count; /* the GPUs the driver lists */
	struct recorder *rec;
	int64_t start_ns;
	struct nvml_gpu *dev;
	unsigned int ndev;
	sqlite3_stmt *ins[INS_N];
	nvmlProcessInfo_t *procs;
	unsigned int procs_alloc;
	int64_t samples, proc_rows;
	/* The sampling thread: lock and wake guard stop. */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int sync_made, thread_running, stop;
};

static void nvml_shutdown(struct nvml_state *st)
{
	if (st->started)
		st->api.shutdown();
	st->started = 0;
}

/* Starts NVML to see that it runs, and shuts it down: start() starts it again. */
static int nvml_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct nvml_api api;
	unsigned int n;
	(void)ctx;
	if (nvml_api_open(&api, &n, why))
		return -1;
	api.shutdown();
	return 0;
}

static void bind_uint(sqlite3_stmt *q, int col, int have, unsigned long long v)
{
	if (have)
		sqlite3_bind_int64(q, col, (sqlite3_int64)v);
	else
		sqlite3_bind_null(q, col);
}

static void bind_str(sqlite3_stmt *q, int col, int have, const char *s)
{
	if (have)
		sqlite3_bind_text(q, col, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, col);
}

/* f(h, out) when the library has f; 1 when it answered. */
static int read_uint(nvml_dev_uint_fn f, nvmlDevice_t h, unsigned int *out)
{
	return f && f(h, out) == NVML_SUCCESS;
}

static int read_kind(nvml_dev_kind_uint_fn f, nvmlDevice_t h, int kind, unsigned int *out)
{
	return f && f(h, kind, out) == NVML_SUCCESS;
}

static int read_text(nvml_dev_text_fn f, nvmlDevice_t h, char *buf, unsigned int size)
{
	if (!f || f(h, buf, size) != NVML_SUCCESS)
		return 0;
	buf[size - 1] = '\0';
	return 1;
}

static void device_write(struct nvml_state *st, const struct nvml_gpu *d)
{
	const struct nvml_api *a = &st->api;
	char name[NVML_DEVICE_NAME_SIZE], uuid[NVML_DEVICE_UUID_SIZE];
	nvmlMemory_t m;
	unsigned int numa = 0, limit_mw = 0, sm_mhz = 0, mem_mhz = 0, gen = 0, width = 0;
	int have_name = read_text(a->name, d->h, name, sizeof(name));
	int have_uuid = read_text(a->uuid, d->h, uuid, sizeof(uuid));
	int have_mem = a->memory && a->memory(d->h, &m) == NVML_SUCCESS;
	int have_numa = read_uint(a->numa_node, d->h, &numa);
	int have_limit = read_uint(a->power_limit_mw, d->h, &limit_mw);
	int have_sm = read_kind(a->max_clock_mhz, d->h, NVML_CLOCK_SM, &sm_mhz);
	int have_mem_mhz = read_kind(a->max_clock_mhz, d->h, NVML_CLOCK_MEM, &mem_mhz);
	int have_gen = read_uint(a->pcie_max_gen, d->h, &gen);
	int have_width = read_uint(a->pcie_max_width, d->h, &width);
	sqlite3_stmt *q = st->ins[INS_DEVICE];
	sqlite3_bind_int64(q, 1, d->index);
	bind_str(q, 2, have_name, name);
	bind_str(q, 3, have_uuid, uuid);
	bind_str(q, 4, d->have_pci, d->pci.busId);
	bind_uint(q, 5, have_mem, have_mem ? m.total : 0);
	bind_uint(q, 6, have_numa, numa);
	bind_uint(q, 7, have_limit, limit_mw);
	bind_uint(q, 8, have_sm, sm_mhz);
	bind_uint(q, 9, have_mem_mhz, mem_mhz);
	bind_uint(q, 10, have_gen, gen);
	bind_uint(q, 11, have_width, width);
	recorder_step(st->rec, q);
}

/* One row for each ordered pair (a, b), a == b included ('X'); NULL where
 * the driver does not say. */
static void topology_write(struct nvml_state *st)
{
	unsigned int n = st->ndev;
	char(*link)[NVML_LINK_NAME_MAX] = xcalloc((size_t)n * n, sizeof(*link));
	nvml_topology(&st->api, st->dev, n, link);
	sqlite3_stmt *q = st->ins[INS_TOPO];
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int b = 0; b < n; b++) {
			const char *l = link[a * n + b];
			sqlite3_bind_int64(q, 1, st->dev[a].index);
			sqlite3_bind_int64(q, 2, st->dev[b].index);
			bind_str(q, 3, *l != '\0', l);
			recorder_step(st->rec, q);
		}
	free(link);
}

/* One nvml_samples row for d; safe on the sampling thread. */
static void device_sample(struct nvml_state *st, const struct nvml_gpu *d)
{
	const struct nvml_api *a = &st->api;
	int64_t t_ns = clock_mono_ns() - st->start_ns;
	nvmlUtilization_t u;
	nvmlMemory_t m;
	unsigned long long throttle = 0;
	unsigned int tx = 0, rx = 0, power_mw = 0, sm_mhz = 0, mem_mhz = 0;
	int have_u = a->utilization && a->utilization(d->h, &u) == NVML_SUCCESS;
	int have_m = a->memory && a->memory(d->h, &m) == NVML_SUCCESS;
	int have_tx = read_kind(a->pcie_kbps, d->h, NVML_PCIE_UTIL_TX_BYTES, &tx);
	int have_rx = read_kind(a->pcie_kbps, d->h, NVML_PCIE_UTIL_RX_BYTES, &rx);
	int have_power = read_uint(a->power_mw, d->h, &power_mw);
	int have_sm = read_kind(a->clock_mhz, d->h, NVML_CLOCK_SM, &sm_mhz);
	int have_mem = read_kind(a->clock_mhz, d->h, NVML_CLOCK_MEM, &mem_mhz);
	int have_throttle = a->throttle && a->throttle(d->h, &throttle) == NVML_SUCCESS;
	recorder_lock(st->rec);
	sqlite3_stmt *q = st->ins[INS_SAMPLE];
	sqlite3_bind_int64(q, 1, t_ns);
	sqlite3_bind_int64(q, 2, d->index);
	bind_uint(q, 3, have_u, have_u ? u.gpu : 0);
	bind_uint(q, 4, have_u, have_u ? u.memory : 0);
	bind_uint(q, 5, have_m, have_m ? m.used : 0);
	bind_uint(q, 6, have_m, have_m ? m.total : 0);
	bind_uint(q, 7, have_tx, tx);
	bind_uint(q, 8, have_rx, rx);
	bind_uint(q, 9, have_power, power_mw);
	bind_uint(q, 10, have_sm, sm_mhz);
	bind_uint(q, 11, have_mem, mem_mhz);
	/* A bit mask: stored as the integer it is (no bit above 63 is defined). */
	bind_uint(q, 12, have_throttle, throttle);
	recorder_step(st->rec, q);
	st->samples++;
	recorder_unlock(st->rec);
}

static void devices_sample(struct nvml_state *st)
{
	for (unsigned int i = 0; i < st->ndev; i++)
		device_sample(st, &st->dev[i]);
}

/* The processes on d, into st->procs: their number, 0 when the call fails. */
static unsigned int procs_read(struct nvml_state *st, const struct nvml_gpu *d)
{
	const struct nvml_api *a = &st->api;
	for (int tries = 0; tries < 2; tries++) {
		unsigned int count = st->procs_alloc;
		nvmlReturn_t rc = a->procs(d->h, &count, st->procs);
		if (rc == NVML_SUCCESS)
			return count < st->procs_alloc ? count : st->procs_alloc;
		if (rc != NVML_ERROR_INSUFFICIENT_SIZE || count <= st->procs_alloc)
			return 0;
		/* More than we had room for: grow (bounded) and ask again. */
		st->procs_alloc = count < NVML_PROCS_MAX ? count + 8 : NVML_PROCS_MAX;
		st->procs = xrealloc(st->procs, st->procs_alloc * sizeof(*st->procs));
	}
	return 0;
}

/* One nvml_proc_memory row per process of the target on each device. */
static void procs_sample(struct nvml_state *st, struct probe_ctx *ctx, int64_t now_ns)
{
	if (!st->api.procs || !ctx->tree)
		return;
	sqlite3_stmt *q = st->ins[INS_PROC];
	for (unsigned int i = 0; i < st->ndev; i++) {
		unsigned int n = procs_read(st, &st->dev[i]);
		recorder_lock(st->rec); /* not across the driver's call: the sampler writes too */
		for (unsigned int k = 0; k < n; k++) {
			const nvmlProcessInfo_t *pi = &st->procs[k];
			const struct proc_entry *e = proctree_find(ctx->tree, (pid_t)pi->pid);
			if (!e || e->gone_ns >= 0)
				continue;
			sqlite3_bind_int64(q, 1, now_ns - ctx->start_ns);
			sqlite3_bind_int64(q, 2, st->dev[i].index);
			sqlite3_bind_int64(q, 3, pi->pid);
			bind_uint(q, 4, pi->usedGpuMemory != NVML_VALUE_NOT_AVAILABLE,
				  pi->usedGpuMemory);
			recorder_step(st->rec, q);
			st->proc_rows++;
		}
		recorder_unlock(st->rec);
	}
}

static void *sampler_main(void *arg)
{
	struct nvml_state *st = arg;
	int64_t next_ns = clock_mono_ns();
	pthread_mutex_lock(&st->lock);
	while (!st->stop) {
		pthread_mutex_unlock(&st->lock);
		devices_sample(st);
		pthread_mutex_lock(&st->lock);
		next_ns += NVML_POLL_NS;
		int64_t now_ns = clock_mono_ns();
		if (next_ns < now_ns) /* late (a slow driver): no burst to catch up */
			next_ns = now_ns;
		struct timespec ts = { (time_t)(next_ns / NS_PER_S), (long)(next_ns % NS_PER_S) };
		while (!st->stop && pthread_cond_timedwait(&st->wake, &st->lock, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static void sampler_start(struct nvml_state *st)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&st->lock, NULL);
	st->sync_made = 1;
	int err = pthread_create(&st->thread, NULL, sampler_main, st);
	if (err)
		log_info("no sampling thread (%s): the devices are read on the session's loop",
			 strerror(err));
	else
		st->thread_running = 1;
}

static void sampler_join(struct nvml_state *st)
{
	if (!st->thread_running)
		return;
	pthread_mutex_lock(&st->lock);
	st->stop = 1;
	pthread_cond_signal(&st->wake);
	pthread_mutex_unlock(&st->lock);
	pthread_join(st->thread, NULL);
	st->thread_running = 0;
}

static int nvml_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct nvml_state *st = xcalloc(1, sizeof(*st));
	p->state = st;
	if (nvml_api_open(&st->api, &st->count, why))
		return -1;
	st->started = 1;
	st->rec = ctx->rec;
	st->start_ns = ctx->start_ns;
	if (recorder_schema(ctx->rec, nvml_schema) || !recorder_db(ctx->rec)) {
		strbuf_addstr(why, "cannot create the nvml tables");
		return -1;
	}
	for (int i = 0; i < INS_N; i++)
		if (sqlite3_prepare_v2(recorder_db(ctx->rec), ins_sql[i], -1, &st->ins[i], NULL) !=
		    SQLITE_OK) {
			strbuf_addstr(why, "cannot prepare the nvml tables' statements");
			return -1;
		}
	st->ndev = nvml_gpus_open(&st->api, st->count, &st->dev);
	if (!st->ndev) {
		strbuf_addf(why, "the NVIDIA driver lists %u GPU%s but opens none", st->count,
			    st->count > 1 ? "s" : "");
		return -1;
	}
	st->procs_alloc = 16;
	st->procs = xcalloc(st->procs_alloc, sizeof(*st->procs));
	recorder_lock(ctx->rec);
	for (unsigned int i = 0; i < st->ndev; i++)
		device_write(st, &st->dev[i]);
	topology_write(st);
	recorder_unlock(ctx->rec);
	record_meta_int(ctx->rec, "nvml_devices", st->ndev);
	sampler_start(st);
	p->next_poll_ns = ctx->start_ns;
	return 0;
}

static void nvml_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct nvml_state *st = p->state;
	if (!st->thread_running)
		devices_sample(st);
	procs_sample(st, ctx, now_ns);
	p->next_poll_ns = now_ns + NVML_POLL_NS;
}

static void nvml_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct nvml_state *st = p->state;
	sampler_join(st);
	devices_sample(st);
	procs_sample(st, ctx, clock_mono_ns());
	record_meta_int(ctx->rec, "nvml_samples", st->samples);
	record_meta_int(ctx->rec, "nvml_proc_memory_rows", st->proc_rows);
	nvml_shutdown(st);
}

static void nvml_free(struct probe *p)
{
	struct nvml_state *st = p->state;
	if (st) {
		sampler_join(st);
		if (st->sync_made) {
			pthread_cond_destroy(&st->wake);
			pthread_mutex_destroy(&st->lock);
		}
		for (int i = 0; i < INS_N; i++)
			sqlite3_finalize(st->ins[i]);
		nvml_shutdown(st);
		free(st->dev);
		free(st->procs);
		free(st);
		p->state = NULL;
	}
}

static const char *const nvml_writes[] = {
	"nvml_devices",
	"nvml_proc_memory",
	"nvml_samples",
	"nvml_topology",
	NULL,
};

const struct probe_ops probe_nvml = {
	.name = "nvml",
	.writes = nvml_writes,
	.summary = "NVIDIA GPU utilisation, memory, PCIe, power, clocks and topology (NVML)",
	.enabled_by_default = 1,
	.quiet_when_unavailable = 1,
	.available = nvml_available,
	.start = nvml_start,
	.poll = nvml_poll,
	.stop = nvml_stop,
	.free = nvml_free,
};
