/* gpu_findings: what a senior engineer would tell the owner of a GPU
 * program, from the cuda probe's tables (docs/gpu.md), each at the host code
 * that caused it (gpu_host.h):
 *
 * - gpu.launch_bound: the GPU idles between many short kernels while the
 *   host launches them one by one (a Python loop over a batch's items);
 * - gpu.host_bound: the GPU idles while the host does other work between
 *   steps (preprocessing, loading);
 * - gpu.sync: the host waits for the GPU over and over (.item(), .cpu(), a
 *   print of a CUDA tensor), and the GPU runs dry after each wait;
 * - interconnect.pageable_copies: host-device copies from or to pageable
 *   memory, staged by the driver at a fraction of the link's speed;
 * - interconnect.small_copies: thousands of tiny copies, each a full call;
 * - and those of gpu_transfer.c (gpu_findings.h).
 *
 * Thresholds are shares of the run, so that a short test and a long job
 * read alike; each is named below. */
#include "../record/reader.h"
#include "../util/strbuf.h"
#include "analysis.h"
#include "gpu_findings.h"
#include "gpu_host.h"
#include "gpu_model.h"

#include <stdlib.h>
#include <string.h>

#define IDLE_WINDOW_SHARE  0.2	     /* the GPU idle GPU_IDLE_MIN_S, this share of its window */
#define LAUNCH_GAP_NS	   1000000LL /* a launch gap: after a tiny kernel, and this short ... */
#define LAUNCH_MIN_GAPS	   500	     /* ... and this many of them */
#define SYNC_MIN_CALLS	   20
#define SYNC_AFTER_NS	   200000LL /* a gap starting this soon after a wait follows from it */
#define SMALL_MIN_CALLS	   1000
#define SMALL_WALL_SHARE   0.03
#define LAUNCH_THREADS_MAX 4

void gpu_words_release(struct gpu_words *w)
{
	strbuf_release(&w->loc);
	strbuf_release(&w->where);
	strbuf_release(&w->title);
	strbuf_release(&w->ev);
	strbuf_release(&w->next);
}

void gpu_spans_add(struct gpu_spans *s, int64_t tid, int64_t start_ns, int64_t end_ns)
{
	if (s->n == s->alloc) {
		s->alloc = s->alloc ? 2 * s->alloc : 256;
		s->v = xrealloc(s->v, s->alloc * sizeof(*s->v));
	}
	s->v[s->n++] = (struct gpu_span){ tid, start_ns, end_ns };
}

/* Rows (tid, start_ns, end_ns) of sql as spans. */
void gpu_spans_query(sqlite3 *db, const char *sql, struct gpu_spans *s)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW)
		gpu_spans_add(s, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			      sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
}

/* "at F" (the host code in spans), or "on the host" when no sample says. */
void gpu_host_at(sqlite3 *db, struct gpu_spans *s, int64_t slack_ns, struct gpu_words *w)
{
	struct gpu_host h;
	if (gpu_host_where(db, s->v, s->n, slack_ns, &w->loc, &h))
		strbuf_addstr(&w->where, "on the host");
	else
		strbuf_addf(&w->where, "in %s (%lld of %lld host samples then)", w->loc.buf,
			    (long long)h.at_samples, (long long)h.samples);
}

void gpu_finding_add(struct analysis_ctx *ctx, const char *id, const char *dimension,
		     const struct gpu_words *w, const char *diagnosis, const char *validation,
		     double stake_s, double wall_s)
{
	struct finding f = {
		.id = id,
		.title = w->title.buf,
		.dimension = dimension,
		.location = w->loc.len ? w->loc.buf : "the GPU's timeline",
		.evidence = w->ev.buf,
		.diagnosis = diagnosis,
		.next_step = w->next.buf,
		.validation = validation,
		.blames_code = w->loc.len ? FINDING_BLAMES_CODE : 0,
	};
	findings_add_time(ctx->findings, &f, stake_s, wall_s);
}

/* A gap of the launch kind: short, after a short busy stretch (a tiny
 * kernel): the GPU waited for the next launch, not for other host work. */
static int gap_is_launch(const struct gpu_gap *g)
{
	return g->end_ns - g->start_ns < LAUNCH_GAP_NS && g->busy_before_ns < GPU_TINY_BUSY_NS;
}

