/* cuda_host: the host side the cuda and nvtx probes share (cuda_host.h). */
#include "cuda_host.h"
#include "agent_dir.h"
#include "../util/strbuf.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

const char *cuda_host_injection_taken(const struct probe_ctx *ctx)
{
	const char *v = probe_env_get(ctx, "CUDA_INJECTION64_PATH");
	struct strbuf ours = STRBUF_INIT;
	int taken = v && *v && strcmp(v, "none");
	/* the cuda probe, started before the nvtx probe asks, set it to the agent */
	if (taken && !agent_find(CUDA_HOST_AGENT_ENV, CUDA_HOST_AGENT_FILE, &ours))
		taken = strcmp(v, ours.buf) != 0;
	strbuf_release(&ours);
	return taken ? v : NULL;
}

int cuda_host_driver_present(void)
{
	const char *force = getenv("SONDE_CUDA_FORCE");
	if (force && !strcmp(force, "1"))
		return 1;
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!h)
		return 0;
	dlclose(h);
	return 1;
}

int cuda_host_cuda_usable(const struct probe_ctx *ctx)
{
	return cuda_host_driver_present() && !cuda_host_injection_taken(ctx);
}

void cuda_host_nvtx_inject(struct probe_ctx *ctx, const char *agent, const char *probe)
{
	struct strbuf sb = STRBUF_INIT;
	const char *v = probe_env_get(ctx, "NVTX_INJECTION64_PATH");
	if (v && *v) {
		strbuf_addf(&sb,
			    "NVTX_INJECTION64_PATH is already set to %s (another tool): the "
			    "program's NVTX ranges are not recorded",
			    v);
		record_note(ctx->rec, 0, probe, "info", sb.buf);
	} else {
		probe_env_set(ctx, "NVTX_INJECTION64_PATH", agent);
		strbuf_addf(&sb,
			    "NVTX_INJECTION64_PATH=%s: the same agent, which NVTX loads at the "
			    "program's first NVTX call to record its ranges and marks (sonde.h "
			    "and the sonde Python module find it there too); --no-agent turns "
			    "it off",
			    agent);
		record_changelog(ctx->rec, "environment", "set", sb.buf, NULL);
	}
	strbuf_release(&sb);
}

void cuda_host_nvtx_bind(sqlite3_stmt *q, pid_t pid, const struct gpu_record *r, int64_t t0_ns)
{
	/* N: start end tid depth closed type domain message */
	sqlite3_bind_int64(q, 1, pid);
	sqlite3_bind_int64(q, 2, r->n[2]);
	sqlite3_bind_int64(q, 3, r->n[0] - t0_ns);
	sqlite3_bind_int64(q, 4, r->n[1] - t0_ns);
	sqlite3_bind_int64(q, 5, r->n[3]);
	sqlite3_bind_int64(q, 6, r->n[4]);
	for (int i = 0; i < 3; i++)
		sqlite3_bind_text(q, 7 + i, r->s[i], (int)r->slen[i], SQLITE_TRANSIENT);
}
