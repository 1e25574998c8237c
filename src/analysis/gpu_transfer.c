/* gpu_transfer: the findings about moving data (gpu_findings.h):
 *
 * - interconnect.transfer_bound: a device spends more time copying while no
 *   kernel runs than running kernels: the copies are the step's critical
 *   path instead of overlapping the computation;
 * - interconnect.low_bandwidth: large copies that do not come from pageable
 *   memory (interconnect.pageable_copies' own) run far below the link's
 *   peak (gpu_link.h);
 * - gpu.memory_imbalance: one device holds much more memory than the others
 *   (everything on cuda:0 by default, DataParallel's gathers). */
#include "../record/reader.h"
#include "gpu_findings.h"
#include "gpu_link.h"

#include <stdlib.h>
#include <string.h>

#define LOW_BANDWIDTH_PCT   50.0	/* of the link's peak */
#define IMBALANCE_RATIO	    1.5		/* the fullest device's peak over the others' mean ... */
#define IMBALANCE_MIN_BYTES (1LL << 30) /* ... and this much more */

/* Copies of device d as SQL on gpu_copies c. */
static void device_cond(char *buf, size_t len, int64_t device)
{
	snprintf(buf, len, "c.device = %lld AND c.kind IN ('HtoD', 'DtoH', 'DtoD', 'PtoP')",
		 (long long)device);
}

/* The device whose exposed copy time most exceeds its kernel time. */
static void transfer_bound_finding(struct analysis_ctx *ctx, const struct gpu_model *m,
				   double wall_s)
{
	const struct gpu_device_time *d = NULL;
	for (size_t i = 0; i < m->ndev; i++) {
		const struct gpu_device_time *x = &m->dev[i];
		if (x->copy_exposed_ns > x->kernel_ns &&
		    (!d || x->copy_exposed_ns - x->kernel_ns > d->copy_exposed_ns - d->kernel_ns))
			d = x;
	}
	double exposed_s = d ? (double)d->copy_exposed_ns / 1e9 : 0;
	if (!d || exposed_s < GPU_IDLE_MIN_S ||
	    (wall_s > 0 && exposed_s < GPU_IDLE_WALL_SHARE * wall_s))
		return;
	char cond[160];
	int64_t n;
	double bytes, secs;
	struct gpu_spans s = { 0 };
	device_cond(cond, sizeof(cond), d->device);
	gpu_copies_of(ctx->db, cond, &n, &bytes, &secs, &s);
	double kernel_s = (double)d->kernel_ns / 1e9;
	struct gpu_words w = GPU_WORDS_INIT;
	gpu_host_at(ctx->db, &s, GPU_HOST_SLACK_NS, &w);
	const char *at = w.loc.len ? w.loc.buf : "the code that copies to and from the GPU";
	strbuf_addf(&w.title,
		    "GPU %lld waits on copies more than it computes: %.2f s of copies "
		    "against %.2f s of kernels, copied at %s",
		    (long long)d->device, exposed_s, kernel_s, at);
	strbuf_addf(&w.ev,
		    "GPU %lld copied for %.2f s while no kernel ran on it (of %.2f s of copies "
		    "in all: %lld copies, %.1f MiB) and ran kernels for %.2f s: copy to kernel "
		    "time %.2f; the copying thread was %s",
		    (long long)d->device, exposed_s, (double)d->copy_busy_ns / 1e9, (long long)n,
		    bytes / 1048576.0, kernel_s,
		    kernel_s > 0 ? (double)d->copy_ns / (double)d->kernel_ns : 0, w.where.buf);
	strbuf_addf(&w.next,
		    "Take the copies at %s off the step's path: keep what every step reuses on "
		    "the GPU (move the model, the dataset when it fits, and constant tensors "
		    "there once, outside the loop); copy the next batch while this one computes "
		    "(DataLoader(pin_memory=True) and .to(device, non_blocking=True), or a "
		    "side torch.cuda.Stream); and send fewer bytes (uint8 or float16 inputs "
		    "converted on the GPU)",
		    at);
	/* Overlap hides copies up to the kernels' time; fewer bytes, the rest. */
	gpu_finding_add(ctx, "interconnect.transfer_bound", "interconnect", &w,
			"Transfer-bound: the steps wait on copies longer than they compute, and "
			"the copies run alone instead of under the kernels",
			"gpu.compute[].copy_exposed_s falls below kernel_s",
			exposed_s < kernel_s ? exposed_s
			: kernel_s > 0	     ? kernel_s
					     : exposed_s / 2,
			wall_s);
	free(s.v);
	gpu_words_release(&w);
}

/* One link's large copies that are not pageable: the worst against its
 * peak, when far below it. */