/* The GPU idle in the gaps of one kind (launch or not) that no wait
 * claimed (less what they claimed of it): one finding, at the host code the
 * launching threads ran then. */
static void idle_finding(struct analysis_ctx *ctx, const struct gpu_device_time *d,
			 const int64_t *claimed_ns, int launch, double wall_s)
{
	int64_t idle_ns = 0, before_ns = 0, n = 0;
	for (size_t g = 0; g < d->ngaps; g++)
		if (gap_is_launch(&d->gaps[g]) == launch &&
		    d->gaps[g].end_ns - d->gaps[g].start_ns > claimed_ns[g]) {
			idle_ns += d->gaps[g].end_ns - d->gaps[g].start_ns - claimed_ns[g];
			before_ns += d->gaps[g].busy_before_ns;
			n++;
		}
	for (size_t g = 0; launch && g < d->nshort; g++) {
		idle_ns += d->short_gaps[g].end_ns - d->short_gaps[g].start_ns;
		before_ns += d->short_gaps[g].busy_before_ns;
		n++;
	}
	double idle_s = (double)idle_ns / 1e9, window_s = (double)(d->last_ns - d->first_ns) / 1e9;
	if (idle_s < GPU_IDLE_MIN_S || (wall_s > 0 && idle_s < GPU_IDLE_WALL_SHARE * wall_s) ||
	    (launch ? n < LAUNCH_MIN_GAPS : idle_s < IDLE_WINDOW_SHARE * window_s))
		return;
	struct gpu_spans launchers = { 0 }, s = { 0 };
	char sql[512];
	snprintf(
	    sql, sizeof(sql),
	    "SELECT tid, COUNT(*), 0 FROM gpu_api WHERE %s GROUP BY tid ORDER BY 2 DESC LIMIT %d",
	    GPU_LAUNCH_CALLS, LAUNCH_THREADS_MAX);
	gpu_spans_query(ctx->db, sql, &launchers);
	for (size_t t = 0; t < launchers.n; t++) {
		for (size_t g = 0; g < d->ngaps; g++)
			if (gap_is_launch(&d->gaps[g]) == launch &&
			    d->gaps[g].end_ns - d->gaps[g].start_ns > claimed_ns[g])
				gpu_spans_add(&s, launchers.v[t].tid, d->gaps[g].start_ns,
					      d->gaps[g].end_ns);
		for (size_t g = 0; launch && g < d->nshort; g++)
			gpu_spans_add(&s, launchers.v[t].tid, d->short_gaps[g].start_ns,
				      d->short_gaps[g].end_ns);
	}
	struct gpu_words w = GPU_WORDS_INIT;
	gpu_host_at(ctx->db, &s, 0, &w);
	const char *at = w.loc.len ? w.loc.buf : "the launching code";
	double mean_gap_us = (double)idle_ns / 1e3 / (double)n;
	if (launch) {
		double mean_busy_us = (double)before_ns / 1e3 / (double)n;
		strbuf_addf(&w.title,
			    "GPU %lld waits on kernel launches from %s: %lld gaps, %.2f s idle",
			    (long long)d->device, at, (long long)n, idle_s);
		strbuf_addf(
		    &w.ev,
		    "GPU %lld sat idle %.2f s in %lld gaps of %.0f us mean, each after a kernel "
		    "(or run of kernels) of %.1f us mean; the launching thread was %s",
		    (long long)d->device, idle_s, (long long)n, mean_gap_us, mean_busy_us,
		    w.where.buf);
		strbuf_addf(
		    &w.next,
		    "Batch the work at %s: one tensor operation over the whole batch instead of a "
		    "Python loop over its items (stack the inputs, index with a tensor, or "
		    "torch.vmap), so that the GPU runs a few large kernels; when the kernels are "
		    "already batched, capture the step in a CUDA graph "
		    "(torch.compile(mode=\"reduce-overhead\") or torch.cuda.CUDAGraph)",
		    at);
	} else {
		strbuf_addf(&w.title,
			    "GPU %lld idle %.0f%% of its busy window while the host runs %s",
			    (long long)d->device, 100.0 * idle_s / window_s, at);
		strbuf_addf(&w.ev,
			    "GPU %lld sat idle %.2f s of its %.2f s window in %lld gaps of %.1f "
			    "ms mean; the launching thread was %s",
			    (long long)d->device, idle_s, window_s, (long long)n, mean_gap_us / 1e3,
			    w.where.buf);
		strbuf_addf(&w.next,
			    "Overlap the host's work at %s with the GPU's: move it into "
			    "DataLoader workers (num_workers > 0, pin_memory=True), prefetch the "
			    "next batch while this one computes, and copy with non_blocking=True",
			    at);
	}
	gpu_finding_add(ctx, launch ? "gpu.launch_bound" : "gpu.host_bound", "gpu", &w,
			launch
			    ? "Launch-bound: each kernel is shorter than the host's time to launch "
			      "the next, so the GPU spends most of its time waiting for work"
			    : "Host-bound: the GPU waits while the host prepares the next piece of "
			      "work, instead of the two overlapping",
			"gpu.compute[].busy_pct rises and idle_s falls", idle_s, wall_s);
	free(launchers.v);
	free(s.v);
	gpu_words_release(&w);
}

