/* flamegraph renderers: flamegraph.svg (on-CPU samples: "mixed", "cpu" or "python")
 * and offcpu.svg (blocked time, source "offcpu", weight in ns). Each is one
 * self-contained SVG: every frame a <g> with a <title> tooltip (count and
 * share), click to zoom, Ctrl-F / F3 or the Search button to highlight frames
 * matching a regular expression with the matched share, Esc to reset.
 * Every name from the recording is XML-escaped; the script is ours alone and
 * reads names only as attribute values, so a symbol cannot inject markup. */
#include "render.h"
#include "stackview.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"
#include "../util/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVG_WIDTH 1200
#define SVG_XPAD 10
#define SVG_TOP 58    /* title and buttons; the details line and the legend below them */
#define SVG_DETAILS_Y 48 /* at the top: a tall graph's bottom may be off the screen */
#define SVG_BOTTOM 30 /* the search's match line */
#define FRAME_H 16
#define FONT_PX 12
#define CHAR_W (FONT_PX * 0.59)
#define MIN_WIDTH_PX 0.1

void xml_escape(struct strbuf *sb, const char *s, size_t n)
{
	struct strbuf clean = STRBUF_INIT;
	utf8_sanitize(s, n, &clean);
	size_t run = 0; /* bytes that need no entity are copied in runs */
	for (size_t i = 0; i < clean.len; i++) {
		unsigned char c = (unsigned char)clean.buf[i];
		const char *ent;
		switch (c) {
		case '&': ent = "&amp;"; break;
		case '<': ent = "&lt;"; break;
		case '>': ent = "&gt;"; break;
		case '"': ent = "&quot;"; break;
		case '\'': ent = "&#39;"; break;
		default: /* control characters are not allowed in XML 1.0 */
			ent = c < 0x20 || c == 0x7f ? "\xEF\xBF\xBD" : NULL;
		}
		if (!ent)
			continue;
		strbuf_add(sb, clean.buf + run, i - run);
		strbuf_addstr(sb, ent);
		run = i + 1;
	}
	strbuf_add(sb, clean.buf + run, clean.len - run);
	strbuf_release(&clean);
}

/* The first codepoints of s that fit in width_px, with ".." when cut. */
static void fit_text(struct strbuf *sb, const char *s, double width_px)
{
	int fit = (int)((width_px - 6) / CHAR_W);
	size_t chars = 0, len = strlen(s), cut = len;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80 &&
		    chars++ == (size_t)(fit > 2 ? fit - 2 : 0))
			cut = i;
	if (fit < 3)
		return;
	if (chars <= (size_t)fit) {
		xml_escape(sb, s, len);
		return;
	}
	xml_escape(sb, s, cut);
	strbuf_addstr(sb, "..");
}

struct svg {
	const struct stack_set *ss;
	const struct stack_tree *t;
	int by_ns;    /* FLAME_SAMPLES, FLAME_NS (off-CPU) or FLAME_BYTES (memory) */
	double scale; /* px per unit */
	int max_depth;
	const struct flame_paint *paint; /* NULL: the colours of frame_color */
	struct strbuf body;
};

/* Stable colours from the name; the hue says what kind of code it is:
 * blue for blocked time, green Python, orange kernel, red-yellow native. */
static void frame_color(char *buf, size_t cap, const char *name, const char *kind, int by_ns)
{
	uint64_t h = hash_bytes(name, strlen(name));
	double a = (double)(h & 0xff) / 255.0, b = (double)((h >> 8) & 0xff) / 255.0,
	       c = (double)((h >> 16) & 0xff) / 255.0;
	int r, g, bl;
	if (by_ns == FLAME_BYTES) {
		r = (int)(150 + 60 * a), g = (int)(90 + 50 * b), bl = (int)(190 + 65 * c);
	} else if (by_ns) {
		r = (int)(60 + 60 * a), g = (int)(110 + 90 * b), bl = (int)(190 + 65 * c);
	} else if (kind && !strcmp(kind, "python")) {
		r = (int)(50 + 60 * a), g = (int)(170 + 60 * b), bl = (int)(50 + 60 * c);
	} else if (kind && !strcmp(kind, "kernel")) {
		r = (int)(225 + 30 * a), g = (int)(140 + 50 * b), bl = (int)(40 * c);
	} else {
		r = (int)(205 + 50 * a), g = (int)(230 * b), bl = (int)(55 * c);
	}
	snprintf(buf, cap, "rgb(%d,%d,%d)", r, g, bl);
}

