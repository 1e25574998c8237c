/* cuda probe: the CUDA agent's records (kernels, copies, memsets, runtime
 * calls, synchronisations, device allocations) read into the gpu_* tables,
 * and the program's NVTX ranges into nvtx_ranges (docs/gpu.md).
 *
 * The agent (src/agents/cuda, build/libsonde_cuda.so) goes into every CUDA
 * process of the command through CUDA_INJECTION64_PATH, which the driver
 * reads at cuInit, and through NVTX_INJECTION64_PATH, which NVTX reads at
 * the program's first NVTX call. Each process writes cuda-PID.txt into the
 * run's agent directory (agent_dir.h, shared with the other agents) in the
 * format of gpu_wire.h; this probe follows those files as they grow. Times
 * are made relative to the run's start. Rows are bounded (CUDA_ROWS_MAX);
 * the rest are counted. */
#define LOG_DOMAIN "cuda"
#include "probe.h"
#include "agent_dir.h"
#include "agent_reader.h"
#include "cuda_host.h"
#include "gpu_wire.h"
#include "../record/recorder.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define CUDA_POLL_NS (200 * 1000000LL)
#define CUDA_READ_PER_POLL (16 * 1024 * 1024) /* bytes per file; the rest waits a poll */
#define CUDA_ROWS_MAX 8000000LL

static const char cuda_schema[] =
	"CREATE TABLE IF NOT EXISTS gpu_processes(pid INTEGER PRIMARY KEY, cupti_version INTEGER,"
	" status TEXT, records_dropped INTEGER, bad_lines INTEGER);"
	"CREATE TABLE IF NOT EXISTS gpu_devices(pid INTEGER, device INTEGER, name TEXT,"
	" sm_count INTEGER, mem_bytes INTEGER, cc_major INTEGER, cc_minor INTEGER,"
	" PRIMARY KEY(pid, device));"
	"CREATE TABLE IF NOT EXISTS gpu_kernels(pid INTEGER, device INTEGER, stream INTEGER,"
	" corr INTEGER, start_ns INTEGER, end_ns INTEGER, name TEXT, grid_x INTEGER,"
	" grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,"
	" registers INTEGER, smem_static INTEGER, smem_dynamic INTEGER);"
	"CREATE TABLE IF NOT EXISTS gpu_copies(pid INTEGER, device INTEGER, stream INTEGER,"
	" corr INTEGER, start_ns INTEGER, end_ns INTEGER, bytes INTEGER, async INTEGER,"
	" src_device INTEGER, dst_device INTEGER, kind TEXT, src_kind TEXT, dst_kind TEXT);"
	"CREATE TABLE IF NOT EXISTS gpu_memsets(pid INTEGER, device INTEGER, stream INTEGER,"
	" corr INTEGER, start_ns INTEGER, end_ns INTEGER, bytes INTEGER);"
	"CREATE TABLE IF NOT EXISTS gpu_api(pid INTEGER, tid INTEGER, corr INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, ret INTEGER, name TEXT);"
	"CREATE TABLE IF NOT EXISTS gpu_syncs(pid INTEGER, stream INTEGER, corr INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, type TEXT);"
	"CREATE TABLE IF NOT EXISTS gpu_memory(pid INTEGER, device INTEGER, t_ns INTEGER,"
	" address INTEGER, bytes INTEGER, corr INTEGER, op TEXT, kind TEXT);"
	CUDA_HOST_NVTX_SCHEMA;

enum {
	INS_PROC,
	INS_DEV,
	INS_KERNEL,
	INS_COPY,
	INS_MEMSET,
	INS_API,
	INS_SYNC,
	INS_MEM,
	INS_NVTX,
	INS_N
};