/* What the waits cost: a gap that starts within SYNC_AFTER_NS of a wait's
 * end is the queue run dry, but only up to the wait's own length (the work
 * the host could have done meanwhile, had it not waited; the rest of a
 * longer gap is the host's other work). claimed_ns[g] gets each gap's part;
 * returns their sum. */
static int64_t idle_after(const struct gpu_device_time *d, const struct gpu_spans *waits,
			  int64_t *claimed_ns)
{
	int64_t sum = 0;
	for (size_t i = 0; i < waits->n; i++) {
		int64_t end = waits->v[i].end_ns;
		size_t lo = 0, hi = d->ngaps; /* the first gap starting after end + slack */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (d->gaps[mid].start_ns <= end + SYNC_AFTER_NS)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0 || d->gaps[lo - 1].end_ns <= end - SYNC_AFTER_NS)
			continue;
		const struct gpu_gap *g = &d->gaps[lo - 1];
		int64_t left = g->end_ns - g->start_ns - claimed_ns[lo - 1];
		int64_t part = waits->v[i].end_ns - waits->v[i].start_ns;
		if (part > left)
			part = left;
		claimed_ns[lo - 1] += part;
		sum += part;
	}
	return sum;
}

static int span_end_cmp(const void *x, const void *y)
{
	const struct gpu_span *a = x, *b = y;
	return a->end_ns < b->end_ns ? -1 : a->end_ns > b->end_ns;
}

/* Sets claimed_ns[] to the waits' parts of the gaps when it made a finding
 * of them. */
static void sync_finding(struct analysis_ctx *ctx, const struct gpu_device_time *d,
			 int64_t *claimed_ns, double wall_s)
{
	struct gpu_spans s = { 0 };
	gpu_spans_query(
	    ctx->db, "SELECT tid, start_ns, end_ns FROM gpu_api WHERE name IN " GPU_SYNC_CALLS, &s);
	if (s.n < SYNC_MIN_CALLS) {
		free(s.v);
		return;
	}
	qsort(s.v, s.n, sizeof(*s.v), span_end_cmp);
	double blocked_s = 0;
	for (size_t i = 0; i < s.n; i++)
		blocked_s += (double)(s.v[i].end_ns - s.v[i].start_ns) / 1e9;
	int64_t *after = xcalloc(d->ngaps ? d->ngaps : 1, sizeof(*after));
	double dry_s = (double)idle_after(d, &s, after) / 1e9;
	size_t n = s.n;
	if (dry_s < GPU_IDLE_MIN_S / 2 || (wall_s > 0 && dry_s < GPU_IDLE_WALL_SHARE * wall_s)) {
		free(after);
		free(s.v);
		return;
	}
	memcpy(claimed_ns, after, d->ngaps * sizeof(*after));
	free(after);
	struct gpu_words w = GPU_WORDS_INIT;
	gpu_host_at(ctx->db, &s, GPU_HOST_SLACK_NS, &w);
	const char *at = w.loc.len ? w.loc.buf : "the code that reads GPU results";
	strbuf_addf(
	    &w.title,
	    "The host waits for the GPU %zu times at %s and cannot prepare the next step meanwhile",
	    n, at);
	strbuf_addf(&w.ev,
		    "%zu synchronising CUDA calls (cudaStreamSynchronize, cudaMemcpy, ...) "
		    "blocked the host %.2f s in all; after them GPU %lld sat idle while the host "
		    "went on, %.2f s of which the host could have spent ahead of the GPU instead "
		    "of waiting; the waiting thread was %s",
		    n, blocked_s, (long long)d->device, dry_s, w.where.buf);
	strbuf_addf(&w.next,
		    "Keep results on the GPU inside the loop at %s: a .item(), .cpu(), .tolist(), "
		    "print() or Python `if` on a CUDA tensor waits for all queued work; "
		    "accumulate in a tensor (total += loss.detach()) and read it once every N "
		    "steps or at the end, so that the host prepares the next step while the GPU "
		    "computes this one",
		    at);
	gpu_finding_add(
	    ctx, "gpu.sync", "gpu", &w,
	    "Excessive synchronisation: each read of a GPU value on the host drains the "
	    "GPU's queue, so host and GPU take turns instead of working at once",
	    "gpu.syncs.calls falls and gpu.compute[].busy_pct rises", dry_s, wall_s);
	free(s.v);
	gpu_words_release(&w);
}