static void low_bandwidth_finding(struct analysis_ctx *ctx, double wall_s)
{
	sqlite3_stmt *st;
	char sql[1024];
	snprintf(sql, sizeof(sql),
		 "SELECT kind, CASE WHEN kind IN ('HtoD', 'DtoH') THEN device ELSE src_device END,"
		 " CASE WHEN kind IN ('HtoD', 'DtoH') THEN -1 ELSE dst_device END, COUNT(*),"
		 " SUM(bytes), SUM(end_ns - start_ns) / 1e9 FROM gpu_copies WHERE end_ns >"
		 " start_ns AND bytes >= %d AND NOT " GPU_PAGEABLE_COPY " AND (kind IN ('HtoD',"
		 " 'DtoH') OR (kind IN ('PtoP', 'DtoD') AND src_device != dst_device))"
		 " GROUP BY 1, 2, 3",
		 GPU_LARGE_COPY_BYTES);
	if (sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	char kind[8] = "";
	int64_t device = 0, peer = -1, n = 0;
	double bytes = 0, secs = 0, lost_s = 0;
	struct gpu_link link = { "", 0, "" };
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct gpu_link l;
		int64_t dev = sqlite3_column_int64(st, 1), p = sqlite3_column_int64(st, 2);
		int64_t count = sqlite3_column_int64(st, 3);
		double b = sqlite3_column_double(st, 4), t = sqlite3_column_double(st, 5);
		if (count < GPU_COPY_MIN_CALLS || t <= 0 ||
		    (wall_s > 0 && t < GPU_COPY_WALL_SHARE * wall_s) ||
		    gpu_link_of(ctx->db, dev, p, &l) ||
		    100.0 * b / t / 1e9 >= LOW_BANDWIDTH_PCT * l.peak_gb_per_s)
			continue;
		double lost = t - b / (GPU_LINK_ACHIEVABLE * l.peak_gb_per_s * 1e9);
		if (lost <= lost_s)
			continue;
		snprintf(kind, sizeof(kind), "%s", (const char *)sqlite3_column_text(st, 0));
		device = dev;
		peer = p;
		n = count;
		bytes = b;
		secs = t;
		lost_s = lost;
		link = l;
	}
	sqlite3_finalize(st);
	if (lost_s <= 0)
		return;
	char cond[320];
	int64_t n2;
	double b2, t2;
	struct gpu_spans s = { 0 };
	if (peer < 0)
		snprintf(cond, sizeof(cond),
			 "c.kind = '%s' AND c.device = %lld AND c.bytes >= %d AND NOT %s", kind,
			 (long long)device, GPU_LARGE_COPY_BYTES, GPU_PAGEABLE_COPY);
	else
		snprintf(cond, sizeof(cond),
			 "c.kind = '%s' AND c.src_device = %lld AND c.dst_device = %lld AND c.bytes"
			 " >= %d",
			 kind, (long long)device, (long long)peer, GPU_LARGE_COPY_BYTES);
	gpu_copies_of(ctx->db, cond, &n2, &b2, &t2, &s);
	double gbps = bytes / secs / 1e9;
	struct gpu_words w = GPU_WORDS_INIT;
	gpu_host_at(ctx->db, &s, GPU_HOST_SLACK_NS, &w);
	const char *at = w.loc.len ? w.loc.buf : "the code that copies";
	char between[64];
	if (peer < 0)
		snprintf(between, sizeof(between), "%s on GPU %lld", kind, (long long)device);
	else
		snprintf(between, sizeof(between), "%s from GPU %lld to GPU %lld", kind,
			 (long long)device, (long long)peer);
	strbuf_addf(&w.title, "Large %s copies at %s reach %.0f%% of the link's speed", between, at,
		    100.0 * gbps / link.peak_gb_per_s);
	strbuf_addf(
	    &w.ev,
	    "%lld copies of 1 MiB or more (%s, none from pageable memory) moved %.1f MiB "
	    "in %.3f s: %.2f GB/s, against %.1f GB/s for %s (%s); the copying thread was "
	    "%s",
	    (long long)n, between, bytes / 1048576.0, secs, gbps, link.peak_gb_per_s, link.name,
	    !strcmp(link.source, "nvml") ? "as NVML reads the link"
					 : "assumed from the GPU's architecture: no NVML reading",
	    w.where.buf);
	strbuf_addf(&w.next,
		    "Find what slows the link for the copies at %s: `nvidia-smi -q -d PCI` under "
		    "load shows the link's current generation and width (a narrower or older one "
		    "than %s means the card's slot, riser or BIOS setting); run the process on "
		    "the GPU's NUMA node (`numactl --cpunodebind=N --membind=N`, N from "
		    "`nvidia-smi topo -m`); and do not run several copies over the link at once",
		    at, link.name);
	gpu_finding_add(ctx, "interconnect.low_bandwidth", "interconnect", &w,
			"Low link bandwidth: large pinned copies run at 70-90% of the link's peak; "
			"far below it, the link trained slower or narrower than it can, the host "
			"memory is across a socket, or copies share the link",
			"interconnect.links[].achieved_pct rises", lost_s, wall_s);
	free(s.v);
	gpu_words_release(&w);
}