static const char *const ins_sql[INS_N] = {
	"INSERT OR REPLACE INTO gpu_processes VALUES(?,?,?,?,?)",
	"INSERT OR REPLACE INTO gpu_devices VALUES(?,?,?,?,?,?,?)",
	"INSERT INTO gpu_kernels VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO gpu_copies VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO gpu_memsets VALUES(?,?,?,?,?,?,?)",
	"INSERT INTO gpu_api VALUES(?,?,?,?,?,?,?)",
	"INSERT INTO gpu_syncs VALUES(?,?,?,?,?,?)",
	"INSERT INTO gpu_memory VALUES(?,?,?,?,?,?,?,?)",
	CUDA_HOST_NVTX_INSERT,
};

/* What a process's file said about it (agent_file.user). */
struct cuda_proc {
	int64_t cupti_version;
	char *status; /* the Q reason; NULL: ok */
	int64_t records_dropped;
};

static int line_apply(void *arg, struct agent_file *f, const char *line, size_t len);

static const struct agent_reader_spec cuda_spec = {
	.probe = "cuda",
	.agent = "the CUDA agent",
	.schema = cuda_schema,
	.sql = ins_sql,
	.n_sql = INS_N,
	.prefix = "cuda-",
	.line_max = GPU_LINE_MAX,
	.read_max = CUDA_READ_PER_POLL,
	.user_size = sizeof(struct cuda_proc),
	.rows_max = CUDA_ROWS_MAX,
	.line = line_apply,
};

struct cuda_state {
	struct agent_reader ar; /* its statements: ins_sql's */
};

static int cuda_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT;
	const char *taken;
	int rc = -1;
	if (ctx->cfg->no_agent)
		strbuf_addstr(why, "turned off by --no-agent");
	else if (!ctx->env)
		strbuf_addstr(why, "the CUDA agent needs the command launched by sonde (it is "
				   "loaded through CUDA_INJECTION64_PATH)");
	else if (!cuda_host_driver_present())
		strbuf_addstr(why, "no NVIDIA driver here (libcuda.so.1 not found): the GPU side is "
				   "not recorded");
	else if ((taken = cuda_host_injection_taken(ctx)))
		strbuf_addf(why, "CUDA_INJECTION64_PATH is already set to %s (another CUDA tool): "
				 "the GPU side is not recorded",
			    taken);
	else if (agent_find(CUDA_HOST_AGENT_ENV, CUDA_HOST_AGENT_FILE, &path))
		strbuf_addf(why, "the CUDA agent %s is missing: build sonde where the CUPTI "
				 "headers are (CUDA_HOME, docs/gpu.md)",
			    path.buf);
	else
		rc = 0;
	strbuf_release(&path);
	return rc;
}

static int cuda_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct cuda_state *st = xcalloc(1, sizeof(*st));
	p->state = st;
	struct strbuf path = STRBUF_INIT, sb = STRBUF_INIT;
	int rc = -1;
	if (agent_find(CUDA_HOST_AGENT_ENV, CUDA_HOST_AGENT_FILE, &path)) {
		strbuf_addf(why, "the CUDA agent %s is missing", path.buf);
		goto out;
	}
	if (agent_reader_start(&st->ar, ctx, &cuda_spec, why))
		goto out;
	probe_env_set(ctx, "CUDA_INJECTION64_PATH", path.buf);
	probe_env_set(ctx, "SONDE_CUDA_DIR", st->ar.dir);
	strbuf_addf(&sb, "CUDA_INJECTION64_PATH=%s: sonde's CUDA agent, which the NVIDIA driver "
			 "loads into every CUDA process to record kernels, copies, memsets, "
			 "runtime calls, synchronisations and device allocations with CUPTI; "
			 "SONDE_CUDA_DIR=%s: where it writes them (removed after the run); "
			 "--no-agent turns it off",
		    path.buf, st->ar.dir);
	record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	cuda_host_nvtx_inject(ctx, path.buf, "cuda");
	p->next_poll_ns = ctx->start_ns + CUDA_POLL_NS;
	rc = 0;
