/* gpu_host: the host's code during GPU-side spans (gpu_host.h). */
#include "gpu_host.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"
#include "frames.h"

#include <stdlib.h>
#include <string.h>

struct host_walk {
	const struct stack_set *ss;
	const struct gpu_span *spans; /* sorted by (tid, start), disjoint per tid */
	size_t n;
	int64_t *per_frame; /* samples charged to each frame of ss */
	size_t *path;
	int64_t samples;
};

static int span_cmp(const void *x, const void *y)
{
	const struct gpu_span *a = x, *b = y;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

/* spans widened by slack_ns on both sides, sorted and merged per thread, in
 * out (n entries at most); the count. */
static size_t spans_merge(const struct gpu_span *in, size_t n, int64_t slack_ns,
			  struct gpu_span *out)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		struct gpu_span s = { in[i].tid, in[i].start_ns - slack_ns,
				      in[i].end_ns + slack_ns };
		if (m && out[m - 1].tid == s.tid && s.start_ns <= out[m - 1].end_ns) {
			if (s.end_ns > out[m - 1].end_ns)
				out[m - 1].end_ns = s.end_ns;
		} else {
			out[m++] = s;
		}
	}
	return m;
}

static int span_holds(const struct host_walk *w, int64_t tid, int64_t t_ns)
{
	size_t lo = 0, hi = w->n; /* the first span after (tid, t) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct gpu_span *s = &w->spans[mid];
		if (s->tid < tid || (s->tid == tid && s->start_ns <= t_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && w->spans[lo - 1].tid == tid && t_ns < w->spans[lo - 1].end_ns;
}

static int in_packages(const char *file)
{
	return file && (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"));
}

/* A framework's Python code (torch's kaiming_uniform_ under the program's
 * make_model) is what the program called, not what it can change: the
 * program's own Python frame that called it, the nearest outward that is
 * neither an installed package's nor the standard library's, when there
 * is one; else path[k] stays. */
static size_t outside_packages(const struct stack_set *ss, const size_t *path, size_t k)
{
	if (!in_packages(ss->frames[path[k]].file))
		return k;
	for (size_t j = k; j-- > 0;) {
		const struct stack_frame_rec *f = &ss->frames[path[j]];
		if (f->kind && !strcmp(f->kind, "python") && frame_python_is_own(f->file))
			return j;
	}
	return k;
}

static void on_sample(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct host_walk *w = arg;
	(void)weight;
	if (!span_holds(w, tid, t_ns))
		return;
	size_t n = stack_set_path(w->ss, node, w->path, STACK_DEPTH_MAX);
	if (!n)
		return;
	size_t k = frame_own_index(w->ss, w->path, n);
	if (k == n) /* nothing of the program's own: the leaf */
		k = n - 1;
	k = outside_packages(w->ss, w->path, k);
	w->per_frame[w->path[k]]++;
	w->samples++;
}

static int walk_spans(sqlite3 *db, const struct stack_set *ss, struct gpu_span *merged, size_t n,
		      struct host_walk *w)
{
	struct strbuf err = STRBUF_INIT;
	w->spans = merged;
	w->n = n;
	w->samples = 0;
	for (size_t i = 0; i < ss->nframes; i++)
		w->per_frame[i] = 0;
	int64_t from = INT64_MAX, to = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		if (merged[i].start_ns < from)
			from = merged[i].start_ns;
		if (merged[i].end_ns > to)
			to = merged[i].end_ns;
	}
	int rc = n ? stack_set_each_sample(db, ss, from, to, on_sample, w, &err) : 0;
	strbuf_release(&err);
	return rc;
}

int gpu_host_where(sqlite3 *db, struct gpu_span *spans, size_t n, int64_t slack_ns,
		   struct strbuf *loc, struct gpu_host *h)
{
	struct stack_set ss = STACK_SET_INIT;
	struct strbuf err = STRBUF_INIT;
	struct host_walk w = { 0 };
	struct gpu_span *merged = NULL;
	int rc = -1;
	*h = (struct gpu_host){ 0 };
	if (!n || stack_set_load(db, "python", &ss, &err))
		goto out;
	if (!ss.total_samples) {
		stack_set_release(&ss);
		if (stack_set_load_on_cpu(db, &ss, NULL, &err))
			goto out;
	}
	if (!ss.total_samples)
		goto out;
	qsort(spans, n, sizeof(*spans), span_cmp);
	merged = malloc(n * sizeof(*merged));
	w.per_frame = malloc(ss.nframes * sizeof(*w.per_frame));
	w.path = malloc(STACK_DEPTH_MAX * sizeof(*w.path));
	if (!merged || !w.per_frame || !w.path)
		goto out;
	w.ss = &ss;
	if (walk_spans(db, &ss, merged, spans_merge(spans, n, 0, merged), &w))
		goto out;
	if (!w.samples && slack_ns > 0) {
		h->widened = 1;
		if (walk_spans(db, &ss, merged, spans_merge(spans, n, slack_ns, merged), &w))
			goto out;
	}
	if (!w.samples)
		goto out;
	size_t best = 0;
	for (size_t i = 1; i < ss.nframes; i++)
		if (w.per_frame[i] > w.per_frame[best])
			best = i;
	const struct stack_frame_rec *f = &ss.frames[best];
	if (f->file)
		strbuf_addf(loc, "%s:", f->file);
	else if (f->module)
		strbuf_addf(loc, "%s:", f->module);
	strbuf_addstr(loc, f->function);
	if (f->line > 0)
		strbuf_addf(loc, ":%d", f->line);
	h->samples = w.samples;
	h->at_samples = w.per_frame[best];
	rc = 0;
out:
	free(merged);
	free(w.per_frame);
	free(w.path);
	stack_set_release(&ss);
	strbuf_release(&err);
	return rc;
}
