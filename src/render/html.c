/* html: report.html, the run on one self-contained page.
 *
 * - The report itself: report.md's text (render_markdown) as HTML
 *   (md_html.c), so the page says exactly what report.md says: the summary
 *   and the findings first, then Part A's tables and Part B. Its tables are
 *   plain HTML: readable without JavaScript.
 * - After the findings, the pictures: the flame graphs the run has (on-CPU,
 *   off-CPU, memory), each the very SVG of its file, with its zoom and
 *   search, in a sandboxed frame of its own (their scripts cannot reach the
 *   page or each other); then a timeline of the target's RSS, CPU use
 *   (cores) and, with the nvml probe, GPU utilisation, with the phases as
 *   bands (the findings that name a phase marked on its band).
 * - Nothing is loaded from anywhere: no network, no external scripts or
 *   fonts; the page's policy (Content-Security-Policy) forbids it. Every
 *   string from the target is escaped (html_escape): a function called
 *   <script> is text.
 * - The timeline keeps at most TIMELINE_POINTS points per series, each the
 *   largest value of its stretch: a one-hour run stays small and its peak is
 *   never averaged away. */
#include "render.h"
#include "md_html.h"
#include "../analysis/proctimeline.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


#define TIMELINE_POINTS 800
#define CHART_W 1000
#define CHART_H 110
#define CHART_PAD 40

static const char page_style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d1d1f;"
    "background:#fafafa}"
    "main{max-width:1240px;margin:0 auto;padding:16px 24px 48px}"
    "h1{font-size:22px;margin:18px 0 8px}h2{font-size:19px;margin:28px 0 8px;"
    "border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:16px;margin:18px 0 6px}"
    "code{font:12.5px ui-monospace,Menlo,Consolas,monospace;background:#eef0f3;padding:0 3px;"
    "border-radius:3px;word-break:break-all}"
    "pre{background:#eef0f3;padding:8px;overflow:auto}"
    "blockquote{margin:8px 0;padding:6px 12px;border-left:4px solid #e0a800;background:#fff8e1}"
    ".t{overflow-x:auto}table{border-collapse:collapse;margin:6px 0 12px;background:#fff}"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f0f2f5}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "ul{padding-left:22px}li{margin:2px 0}"
    "iframe{border:1px solid #ddd;background:#fff;width:100%;max-width:1202px;display:block}"
    "svg.chart{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}"
    "svg.chart text{font:11px system-ui,sans-serif;fill:#444}"
    "nav{position:sticky;top:0;background:#1d2b3a;color:#fff;padding:6px 24px;z-index:1}"
    "nav a{color:#cfe3ff;margin-right:14px;text-decoration:none}";

struct page {
	FILE *out;
	const struct render_ctx *ctx;
	int after_findings, pictures_done;
};