void gpu_transfer_findings(struct analysis_ctx *ctx, const struct gpu_model *m, double wall_s)
{
	transfer_bound_finding(ctx, m, wall_s);
	low_bandwidth_finding(ctx, wall_s);
}

void gpu_memory_finding(struct analysis_ctx *ctx, double wall_s)
{
	struct gpu_memory_use *v;
	size_t n, full = 0;
	(void)wall_s;
	if (gpu_memory_load(ctx->db, &v, &n))
		return;
	for (size_t i = 1; i < n; i++)
		if (v[i].peak_bytes > v[full].peak_bytes)
			full = i;
	double others = 0;
	for (size_t i = 0; i < n; i++)
		if (i != full)
			others += (double)v[i].peak_bytes / (double)(n - 1);
	double peak = n ? (double)v[full].peak_bytes : 0, excess = peak - others;
	if (n < 2 || peak < IMBALANCE_RATIO * others || excess < (double)IMBALANCE_MIN_BYTES) {
		free(v);
		return;
	}
	struct gpu_spans s = { 0 };
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "SELECT a.tid, a.start_ns, a.end_ns FROM gpu_memory g JOIN gpu_api a ON a.pid ="
		 " g.pid AND a.corr = g.corr WHERE g.device = %lld AND g.op = 'alloc' AND g.kind ="
		 " 'device'",
		 (long long)v[full].device);
	if (recording_has_table(ctx->db, "gpu_api"))
		gpu_spans_query(ctx->db, sql, &s);
	struct gpu_words w = GPU_WORDS_INIT;
	gpu_host_at(ctx->db, &s, GPU_HOST_SLACK_NS, &w);
	const char *at = w.loc.len ? w.loc.buf : "the code that allocates on the GPU";
	strbuf_addf(&w.title, "GPU %lld holds %.1fx the memory of the other GPUs, allocated at %s",
		    (long long)v[full].device, others > 0 ? peak / others : 0, at);
	strbuf_addf(&w.ev, "GPU %lld peaked at %.2f GiB allocated through CUDA",
		    (long long)v[full].device, peak / 1073741824.0);
	if (v[full].capacity_bytes)
		strbuf_addf(&w.ev, " (%.0f%% of its memory)",
			    100.0 * peak / (double)v[full].capacity_bytes);
	strbuf_addf(&w.ev, ", by %lld process%s; the %zu others %.2f GiB on average (",
		    (long long)v[full].pids, v[full].pids == 1 ? "" : "es", n - 1,
		    others / 1073741824.0);
	for (size_t i = 0, k = 0; i < n; i++)
		if (i != full)
			strbuf_addf(&w.ev, "%sGPU %lld %.2f GiB", k++ ? ", " : "",
				    (long long)v[i].device, (double)v[i].peak_bytes / 1073741824.0);
	strbuf_addf(&w.ev, "); the allocating thread was %s", w.where.buf);
	if (v[full].pids > 1)
		strbuf_addf(
		    &w.next,
		    "Give each process its own GPU before its first CUDA call: "
		    "torch.cuda.set_device(local_rank) (or CUDA_VISIBLE_DEVICES per rank) "
		    "at the start, torch.load(..., map_location=f\"cuda:{local_rank}\"), and "
		    "device=f\"cuda:{local_rank}\" instead of \"cuda\" at %s",
		    at);
	else
		strbuf_addf(
		    &w.next,
		    "Spread what GPU %lld holds alone at %s: replace nn.DataParallel by "
		    "DistributedDataParallel (DataParallel gathers every output and the loss "
		    "on the first GPU), compute the loss and metrics on each GPU, and create "
		    "the extra tensors on the device of the data they serve",
		    (long long)v[full].device, at);
	struct finding f = {
		.id = "gpu.memory_imbalance",
		.title = w.title.buf,
		.dimension = "gpu",
		.location = w.loc.len ? w.loc.buf : "the GPUs' memory",
		.evidence = w.ev.buf,
		.diagnosis =
		    v[full].pids > 1
			? "Memory imbalance: several processes put their CUDA context and "
			  "tensors on the same GPU (the default device, cuda:0)"
			: "Memory imbalance: one GPU holds what the others do not, so it runs "
			  "out first and bounds the batch size of all",
		.next_step = w.next.buf,
		.validation = "gpu.memory[].peak_vs_mean falls toward 1",
		.impact_s = -1,
		.impact_bytes = excess,
		.impact_pct = 100.0 * excess / peak,
		.blames_code = w.loc.len ? FINDING_BLAMES_CODE : 0,
	};
	findings_add(ctx->findings, &f);
	free(s.v);
	gpu_words_release(&w);
	free(v);
}