out:
	strbuf_release(&path);
	strbuf_release(&sb);
	return rc;
}

static void bind_str(sqlite3_stmt *q, int col, const struct gpu_record *r, int i)
{
	sqlite3_bind_text(q, col, r->s[i], (int)r->slen[i], SQLITE_TRANSIENT);
}

/* Binds n[0..count) to columns col.. ; the next column. */
static int bind_ints(sqlite3_stmt *q, int col, const int64_t *n, int count)
{
	for (int i = 0; i < count; i++)
		sqlite3_bind_int64(q, col++, n[i]);
	return col;
}

/* The columns every timed record starts with: pid, the ids that follow
 * start and end on the line (nids of them), then start_ns and end_ns on the
 * run's clock. The next column. */
static int bind_span(sqlite3_stmt *q, pid_t pid, const int64_t *n, int nids, int64_t t0)
{
	sqlite3_bind_int64(q, 1, pid);
	int col = bind_ints(q, 2, n + 2, nids);
	sqlite3_bind_int64(q, col++, n[0] - t0);
	sqlite3_bind_int64(q, col++, n[1] - t0);
	return col;
}

/* A record of a process's own (V, Q, X): no row of its own. */
static void proc_apply(struct cuda_proc *pr, const struct gpu_record *r)
{
	if (r->kind == 'V') {
		pr->cupti_version = r->n[2];
	} else if (r->kind == 'Q') {
		free(pr->status);
		pr->status = xstrndup(r->s[0], r->slen[0]);
	} else if (r->kind == 'X' && r->slen[0] == 15 &&
		   !memcmp(r->s[0], "records_dropped", 15)) {
		pr->records_dropped = r->n[0];
	}
}

/* One record into its table; times made relative to the run's start. */
static void record_apply(struct cuda_state *st, struct probe_ctx *ctx, struct agent_file *f,
			 const struct gpu_record *r)
{
	const int64_t *n = r->n;
	int64_t t0 = ctx->start_ns;
	sqlite3_stmt *q;
	int col;
	if (strchr("VQX", r->kind)) {
		proc_apply(f->user, r);
		return;
	}
	if (agent_reader_row(&st->ar))
		return;
	switch (r->kind) {
	case 'D': /* device sm_count mem_bytes cc_major cc_minor name */
		q = st->ar.ins[INS_DEV];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[0]);
		bind_str(q, 3, r, 0);
		bind_ints(q, 4, n + 1, 4);
		break;
	case 'K': /* start end device stream corr gx gy gz bx by bz regs smem_s smem_d name */
		q = st->ar.ins[INS_KERNEL];
		bind_str(q, bind_span(q, f->pid, n, 3, t0), r, 0);
		bind_ints(q, 8, n + 5, 9);
		break;
	case 'M': /* start end device stream corr bytes async src dst kind src_kind dst_kind */
		q = st->ar.ins[INS_COPY];
		col = bind_ints(q, bind_span(q, f->pid, n, 3, t0), n + 5, 4);
		for (int i = 0; i < 3; i++)
			bind_str(q, col + i, r, i);
		break;
	case 'S': /* start end device stream corr bytes */
		q = st->ar.ins[INS_MEMSET];
		bind_ints(q, bind_span(q, f->pid, n, 3, t0), n + 5, 1);
		break;
	case 'A': /* start end tid corr ret name */
		q = st->ar.ins[INS_API];
		bind_str(q, bind_ints(q, bind_span(q, f->pid, n, 2, t0), n + 4, 1), r, 0);
		break;
	case 'Y': /* start end stream corr type */
		q = st->ar.ins[INS_SYNC];
		bind_str(q, bind_span(q, f->pid, n, 2, t0), r, 0);
		break;
	case 'N': /* start end tid depth closed type domain message */
		q = st->ar.ins[INS_NVTX];
		cuda_host_nvtx_bind(q, f->pid, r, t0);
		break;
	case 'G': /* t device address bytes corr op kind */
		q = st->ar.ins[INS_MEM];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, n[1]);
		sqlite3_bind_int64(q, 3, n[0] - t0);
		bind_ints(q, 4, n + 2, 3);
		bind_str(q, 7, r, 0);
		bind_str(q, 8, r, 1);
		break;
	default:
		return;
	}
	recorder_step(ctx->rec, q);
}