/* A renderer's output, in memory (NULL when it has nothing to draw). */
static char *render_to_memory(const struct renderer *r, const struct render_ctx *ctx, size_t *len)
{
	struct strbuf err = STRBUF_INIT;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	int rc = r->render(ctx, f, &err);
	fclose(f);
	strbuf_release(&err);
	if (rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---- the timeline ---- */

struct series {
	double *t_s, *v; /* every reading, in time order */
	size_t n, alloc;
	double max, last_s;
};

static void series_add(struct series *s, double t_s, double v)
{
	if (!isfinite(v) || v < 0 || !isfinite(t_s) || t_s < 0)
		return;
	if (s->n == s->alloc) {
		s->alloc = s->alloc ? 2 * s->alloc : 256;
		s->t_s = xrealloc(s->t_s, s->alloc * sizeof(*s->t_s));
		s->v = xrealloc(s->v, s->alloc * sizeof(*s->v));
	}
	s->t_s[s->n] = t_s;
	s->v[s->n++] = v;
	if (v > s->max)
		s->max = v;
	if (t_s > s->last_s)
		s->last_s = t_s;
}

static void series_release(struct series *s)
{
	free(s->t_s);
	free(s->v);
}

/* t_s's share of the run, within [0, 1]. */
static double frac_of(double t_s, double wall_s)
{
	double f = wall_s > 0 ? t_s / wall_s : 0;
	return f > 1 ? 1 : f > 0 ? f : 0;
}

static double x_of(double t_s, double wall_s)
{
	return CHART_PAD + frac_of(t_s, wall_s) * (CHART_W - 2 * CHART_PAD);
}

/* The phases as bands, with the ranks of the findings that name them. */
static void bands_write(struct page *pg, double wall_s, double top, double height, int labels)
{
	json_t *phases = json_object_get(pg->ctx->report, "phases"), *p;
	json_t *findings = json_object_get(pg->ctx->report, "findings");
	size_t i;
	json_array_foreach(phases, i, p)
	{
		const char *name = json_string_value(json_object_get(p, "name"));
		double s = json_number_value(json_object_get(p, "start_s"));
		double e = json_number_value(json_object_get(p, "end_s"));
		if (!name || e <= s)
			continue;
		double x0 = x_of(s, wall_s), x1 = x_of(e, wall_s);
		fprintf(pg->out,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
			"opacity=\"0.35\"><title>",
			x0, top, x1 - x0 > 0.5 ? x1 - x0 : 0.5, height,
			i % 2 ? "#c9dcf2" : "#e3d3f0");
		html_escape(pg->out, name, strlen(name));
		fputs("</title></rect>", pg->out);
		if (!labels)
			continue;
		fprintf(pg->out, "<text x=\"%.1f\" y=\"%.1f\">", x0 + 2, top + 11);
		html_escape(pg->out, name, strlen(name));
		struct strbuf phrase = STRBUF_INIT;
		strbuf_addf(&phrase, "phase %s", name);
		json_t *f;
		size_t k;
		json_array_foreach(findings, k, f)
		{
			const char *title = json_string_value(json_object_get(f, "title"));
			if (title && strstr(title, phrase.buf))
				fprintf(pg->out, " \xe2\x9a\x91%zu",
					k + 1); /* a flag and the rank */
		}
		strbuf_release(&phrase);
		fputs("</text>", pg->out);
	}
}

static void chart_write(struct page *pg, const char *label, const struct series *s, double wall_s,
			double scale, const char *unit, const char *colour, int labels)
{
	fprintf(pg->out,
		"<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>",
		CHART_W, CHART_H, CHART_W, CHART_H);
	html_escape(pg->out, label, strlen(label));
	fputs("</title>", pg->out);
	double top = 16, h = CHART_H - 34;
	bands_write(pg, wall_s, top, h, labels);
	fprintf(pg->out,
		"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#999\"/>"
		"<text x=\"%d\" y=\"11\">%s, peak %.4g %s</text>",
		CHART_PAD, top + h, CHART_W - CHART_PAD, top + h, CHART_PAD, label, s->max * scale,
		unit);
	fprintf(pg->out,
		"<text x=\"%d\" y=\"%d\">0 s</text><text x=\"%d\" y=\"%d\" "
		"text-anchor=\"end\">%.1f s</text>",
		CHART_PAD, CHART_H - 4, CHART_W - CHART_PAD, CHART_H - 4, wall_s);
	if (s->n && s->max > 0) {
		/* TIMELINE_POINTS stretches, each drawn at its largest reading */
		double *bt = xcalloc(TIMELINE_POINTS, sizeof(*bt));
		double *bv = xcalloc(TIMELINE_POINTS, sizeof(*bv));
		unsigned char *has = xcalloc(TIMELINE_POINTS, 1);
		for (size_t i = 0; i < s->n; i++) {
			size_t b = (size_t)(frac_of(s->t_s[i], wall_s) * (TIMELINE_POINTS - 1));
			if (!has[b] || s->v[i] > bv[b]) {
				bt[b] = s->t_s[i];
				bv[b] = s->v[i];
				has[b] = 1;
			}
		}
		fprintf(pg->out,
			"<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
			colour);
		for (size_t b = 0, first = 1; b < TIMELINE_POINTS; b++)
			if (has[b]) {
				fprintf(pg->out, "%s%.1f,%.1f", first ? "" : " ",
					x_of(bt[b], wall_s), top + h - bv[b] / s->max * h);
				first = 0;
			}
		fputs("\"/>", pg->out);
		free(bt);
		free(bv);
		free(has);
	} else {
		fprintf(pg->out, "<text x=\"%d\" y=\"%.1f\">no readings</text>", CHART_PAD + 8,
			top + h / 2);
	}
	fputs("</svg>\n", pg->out);
}

static void timeline_write(struct page *pg)
{
	sqlite3 *db = pg->ctx->db;
	double wall_s = json_number_value(
	    json_object_get(json_object_get(pg->ctx->report, "target"), "wall_s"));
	struct proc_point *v = NULL;
	struct series rss = {0}, cpu = {0}, gpu = {0};
	size_t n = db ? proc_timeline_load(db, "rss_bytes", INT64_MAX / 4, &v) : 0;
	for (size_t i = 0; i < n; i++)
		series_add(&rss, (double)v[i].t_ns / 1e9, (double)v[i].value);
	free(v);
	v = NULL;
	n = db ? proc_timeline_load(db, "coalesce(user_ns,0) + coalesce(sys_ns,0)", INT64_MAX / 4,
				    &v)
	       : 0;
	for (size_t i = 1; i < n; i++) {
		double dt = (double)v[i].t_ns -
			    (double)v[i - 1].t_ns; /* a damaged recording's can overflow */
		if (dt > 0)
			series_add(&cpu, (double)v[i].t_ns / 1e9,
				   ((double)v[i].value - (double)v[i - 1].value) / dt);
	}
	free(v);
	sqlite3_stmt *st = db ? recording_prepare(db, "nvml_samples",
						  "SELECT t_ns, avg(sm_pct) FROM nvml_samples"
						  " GROUP BY t_ns ORDER BY t_ns")
			      : NULL;
	while (st && sqlite3_step(st) == SQLITE_ROW)
		if (sqlite3_column_type(st, 1) != SQLITE_NULL) /* no reading: not 0% */
			series_add(&gpu, (double)sqlite3_column_int64(st, 0) / 1e9,
				   sqlite3_column_double(st, 1));
	sqlite3_finalize(st);
	/* the axis runs to the last reading of any series */
	if (!(wall_s > 0) || !isfinite(wall_s))
		wall_s = 0;
	const struct series *all[] = {&rss, &cpu, &gpu};
	for (size_t i = 0; i < 3; i++)
		if (all[i]->last_s > wall_s)
			wall_s = all[i]->last_s;
	fputs("<h2 id=\"timeline\">Timeline</h2>\n<p>The target's processes together, over the "
	      "run; the phases as bands (a flag and a number: a finding that names the "
	      "phase).</p>\n",
	      pg->out);
	chart_write(pg, "RSS", &rss, wall_s, 1.0 / (1024 * 1024), "MiB", "#b03a2e", 1);
	chart_write(pg, "CPU", &cpu, wall_s, 1.0, "cores", "#1f618d", 0);
	if (gpu.n)
		chart_write(pg, "GPU utilisation", &gpu, wall_s, 1.0, "%", "#1e8449", 0);
	series_release(&rss);
	series_release(&cpu);
	series_release(&gpu);
}

/* ---- the flame graphs ---- */

/* The height an SVG document says it is (its first height="N"), or 600. */
static int svg_height(const char *svg)
{
	const char *h = strstr(svg, "height=\"");
	int v = h ? atoi(h + 8) : 0;
	return v > 0 && v < 100000 ? v : 600;
}

static void flame_write(struct page *pg, const char *renderer, const char *title, const char *id)
{
	size_t len = 0;
	const struct renderer *r = renderer_find(renderer);
	char *svg = r ? render_to_memory(r, pg->ctx, &len) : NULL;
	if (!svg)
		return;
	fprintf(pg->out, "<h3 id=\"%s\">", id);
	html_escape(pg->out, title, strlen(title));
	fprintf(pg->out,
		" <small>(<code>%s</code>: click a frame to zoom, Search to "
		"highlight)</small></h3>\n",
		r->file);
	fprintf(pg->out,
		"<iframe sandbox=\"allow-scripts allow-modals\" title=\"%s\" height=\"%d\" "
		"srcdoc=\"",
		id, svg_height(svg) + 4);
	static const char frame_head[] = "<!DOCTYPE html><style>body{margin:0}</style>";
	html_escape(pg->out, frame_head, sizeof(frame_head) - 1);
	html_escape(pg->out, svg, len);
	fputs("\"></iframe>\n", pg->out);
	free(svg);
}

static void pictures_write(struct page *pg)
{
	if (pg->pictures_done)
		return;
	pg->pictures_done = 1;
	fputs("<h2 id=\"flame\">Flame graphs</h2>\n", pg->out);
	flame_write(pg, "flamegraph", "On-CPU", "flame-cpu");
	flame_write(pg, "offcpu", "Off-CPU", "flame-offcpu");
	flame_write(pg, "memory", "Memory", "flame-memory");
	timeline_write(pg);
}

/* The pictures go after the findings (before the first section that
 * follows them), else before Part B, else at the end. */
static void at_heading(void *arg, int level, const char *text)
{
	struct page *pg = arg;
	if (!text) {
		pictures_write(pg);
		return;
	}
	if (pg->after_findings && level <= 2)
		pictures_write(pg);
	if (level == 1 && !strncmp(text, "Part B", 6))
		pictures_write(pg);
	if (level == 2 && !strcmp(text, "Findings"))
		pg->after_findings = 1;
}

static int html_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	size_t len = 0;
	const struct renderer *markdown = renderer_find("markdown");
	char *md = markdown ? render_to_memory(markdown, ctx, &len) : NULL;
	if (!md) {
		strbuf_addstr(err, "report.md could not be made");
		return -1;
	}
	struct page pg = {.out = out, .ctx = ctx};
	const char *cmd =
	    json_string_value(json_object_get(json_object_get(ctx->report, "target"), "command"));
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
	      "frame-src 'self' data: about:\">\n<title>sonde report: ",
	      out);
	html_escape(out, cmd ? cmd : "?", strlen(cmd ? cmd : "?"));
	fprintf(out,
		"</title>\n<style>%s</style></head><body>\n"
		"<nav><a href=\"#h-1\">Summary</a><a href=\"#timeline\">Timeline</a>"
		"<a href=\"#flame\">Flame graphs</a></nav>\n<main>\n",
		page_style);
	md_html_write(out, md, len, at_heading, &pg);
	fputs("</main></body></html>\n", out);
	free(md);
	return ferror(out) ? -1 : 0;
}

const struct renderer render_html = {.name = "html", .file = "report.html", .render = html_render};