/* Copies meeting cond (SQL on gpu_copies c): their count, bytes, seconds,
 * and their API calls as spans. */
void gpu_copies_of(sqlite3 *db, const char *cond, int64_t *count, double *bytes, double *seconds,
		   struct gpu_spans *s)
{
	char sql[768];
	snprintf(sql, sizeof(sql),
		 "SELECT COUNT(*), SUM(bytes), SUM(end_ns - start_ns) / 1e9 FROM gpu_copies c "
		 "WHERE end_ns >= start_ns AND %s",
		 cond);
	sqlite3_stmt *st;
	*count = 0;
	*bytes = *seconds = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			*count = sqlite3_column_int64(st, 0);
			*bytes = sqlite3_column_double(st, 1);
			*seconds = sqlite3_column_double(st, 2);
		}
		sqlite3_finalize(st);
	}
	if (!*count || !recording_has_table(db, "gpu_api"))
		return;
	snprintf(sql, sizeof(sql),
		 "SELECT a.tid, a.start_ns, a.end_ns FROM gpu_copies c JOIN gpu_api a ON a.pid = "
		 "c.pid AND a.corr = c.corr WHERE c.end_ns >= c.start_ns AND %s",
		 cond);
	gpu_spans_query(db, sql, s);
}

static void pageable_finding(struct analysis_ctx *ctx, double wall_s)
{
	int64_t n, pinned_n;
	double bytes, secs, pinned_bytes, pinned_secs;
	struct gpu_spans s = { 0 }, none = { 0 };
	gpu_copies_of(ctx->db, GPU_PAGEABLE_COPY, &n, &bytes, &secs, &s);
	if (n < GPU_COPY_MIN_CALLS || (wall_s > 0 && secs < GPU_COPY_WALL_SHARE * wall_s) ||
	    secs <= 0) {
		free(s.v);
		return;
	}
	/* The speed to compare with: pinned copies large enough to show the
	 * link's (a 4-byte .item() read shows only its latency). */
	gpu_copies_of(
	    ctx->db,
	    "kind IN ('HtoD', 'DtoH') AND src_kind != 'pageable' AND dst_kind != 'pageable' "
	    "AND bytes >= 1048576",
	    &pinned_n, &pinned_bytes, &pinned_secs, &none);
	free(none.v);
	double gbps = bytes / secs / 1e9;
	double pinned_gbps = pinned_secs > 0 ? pinned_bytes / pinned_secs / 1e9 : 0;
	/* At stake: the time the same bytes take at the pinned copies' speed
   * saved; without pinned copies to compare, half (pinned memory moves
   * about twice as fast over PCIe). */
	double stake_s = pinned_gbps > gbps ? secs - bytes / (pinned_gbps * 1e9) : secs / 2;
	struct gpu_words w = GPU_WORDS_INIT;
	gpu_host_at(ctx->db, &s, GPU_HOST_SLACK_NS, &w);
	const char *at = w.loc.len ? w.loc.buf : "the code that copies to the GPU";
	strbuf_addf(&w.title, "%lld copies between pageable host memory and the GPU at %s",
		    (long long)n, at);
	strbuf_addf(&w.ev,
		    "%lld copies moved %.1f MiB from or to pageable memory in %.3f s (%.2f GB/s)",
		    (long long)n, bytes / 1048576.0, secs, gbps);
	if (pinned_gbps > 0)
		strbuf_addf(&w.ev, "; the %lld copies from pinned memory ran at %.2f GB/s",
			    (long long)pinned_n, pinned_gbps);
	strbuf_addf(&w.ev, "; the copying thread was %s", w.where.buf);
	strbuf_addf(&w.next,
		    "Copy from pinned memory at %s: DataLoader(pin_memory=True), or allocate the "
		    "host tensor once with pin_memory=True and reuse it, then .to(device, "
		    "non_blocking=True) so that the copy also overlaps the GPU's work",
		    at);
	gpu_finding_add(
	    ctx, "interconnect.pageable_copies", "interconnect", &w,
	    "Pageable copies: the driver stages every copy through its own pinned buffer, "
	    "at a fraction of the link's speed, and the copy cannot overlap the GPU's work",
	    "interconnect.copies[].pageable falls and achieved_gb_per_s rises", stake_s, wall_s);
	free(s.v);
	gpu_words_release(&w);
}