static int line_apply(void *arg, struct agent_file *f, const char *line, size_t len)
{
	struct cuda_state *st = arg;
	struct gpu_record r;
	if (gpu_record_parse(line, len, &r))
		return -1;
	record_apply(st, st->ar.ctx, f, &r);
	return 0;
}

static void cuda_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct cuda_state *st = p->state;
	agent_reader_read(&st->ar, ctx, 0, st);
	p->next_poll_ns = now_ns + CUDA_POLL_NS;
}

/* The run's notes: each process whose CUPTI did not record, and what was lost. */
static void notes_write(struct cuda_state *st, struct probe_ctx *ctx, int64_t dropped)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < st->ar.files.n; i++) {
		const struct cuda_proc *pr = st->ar.files.f[i].user;
		if (!pr || !pr->status)
			continue;
		strbuf_reset(&sb);
		strbuf_addf(&sb, "process %d: %s; the GPU side is from NVML only",
			    (int)st->ar.files.f[i].pid, pr->status);
		record_note(ctx->rec, 0, "cuda", "warning", sb.buf);
	}
	if (dropped) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "CUPTI dropped %lld GPU activity records (its buffers were full)",
			    (long long)dropped);
		record_note(ctx->rec, 0, "cuda", "warning", sb.buf);
	}
	strbuf_release(&sb);
	agent_reader_notes(&st->ar, ctx);
}

static void cuda_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct cuda_state *st = p->state;
	static const struct cuda_proc none;
	int64_t dropped = 0;
	agent_reader_read(&st->ar, ctx, 1, st);
	for (size_t i = 0; i < st->ar.files.n; i++) {
		struct agent_file *f = &st->ar.files.f[i];
		const struct cuda_proc *pr = f->user ? f->user : &none;
		sqlite3_stmt *q = st->ar.ins[INS_PROC];
		sqlite3_bind_int64(q, 1, f->pid);
		sqlite3_bind_int64(q, 2, pr->cupti_version);
		sqlite3_bind_text(q, 3, pr->status ? pr->status : "ok", -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(q, 4, pr->records_dropped);
		sqlite3_bind_int64(q, 5, f->bad_lines);
		recorder_step(ctx->rec, q);
		dropped += pr->records_dropped;
	}
	record_meta_int(ctx->rec, "gpu_processes", (int64_t)st->ar.files.n);
	notes_write(st, ctx, dropped);
}

static void cuda_proc_free(void *p)
{
	struct cuda_proc *pr = p;
	if (pr)
		free(pr->status);
	free(pr);
}

static void cuda_free(struct probe *p)
{
	struct cuda_state *st = p->state;
	if (!st)
		return;
	agent_reader_release(&st->ar, cuda_proc_free);
	free(st);
	p->state = NULL;
}

static const char *const cuda_writes[] = {
	"gpu_api",
	"gpu_copies",
	"gpu_devices",
	"gpu_kernels",
	"gpu_memory",
	"gpu_memsets",
	"gpu_processes",
	"gpu_syncs",
	"nvtx_ranges",
	NULL,
};

const struct probe_ops probe_cuda = {
	.name = "cuda",
	.writes = cuda_writes,
	.summary = "CUDA kernels, copies, runtime calls and device memory (CUPTI agent)",
	.enabled_by_default = 1,
	.quiet_when_unavailable = 1,
	.available = cuda_available,
	.start = cuda_start,
	.poll = cuda_poll,
	.stop = cuda_stop,
	.free = cuda_free,
};
