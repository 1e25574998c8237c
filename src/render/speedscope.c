/* speedscope: speedscope.json, the samples the flame graph counts in
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json).
 *
 * - shared.frames: one per function (function, file, module), with its file
 *   (the source file, else the module) and the lowest line sampled in it.
 * - One "sampled" profile per thread, named "NAME (tid T, pid P)", its
 *   samples in time order as frame indexes outermost first; consecutive
 *   samples of one stack are one entry whose weight is their sum.
 * - Weights in nanoseconds (samples x the sampling period), startValue the
 *   thread's first sample, endValue that plus the weights; unit "none" (a
 *   sample weighs 1) when the rate is unknown.
 * - activeProfileIndex: the thread with the most samples. */
#include "render.h"
#include "thread_samples.h"
#include "../analysis/analysis.h"
#include "../record/reader.h"
#include "../util/strbuf.h"
#include "../version.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct speedscope {
	const struct thread_samples *ts;
	FILE *out;
	size_t *frame_of; /* func index -> index + 1 in shared.frames (0: not yet) */
	size_t nframes;
	struct strbuf frames; /* shared.frames' members, written last */
	int *lines;	      /* func index -> its lowest line, 0 none */
	size_t *path;
};

/* A JSON string of outside text (valid UTF-8, escaped) appended to sb. */
static void json_str(struct strbuf *sb, const char *s)
{
	json_t *j = report_string(s, strlen(s));
	char *enc = json_dumps(j, JSON_ENCODE_ANY);
	strbuf_addstr(sb, enc ? enc : "\"?\"");
	free(enc);
	json_decref(j);
}

static size_t frame_index(struct speedscope *sp, size_t func)
{
	if (sp->frame_of[func])
		return sp->frame_of[func] - 1;
	const struct stack_func *fn = &sp->ts->set.funcs[func];
	const char *file = fn->file ? fn->file : fn->module;
	strbuf_addstr(&sp->frames, sp->nframes ? ",\n{\"name\":" : "\n{\"name\":");
	json_str(&sp->frames, fn->function);
	if (file) {
		strbuf_addstr(&sp->frames, ",\"file\":");
		json_str(&sp->frames, file);
	}
	if (sp->lines[func] > 0)
		strbuf_addf(&sp->frames, ",\"line\":%d", sp->lines[func]);
	strbuf_addch(&sp->frames, '}');
	sp->frame_of[func] = ++sp->nframes;
	return sp->nframes - 1;
}

static int *func_lines(const struct stack_set *ss)
{
	int *lines = xcalloc(ss->nfuncs ? ss->nfuncs : 1, sizeof(*lines));
	for (size_t i = 0; i < ss->nframes; i++) {
		int l = ss->frames[i].line, *at = &lines[ss->frames[i].func];
		if (l > 0 && (!*at || l < *at))
			*at = l;
	}
	return lines;
}

/* The number of samples from v[i] on with v[i]'s stack, in a row. */
static size_t run_length(const struct sampled_thread *th, size_t i)
{
	size_t j = i + 1;
	while (j < th->n && th->v[j].node == th->v[i].node)
		j++;
	return j - i;
}

static void profile_write(struct speedscope *sp, const struct sampled_thread *th)
{
	const struct thread_samples *ts = sp->ts;
	int64_t unit = ts->period_ns > 0 ? ts->period_ns : 1, total = 0;
	struct strbuf name = STRBUF_INIT;
	strbuf_addf(&name, "%s (tid %" PRId64 ", pid %" PRId64 ")", th->name ? th->name : "thread",
		    th->tid, th->pid);
	struct strbuf head = STRBUF_INIT;
	strbuf_addstr(&head, "{\"type\":\"sampled\",\"name\":");
	json_str(&head, name.buf);
	fprintf(sp->out, "%s,\"unit\":\"%s\",\"samples\":[", head.buf,
		ts->period_ns > 0 ? "nanoseconds" : "none");
	for (size_t i = 0, k = 0; i < th->n; i += run_length(th, i), k++) {
		size_t n = stack_set_path(&ts->set, th->v[i].node, sp->path, STACK_DEPTH_MAX);
		fputs(k ? ",[" : "[", sp->out);
		for (size_t d = 0; d < n; d++)
			fprintf(sp->out, d ? ",%zu" : "%zu",
				frame_index(sp, ts->set.frames[sp->path[d]].func));
		fputc(']', sp->out);
	}
	fputs("],\"weights\":[", sp->out);
	for (size_t i = 0, k = 0; i < th->n; k++) {
		size_t run = run_length(th, i);
		int64_t w = (int64_t)run * unit;
		fprintf(sp->out, k ? ",%" PRId64 : "%" PRId64, w);
		total += w;
		i += run;
	}
	int64_t start = ts->period_ns > 0 && th->n ? th->v[0].t_ns : 0;
	fprintf(sp->out, "],\"startValue\":%" PRId64 ",\"endValue\":%" PRId64 "}", start,
		start + total);
	strbuf_release(&head);
	strbuf_release(&name);
}

static int speedscope_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct thread_samples ts;
	if (thread_samples_load(ctx->db, &ts, err) < 0)
		return -1;
	if (!ts.nthreads) {
		thread_samples_release(&ts);
		return 1;
	}
	struct speedscope sp = {.ts = &ts, .out = out, .frames = STRBUF_INIT};
	sp.frame_of = xcalloc(ts.set.nfuncs ? ts.set.nfuncs : 1, sizeof(*sp.frame_of));
	sp.lines = func_lines(&ts.set);
	sp.path = xmalloc(STACK_DEPTH_MAX * sizeof(*sp.path));
	size_t active = 0;
	for (size_t t = 1; t < ts.nthreads; t++)
		if (ts.threads[t].n > ts.threads[active].n)
			active = t;
	char *command = recording_meta_text(ctx->db, "command");
	struct strbuf title = STRBUF_INIT;
	strbuf_addf(&title, "sonde: %s (%s samples)", command ? command : "run", ts.source);
	free(command);
	struct strbuf head = STRBUF_INIT;
	strbuf_addstr(&head, "{\"$schema\":\"" SPEEDSCOPE_SCHEMA
			     "\",\"exporter\":\"sonde " SONDE_VERSION "\",\"name\":");
	json_str(&head, title.buf);
	fprintf(out, "%s,\"activeProfileIndex\":%zu,\"profiles\":[\n", head.buf, active);
	for (size_t t = 0; t < ts.nthreads; t++) {
		if (t)
			fputs(",\n", out);
		profile_write(&sp, &ts.threads[t]);
	}
	fprintf(out, "\n],\"shared\":{\"frames\":[%s\n]}}\n", sp.frames.buf);
	strbuf_release(&head);
	strbuf_release(&title);
	strbuf_release(&sp.frames);
	free(sp.frame_of);
	free(sp.lines);
	free(sp.path);
	thread_samples_release(&ts);
	return 0;
}

const struct renderer render_speedscope = {
    .name = "speedscope", .file = "speedscope.json", .render = speedscope_render};

const struct exporter export_speedscope = {
	.name = "speedscope",
	.description = "speedscope JSON (speedscope.app): one sampled profile per thread",
	.renderer = &render_speedscope,
};