static void small_copies_finding(struct analysis_ctx *ctx, double wall_s)
{
	int64_t n;
	double bytes, secs;
	struct gpu_spans s = { 0 };
	char cond[64];
	snprintf(cond, sizeof(cond), "bytes < %d", GPU_SMALL_COPY_BYTES);
	gpu_copies_of(ctx->db, cond, &n, &bytes, &secs, &s);
	double api_s = 0;
	for (size_t i = 0; i < s.n; i++)
		api_s += (double)(s.v[i].end_ns - s.v[i].start_ns) / 1e9;
	if (n < SMALL_MIN_CALLS || (wall_s > 0 && api_s < SMALL_WALL_SHARE * wall_s)) {
		free(s.v);
		return;
	}
	struct gpu_words w = GPU_WORDS_INIT;
	gpu_host_at(ctx->db, &s, GPU_HOST_SLACK_NS, &w);
	const char *at = w.loc.len ? w.loc.buf : "the code that copies";
	strbuf_addf(&w.title, "%lld small copies (under %d KiB) at %s", (long long)n,
		    GPU_SMALL_COPY_BYTES / 1024, at);
	strbuf_addf(&w.ev,
		    "%lld copies of %.0f bytes mean took %.3f s of CUDA calls on the host (%.3f s "
		    "on the GPU); the copying thread was %s",
		    (long long)n, bytes / (double)n, api_s, secs, w.where.buf);
	strbuf_addf(&w.next,
		    "Gather the values at %s into one tensor and copy it once (torch.stack or a "
		    "preallocated buffer), or create them on the GPU directly (device=\"cuda\")",
		    at);
	gpu_finding_add(
	    ctx, "interconnect.small_copies", "interconnect", &w,
	    "Many small copies: each costs a call and a fixed latency that its few bytes "
	    "cannot amortise",
	    "interconnect.copies[].small falls", api_s, wall_s);
	free(s.v);
	gpu_words_release(&w);
}

static int gpu_findings_run(struct analysis_ctx *ctx)
{
	struct gpu_model m;
	if (gpu_model_load(ctx->db, &m))
		return 0;
	double wall_s = report_wall_s(ctx->db);
	const struct gpu_device_time *d = gpu_model_idlest(&m);
	int have_api = recording_has_table(ctx->db, "gpu_api");
	if (d && have_api) {
		int64_t *claimed = xcalloc(d->ngaps ? d->ngaps : 1, sizeof(*claimed));
		sync_finding(ctx, d, claimed, wall_s);
		idle_finding(ctx, d, claimed, 1, wall_s);
		idle_finding(ctx, d, claimed, 0, wall_s);
		free(claimed);
	}
	if (recording_has_table(ctx->db, "gpu_copies")) {
		pageable_finding(ctx, wall_s);
		small_copies_finding(ctx, wall_s);
		gpu_transfer_findings(ctx, &m, wall_s);
	}
	gpu_memory_finding(ctx, wall_s);
	gpu_model_release(&m);
	return 0;
}

static const char *const gpu_findings_findings[] = {
	"gpu.launch_bound",
	"gpu.host_bound",
	"gpu.sync",
	"interconnect.pageable_copies",
	"interconnect.small_copies",
	"interconnect.transfer_bound",
	"interconnect.low_bandwidth",
	"gpu.memory_imbalance",
	NULL,
};

const struct analysis_ops analysis_gpu_findings = {
	.name = "gpu_findings",
	.findings = gpu_findings_findings,
	.run = gpu_findings_run,
};
