/* nvtx probe: the program's NVTX ranges (and sonde.h's and the sonde Python
 * module's regions) where the cuda probe does not run: no NVIDIA driver, or
 * another CUDA tool in CUDA_INJECTION64_PATH. It points
 * NVTX_INJECTION64_PATH at the CUDA agent, which NVTX loads at the
 * program's first NVTX call without any GPU, and stores the agent's N lines
 * (gpu_wire.h) into nvtx_ranges, as the cuda probe does with a driver
 * (cuda_host.h); every other record of the file is the cuda probe's and is
 * passed over. The cuda probe's note on the GPU is not touched. */
#define LOG_DOMAIN "nvtx"
#include "probe.h"
#include "agent_dir.h"
#include "agent_reader.h"
#include "cuda_host.h"
#include "gpu_wire.h"
#include "../record/recorder.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <stdlib.h>

#define NVTX_POLL_NS	   (200 * 1000000LL)
#define NVTX_READ_PER_POLL (4 * 1024 * 1024) /* bytes per file; the rest waits a poll */
#define NVTX_ROWS_MAX	   2000000LL

static const char *const nvtx_sql[] = { CUDA_HOST_NVTX_INSERT };

static int nvtx_line(void *arg, struct agent_file *f, const char *line, size_t len);

static const struct agent_reader_spec nvtx_spec = {
	.probe = "nvtx",
	.agent = "the CUDA agent's NVTX part",
	.schema = CUDA_HOST_NVTX_SCHEMA,
	.sql = nvtx_sql,
	.n_sql = 1,
	.prefix = "cuda-",
	.line_max = GPU_LINE_MAX,
	.read_max = NVTX_READ_PER_POLL,
	.rows_max = NVTX_ROWS_MAX,
	.line = nvtx_line,
};

static int nvtx_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT;
	int rc = -1;
	if (ctx->cfg->no_agent)
		strbuf_addstr(why, "turned off by --no-agent");
	else if (!ctx->env)
		strbuf_addstr(why, "NVTX loads sonde's agent only into a command launched by sonde "
				   "(through NVTX_INJECTION64_PATH)");
	else if (cuda_host_cuda_usable(ctx))
		strbuf_addstr(why, "the cuda probe records the NVTX ranges here");
	else if (agent_find(CUDA_HOST_AGENT_ENV, CUDA_HOST_AGENT_FILE, &path))
		strbuf_addf(why,
			    "the CUDA agent %s is missing: build sonde where the NVTX and "
			    "CUPTI headers are (docs/regions.md)",
			    path.buf);
	else
		rc = 0;
	strbuf_release(&path);
	return rc;
}

static int nvtx_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct agent_reader *ar = xcalloc(1, sizeof(*ar));
	struct strbuf path = STRBUF_INIT, sb = STRBUF_INIT;
	int rc = -1;
	p->state = ar;
	if (agent_find(CUDA_HOST_AGENT_ENV, CUDA_HOST_AGENT_FILE, &path)) {
		strbuf_addf(why, "the CUDA agent %s is missing", path.buf);
		goto out;
	}
	if (agent_reader_start(ar, ctx, &nvtx_spec, why))
		goto out;
	probe_env_set(ctx, "SONDE_CUDA_DIR", ar->dir);
	strbuf_addf(&sb,
		    "SONDE_CUDA_DIR=%s: where sonde's agent writes the program's NVTX "
		    "ranges (removed after the run)",
		    ar->dir);
	record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	cuda_host_nvtx_inject(ctx, path.buf, "nvtx");
	p->next_poll_ns = ctx->start_ns + NVTX_POLL_NS;
	rc = 0;
out:
	strbuf_release(&path);
	strbuf_release(&sb);
	return rc;
}

static int nvtx_line(void *arg, struct agent_file *f, const char *line, size_t len)
{
	struct agent_reader *ar = arg;
	struct gpu_record r;
	if (gpu_record_parse(line, len, &r))
		return -1;
	if (r.kind != 'N' || agent_reader_row(ar))
		return 0;
	cuda_host_nvtx_bind(ar->ins[0], f->pid, &r, ar->ctx->start_ns);
	recorder_step(ar->ctx->rec, ar->ins[0]);
	return 0;
}

static void nvtx_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	agent_reader_read(p->state, ctx, 0, p->state);
	p->next_poll_ns = now_ns + NVTX_POLL_NS;
}

static void nvtx_stop(struct probe *p, struct probe_ctx *ctx)
{
	agent_reader_read(p->state, ctx, 1, p->state);
	agent_reader_notes(p->state, ctx);
}

static void nvtx_free(struct probe *p)
{
	if (!p->state)
		return;
	agent_reader_release(p->state, NULL);
	free(p->state);
	p->state = NULL;
}

static const char *const nvtx_writes[] = { "nvtx_ranges", NULL };

const struct probe_ops probe_nvtx = {
	.name = "nvtx",
	.writes = nvtx_writes,
	.summary = "the program's NVTX ranges and sonde regions, without a GPU (CUDA agent)",
	.enabled_by_default = 1,
	.quiet_when_unavailable = 1,
	.available = nvtx_available,
	.start = nvtx_start,
	.poll = nvtx_poll,
	.stop = nvtx_stop,
	.free = nvtx_free,
};