static void count_text(struct strbuf *sb, int64_t v, int by_ns)
{
	if (!by_ns) {
		strbuf_addf(sb, "%lld sample%s", (long long)v, v == 1 ? "" : "s");
		return;
	}
	char buf[32];
	if (by_ns == FLAME_BYTES)
		fmt_bytes(buf, sizeof(buf), (double)v);
	else
		fmt_seconds(buf, sizeof(buf), (double)v / 1e9);
	strbuf_addstr(sb, buf);
}

/* After the count: ") · work.c:42 · libapp.so · native" (what is known of
 * where the function is, its hottest line when known), the closing
 * parenthesis first. */
static void where_text(struct strbuf *b, const struct stack_func *f, int line)
{
	static const struct {
		const char *kind, *word;
	} kinds[] = { { "python", "Python" }, { "native", "native" }, { "kernel", "kernel" } };
	strbuf_addch(b, ')');
	const char *file = f->file && *f->file ? f->file : NULL;
	if (file) {
		strbuf_addstr(b, " · ");
		xml_escape(b, file, strlen(file));
		if (line > 0)
			strbuf_addf(b, ":%d", line);
	}
	if (f->module && *f->module &&
	    (!file || strcmp(path_base(f->module), path_base(file)))) {
		strbuf_addstr(b, " · ");
		xml_escape(b, path_base(f->module), strlen(path_base(f->module)));
	}
	for (size_t k = 0; f->kind && k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strcmp(f->kind, kinds[k].kind))
			strbuf_addf(b, " · %s", kinds[k].word);
}

/* The colours' legend, right-aligned on the details line: what each hue is. */
static void legend_write(FILE *out, int by_ns, int painted)
{
	static const struct {
		const char *label, *color;
	} samples[] = { { "Python", "rgb(80,200,80)" },
			{ "native", "rgb(230,115,27)" },
			{ "kernel", "rgb(240,165,20)" } },
	  diff[] = { { "grew", "rgb(255,90,90)" }, { "shrank", "rgb(90,90,255)" } },
	  blocked[] = { { "blocked time", "rgb(90,155,222)" } },
	  bytes[] = { { "heap bytes", "rgb(180,115,222)" } };
	const void *v = painted ? (const void *)diff
			: by_ns == FLAME_BYTES ? (const void *)bytes
			: by_ns ? (const void *)blocked
				: (const void *)samples;
	size_t n = painted ? 2 : by_ns ? 1 : 3;
	const struct {
		const char *label, *color;
	} *e = v;
	double x = SVG_WIDTH - SVG_XPAD;
	fputs("<g id=\"legend\">", out);
	for (size_t k = n; k-- > 0;) {
		x -= (double)strlen(e[k].label) * CHAR_W + 26;
		fprintf(out,
			"<rect x=\"%.1f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.1f\" y=\"%d\">%s</text>",
			x, SVG_DETAILS_Y - 10, e[k].color, x + 16, SVG_DETAILS_Y, e[k].label);
	}
	fputs("</g>\n", out);
}

static void svg_frame(struct svg *g, size_t i, double x)
{
	const struct stack_tree_node *nd = &g->t->v[i];
	double w = (double)nd->total * g->scale;
	if (w < MIN_WIDTH_PX)
		return;
	const char *name = i ? g->ss->funcs[nd->func].function : "all";
	int64_t total = g->t->v[0].total;
	char color[32];
	struct strbuf note = STRBUF_INIT;
	if (g->paint && i)
		g->paint->fn(g->paint->arg, nd->func, color, sizeof(color), &note);
	else
		frame_color(color, sizeof(color), name, i ? g->ss->funcs[nd->func].kind : NULL,
			    g->by_ns);
	double y = -(double)(nd->depth + 1) * FRAME_H; /* from the bottom, fixed up in the header */
	struct strbuf *b = &g->body;
	strbuf_addstr(b, "<g class=\"f\" n=\"");
	xml_escape(b, name, strlen(name));
	strbuf_addf(b, "\" c=\"%s\" fx=\"%.4f\" fw=\"%.4f\" fd=\"%d\"><title>", color, x, w,
		    nd->depth);
	xml_escape(b, name, strlen(name));
	strbuf_addstr(b, " (");
	count_text(b, nd->total, g->by_ns);
	strbuf_addf(b, ", %.2f%%", total ? 100.0 * (double)nd->total / (double)total : 0);
	if (note.len)
		xml_escape(b, note.buf, note.len);
	strbuf_release(&note);
	if (i)
		where_text(b, &g->ss->funcs[nd->func], nd->line);
	if (!i)
		strbuf_addch(b, ')');
	strbuf_addf(b,
		    "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\""
		    " fill=\"%s\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		    x, y, w, FRAME_H - 1, color, x + 3, y + FRAME_H - 4.5);
	fit_text(b, name, w);
	strbuf_addstr(b, "</text></g>\n");
	if (nd->depth > g->max_depth)
		g->max_depth = nd->depth;
	size_t n;
	size_t *kids = stack_tree_children(g->t, g->ss, i, &n);
	for (size_t k = 0; k < n; k++) {
		svg_frame(g, kids[k], x);
		x += (double)g->t->v[kids[k]].total * g->scale;
	}
	free(kids);
}

static const char svg_script[] =
	"\"use strict\";\n"
	"var svg, frames, details, matched, unzoomBtn, searchBtn, re = null;\n"
	"var XPAD = 10, FW = 0, CHARW = 12 * 0.59;\n"
	"function init(evt) {\n"
	"  svg = document.querySelector('svg');\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  unzoomBtn = document.getElementById('unzoom');\n"
	"  searchBtn = document.getElementById('search');\n"
	"  FW = parseFloat(svg.getAttribute('width')) - 2 * XPAD;\n"
	"  svg.addEventListener('click', function (e) {\n"
	"    var t = e.target;\n"
	"    if (t === unzoomBtn) { unzoom(); return; }\n"
	"    if (t === searchBtn) { if (re) clearSearch(); else askSearch(); return; }\n"
	"    var g = t.closest ? t.closest('g.f') : null;\n"
	"    if (g) zoom(g);\n"
	"  });\n"
	"  svg.addEventListener('mouseover', function (e) {\n"
	"    var g = e.target.closest ? e.target.closest('g.f') : null;\n"
	"    if (g) details.textContent = g.querySelector('title').textContent;\n"
	"  });\n"
	"  svg.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {\n"
	"      e.preventDefault(); askSearch();\n"
	"    } else if (e.keyCode === 27) { unzoom(); clearSearch(); }\n"
	"  });\n"
	"}\n"
	"function num(g, a) { return parseFloat(g.getAttribute(a)); }\n"
	"function place(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  var name = g.getAttribute('n'), chars = Array.from(name);\n"
	"  var fit = Math.floor((w - 6) / CHARW);\n"
	"  r.setAttribute('x', x.toFixed(2));\n"
	"  r.setAttribute('width', Math.max(w, 0).toFixed(2));\n"
	"  t.setAttribute('x', (x + 3).toFixed(2));\n"
	"  t.textContent = fit < 3 ? '' : chars.length <= fit ? name\n"
	"    : chars.slice(0, fit - 2).join('') + '..';\n"
	"}\n"
	"function zoom(g) {\n"
	"  var x = num(g, 'fx'), w = num(g, 'fw'), d = num(g, 'fd'), ratio = FW / w, eps = 1e-3;\n"
	"  frames.forEach(function (f) {\n"
	"    var fx = num(f, 'fx'), fw = num(f, 'fw'), fd = num(f, 'fd');\n"
	"    f.classList.remove('hide'); f.classList.remove('parent');\n"
	"    if (fd < d && fx <= x + eps && fx + fw >= x + w - eps) {\n"
	"      f.classList.add('parent'); place(f, XPAD, FW);\n"
	"    } else if (fd >= d && fx >= x - eps && fx + fw <= x + w + eps) {\n"
	"      place(f, XPAD + (fx - x) * ratio, fw * ratio);\n"
	"    } else {\n"
	"      f.classList.add('hide');\n"
	"    }\n"
	"  });\n"
	"  unzoomBtn.classList.remove('hide');\n"
	"}\n"
	"function unzoom() {\n"
	"  frames.forEach(function (f) {\n"
	"    f.classList.remove('hide'); f.classList.remove('parent');\n"
	"    place(f, num(f, 'fx'), num(f, 'fw'));\n"
	"  });\n"
	"  unzoomBtn.classList.add('hide');\n"
	"}\n"
	"function askSearch() {\n"
	"  var term = prompt('Search frames (regular expression)', re ? re.source : '');\n"
	"  if (term === null) return;\n"
	"  if (term === '') { clearSearch(); return; }\n"
	"  try { re = new RegExp(term); } catch (err) {\n"
	"    matched.textContent = 'not a regular expression: ' + term; return;\n"
	"  }\n"
	"  search();\n"
	"}\n"
	"function clearSearch() {\n"
	"  re = null;\n"
	"  frames.forEach(function (f) { f.querySelector('rect').setAttribute('fill', f.getAttribute('c')); });\n"
	"  matched.textContent = ' ';\n"
	"  searchBtn.textContent = 'Search';\n"
	"}\n"
	"function search() {\n"
	"  var spans = [], total = 0, covered = 0, end = -Infinity;\n"
	"  frames.forEach(function (f) {\n"
	"    var r = f.querySelector('rect');\n"
	"    if (num(f, 'fd') === 0) { total = num(f, 'fw'); return; }\n"
	"    if (re.test(f.getAttribute('n'))) {\n"
	"      r.setAttribute('fill', 'rgb(230,0,230)');\n"
	"      spans.push([num(f, 'fx'), num(f, 'fw')]);\n"
	"    } else {\n"
	"      r.setAttribute('fill', f.getAttribute('c'));\n"
	"    }\n"
	"  });\n"
	"  /* Nested matches cover the same samples: count the union of spans. */\n"
	"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"  spans.forEach(function (s) {\n"
	"    var s0 = Math.max(s[0], end), s1 = s[0] + s[1];\n"
	"    if (s1 > s0) { covered += s1 - s0; end = s1; }\n"
	"  });\n"
	"  matched.textContent = 'Matched: ' + (total > 0 ? (100 * covered / total).toFixed(1) : '0') + '%';\n"
	"  searchBtn.textContent = 'Reset Search';\n"
	"}\n";

int flamegraph_write(const struct stack_set *ss, int by_ns, const char *title, FILE *out)
{
	return flamegraph_write_painted(ss, by_ns, title, NULL, out);
}

int flamegraph_write_painted(const struct stack_set *ss, int by_ns, const char *title,
			     const struct flame_paint *paint, FILE *out)
{
	struct stack_tree t = STACK_TREE_INIT;
	if (!ss->nleaves)
		return 1;
	stack_tree_build(ss, by_ns, &t);
	if (t.v[0].total <= 0) {
		stack_tree_release(&t);
		return 1;
	}
	struct svg g = { .ss = ss, .t = &t, .by_ns = by_ns, .paint = paint, .body = STRBUF_INIT };
	g.scale = (double)(SVG_WIDTH - 2 * SVG_XPAD) / (double)t.v[0].total;
	svg_frame(&g, 0, SVG_XPAD);
	int height = SVG_TOP + (g.max_depth + 1) * FRAME_H + SVG_BOTTOM;
	int base = height - SVG_BOTTOM; /* frames were laid out with y relative to it */
	struct strbuf esc = STRBUF_INIT;
	xml_escape(&esc, title, strlen(title));
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\""
		" onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; }\n"
		"#title { font-size: 17px; text-anchor: middle; }\n"
		".btn { cursor: pointer; fill: #036; }\n"
		".f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		".hide { display: none; }\n"
		".parent { opacity: 0.5; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f4\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\">%s</text>\n"
		"<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n",
		SVG_WIDTH, height, SVG_WIDTH, height, FONT_PX, svg_script, SVG_WIDTH, height,
		SVG_WIDTH / 2, esc.buf, SVG_XPAD, SVG_WIDTH - 120, SVG_XPAD, SVG_DETAILS_Y,
		SVG_WIDTH - 160, height - 10);
	legend_write(out, by_ns, paint != NULL);
	fprintf(out, "<g id=\"frames\" transform=\"translate(0,%d)\">\n", base);
	fwrite(g.body.buf, 1, g.body.len, out);
	fputs("</g>\n</svg>\n", out);
	strbuf_release(&esc);
	strbuf_release(&g.body);
	stack_tree_release(&t);
	return 0;
}

static int flamegraph_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct stack_set ss;
	const char *source = "cpu";
	enum stack_mode mode = stack_mode_of(ctx->db);
	if (stack_set_load_mode(ctx->db, mode, &ss, &source, err) < 0)
		return -1;
	struct strbuf title = STRBUF_INIT;
	int py = !strcmp(source, "python") && mode != STACK_MODE_CPU;
	strbuf_addf(&title, "%s flame graph (%s samples: %lld)",
		    !py			    ? "On-CPU"
		    : mode == STACK_MODE_WALL ? "Wall-time"
					      : "GIL-held",
		    source, (long long)ss.total_samples);
	int rc = flamegraph_write(&ss, 0, title.buf, out);
	strbuf_release(&title);
	stack_set_release(&ss);
	return rc;
}

/* The flame graph of a weighted source's stacks (by_ns: FLAME_NS or
 * FLAME_BYTES), titled "what (total after)"; 1 (no file) when they weigh
 * nothing. */
static int weighted_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err,
			   const char *source, int by_ns, const char *what, const char *after)
{
	struct stack_set ss;
	if (stack_set_load(ctx->db, source, &ss, err))
		return -1;
	char total[32];
	if (by_ns == FLAME_NS)
		fmt_seconds(total, sizeof(total), (double)ss.total_weight / 1e9);
	else
		fmt_bytes(total, sizeof(total), (double)ss.total_weight);
	struct strbuf title = STRBUF_INIT;
	strbuf_addf(&title, "%s (%s%s)", what, total, after);
	int rc = ss.total_weight > 0 ? flamegraph_write(&ss, by_ns, title.buf, out) : 1;
	strbuf_release(&title);
	stack_set_release(&ss);
	return rc;
}

static int offcpu_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	return weighted_render(ctx, out, err, "offcpu", FLAME_NS, "Off-CPU time by stack",
			       " blocked");
}

static int memory_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	return weighted_render(ctx, out, err, "alloc_peak", FLAME_BYTES,
			       "Heap live at the peak by allocating stack", "");
}

const struct renderer render_memory = { .name = "memory", .file = "memory.svg",
					.render = memory_render };

const struct renderer render_flamegraph = { .name = "flamegraph",
					    .file = "flamegraph.svg",
					    .render = flamegraph_render };

const struct renderer render_offcpu = { .name = "offcpu",
					.file = "offcpu.svg",
					.render = offcpu_render };

const struct exporter export_svg = {
	.name = "svg",
	.description = "on-CPU flame graph, an interactive SVG for a browser",
	.renderer = &render_flamegraph,
};

const struct exporter export_offcpu_svg = {
	.name = "offcpu-svg",
	.description = "off-CPU flame graph: where threads waited, by blocked time",
	.renderer = &render_offcpu,
};

const struct exporter export_memory_svg = {
	.name = "memory-svg",
	.description = "memory flame graph: who allocated the heap's peak (--memory runs)",
	.renderer = &render_memory,
};
