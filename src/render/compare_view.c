/* compare_view: compare.md, the terminal summary and diff.svg of `sonde
 * compare` (see compare_view.h). */
#include "compare_view.h"
#include "mdcell.h"
#include "render.h"
#include "stackview.h"
#include "../analysis/compare.h"
#include "../analysis/compare_heap.h"
#include "../util/stats.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A signed change: "+1.20 s", "-350.0 ms", "0 s"; share points with one decimal. */
static void fmt_delta(char *buf, size_t cap, double d, int in_seconds)
{
	if (isnan(d)) {
		snprintf(buf, cap, "–");
	} else if (!in_seconds) {
		snprintf(buf, cap, "%+.1f pts", d);
	} else if (d == 0) {
		snprintf(buf, cap, "0 s");
	} else {
		buf[0] = d > 0 ? '+' : '-'; /* callers pass 32 bytes */
		fmt_seconds(buf + 1, cap - 1, fabs(d));
	}
}

static void fmt_time(char *buf, size_t cap, double s)
{
	if (isnan(s))
		snprintf(buf, cap, "–");
	else
		fmt_seconds(buf, cap, s);
}

/* "hot_a: total 1.20 s → 0.10 s (−1.10 s; 50.0% → 14.0% of the samples)". */
static void change_sentence(const struct compare *c, const struct compare_func *f,
			    struct strbuf *sb)
{
	char ta[32], tb[32], d[32];
	int secs;
	double delta = compare_total_delta(c, f, &secs);
	fmt_time(ta, sizeof(ta), compare_seconds(c, f, 0, 0));
	fmt_time(tb, sizeof(tb), compare_seconds(c, f, 1, 0));
	fmt_delta(d, sizeof(d), delta, secs);
	strbuf_addf(sb, "total %s → %s (%s; %.1f%% → %.1f%% of the samples)", ta, tb, d,
		    compare_share(c, f, 0, 0), compare_share(c, f, 1, 0));
}

/* With repeated runs, what the test says of f's change, appended to sb:
 * "significant: B/A 0.05 (95% CI 0.04-0.06), p=0.0079". */
static void test_phrase(const struct compare *c, const struct compare_func *f, struct strbuf *sb)
{
	if (!c->tested)
		return;
	if (!f->test.tested) {
		if (f->inherited)
			strbuf_addstr(sb, "not tested: a callee's change explains it");
		else
			strbuf_addf(sb, "not tested: a change under %.0f%% of a run",
				    COMPARE_TEST_MIN_PTS);
		return;
	}
	strbuf_addstr(sb, f->test.significant ? "significant: " : "no significant difference: ");
	if (f->test.has_ratio)
		strbuf_addf(sb, "B/A %.2f (95%% CI %.2f-%.2f), ", f->test.ratio, f->test.lo,
			    f->test.hi);
	stats_p_format(f->test.p, sb);
}

/* "A = DIR (3 runs, 1200 samples)", or one run's "A = DIR (400 samples)". */
static void side_label(const struct compare *c, int r, const char *name, struct strbuf *sb)
{
	strbuf_addf(sb, "%s = %s (", r ? "B" : "A", name);
	if (c->run[r].nruns > 1)
		strbuf_addf(sb, "%zu runs, ", c->run[r].nruns);
	strbuf_addf(sb, "%lld samples)", (long long)c->run[r].samples_all);
}

static const struct compare_func *most_changed(const struct compare *c)
{
	if (!c->nranked)
		return NULL;
	const struct compare_func *f = &c->v[c->ranked[0]];
	return compare_total_delta(c, f, NULL) != 0 ? f : NULL;
}

/* "hot_a shrank: total ..." or, when repeated runs do not show it,
 * "no significant difference (the largest change: hot_a, total ...; p=...)". */
static void headline(const struct compare *c, const struct compare_func *top, struct strbuf *sb)
{
	if (c->tested && !top->test.significant) {
		strbuf_addf(sb,
			    "no significant difference across %zu and %zu runs (the largest "
			    "change: %s, ",
			    c->run[0].nruns, c->run[1].nruns, top->function);
		change_sentence(c, top, sb);
		strbuf_addstr(sb, "; ");
		test_phrase(c, top, sb);
		strbuf_addch(sb, ')');
		return;
	}
	strbuf_addf(sb, "%s %s: ", top->function,
		    compare_total_delta(c, top, NULL) < 0 ? "shrank" : "grew");
	change_sentence(c, top, sb);
	if (c->tested) {
		strbuf_addstr(sb, "; ");
		test_phrase(c, top, sb);
	}
}

/* One line of outside text (names) on the terminal, escaped, then cleared. */
static void line_flush(FILE *out, struct strbuf *sb)
{
	utf8_print(out, sb->buf, 0);
	fputc('\n', out);
	strbuf_reset(sb);
}

/* Whether another sampled function has f's name (Python's main and C's main):
 * the terminal then names its module. */
static int name_shared(const struct compare *c, const struct compare_func *f)
{
	for (size_t k = 0; k < c->nranked; k++) {
		const struct compare_func *g = &c->v[c->ranked[k]];
		if (g != f && !strcmp(g->function, f->function))
			return 1;
	}
	return 0;
}

/* When one side is a family and the other one run, what their times are,
 * after prefix: "A is 5 runs and B one: ..."; 0 and nothing otherwise. */
static int family_note(const struct compare *c, const char *prefix, struct strbuf *sb)
{
	size_t na = c->run[0].nruns, nb = c->run[1].nruns;
	if (c->tested || (na <= 1 && nb <= 1))
		return 0;
	int many = na > 1 ? 0 : 1;
	strbuf_addf(sb,
		    "%s%s is %zu runs and %s one: %s's times are the mean of its runs and %s's "
		    "are one run's, with no test of significance (it needs two runs a side or "
		    "more: 'sonde run --repeat N' for %s too)",
		    prefix, many ? "B" : "A", c->run[many].nruns, many ? "A" : "B",
		    many ? "B" : "A", many ? "A" : "B", many ? "A" : "B");
	return 1;
}

/* "A, runs 1 and 3 of 5: busy: TEXT", or "A: TEXT" for a side of one run. */
static void warning_line(const struct compare *c, int r, json_t *w, struct strbuf *sb)
{
	json_t *runs = json_object_get(w, "runs");
	strbuf_addstr(sb, r ? "B" : "A");
	if (c->run[r].nruns > 1) {
		size_t n = json_array_size(runs);
		strbuf_addstr(sb, n > 1 ? ", runs " : ", run ");
		for (size_t i = 0; i < n; i++)
			strbuf_addf(sb, "%s%lld",
				    i == 0	? ""
				    : i + 1 < n ? ", "
						: " and ",
				    (long long)json_integer_value(json_array_get(runs, i)));
		strbuf_addf(sb, " of %zu", c->run[r].nruns);
	}
	strbuf_addf(sb, ": %s", json_string_value(json_object_get(w, "text")));
}

/* "GPU kernels: 1.20 s → 800.0 ms a run (-400.0 ms); most changed: NAME ..." */
static void gpu_sentence(const struct compare *c, struct strbuf *sb)
{
	const struct compare_gpu *g = &c->gpu;
	char ta[32], tb[32], d[32];
	fmt_time(ta, sizeof(ta), g->kernel_s[0]);
	fmt_time(tb, sizeof(tb), g->kernel_s[1]);
	fmt_delta(d, sizeof(d), g->kernel_s[1] - g->kernel_s[0], 1);
	strbuf_addf(sb, "GPU kernel time %s → %s (%s)", ta, tb, d);
	if (g->n && g->v[0].total_s[1] != g->v[0].total_s[0]) {
		fmt_delta(d, sizeof(d), g->v[0].total_s[1] - g->v[0].total_s[0], 1);
		strbuf_addf(sb, "; the kernel that changed most: %s (%s)", g->v[0].name, d);
	}
}

void compare_terminal(const struct compare *c, const char *const names[2], FILE *out)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "sonde compare: ");
	side_label(c, 0, names[0], &sb);
	strbuf_addstr(&sb, ", ");
	side_label(c, 1, names[1], &sb);
	line_flush(out, &sb);
	if (family_note(c, "note: ", &sb))
		line_flush(out, &sb);
	for (int r = 0; r < 2; r++) {
		json_t *w;
		size_t i;
		json_array_foreach(c->warnings[r], i, w)
		{
			strbuf_addstr(&sb, "machine: ");
			warning_line(c, r, w, &sb);
			line_flush(out, &sb);
		}
	}
	if (compare_gpu_both(&c->gpu)) {
		gpu_sentence(c, &sb);
		line_flush(out, &sb);
	}
	const struct compare_func *top = most_changed(c);
	if (!top) {
		fputs("no function's time changed\n", out);
		strbuf_release(&sb);
		return;
	}
	strbuf_addstr(&sb, "what changed most: ");
	headline(c, top, &sb);
	line_flush(out, &sb);
	fprintf(out, "top changes:\n  %13s  %13s  function\n", "Δ total", "Δ self");
	for (size_t k = 0; k < c->nranked && k < COMPARE_TERMINAL_TOP; k++) {
		const struct compare_func *f = &c->v[c->ranked[k]];
		int secs;
		double dt = compare_total_delta(c, f, &secs);
		if (dt == 0)
			break;
		char d[32], ds[32];
		fmt_delta(d, sizeof(d), dt, secs);
		fmt_delta(ds, sizeof(ds),
			  secs ? compare_seconds(c, f, 1, 1) - compare_seconds(c, f, 0, 1)
			       : compare_share(c, f, 1, 1) - compare_share(c, f, 0, 1),
			  secs);
		strbuf_addf(&sb, "  %12s  %12s  %s", d, ds, f->function);
		if (name_shared(c, f) && f->module)
			strbuf_addf(&sb, " [%s]", f->module);
		if (f->inherited)
			strbuf_addstr(&sb, " (through a callee)");
		if (c->tested) {
			strbuf_addstr(&sb, " (");
			test_phrase(c, f, &sb);
			strbuf_addch(&sb, ')');
		}
		line_flush(out, &sb);
	}
	strbuf_release(&sb);
}

static void md_delta_cell(FILE *out, double d, int in_seconds)
{
	char buf[32];
	fmt_delta(buf, sizeof(buf), d, in_seconds);
	fprintf(out, " %s |", buf);
}

static void md_time_cell(FILE *out, double s)
{
	fputc(' ', out);
	md_cell_s(out, s);
	fputs(" |", out);
}

static void md_functions(FILE *out, const struct compare *c)
{
	int secs = !isnan(c->run[0].period_s) && !isnan(c->run[1].period_s);
	fprintf(out,
		"## Functions\n\nThe %d biggest changes of total time (%s); a function "
		"whose change one of its callees explains is listed after the rest.\n\n",
		COMPARE_MD_TOP, secs ? "seconds: samples / the sampling rate" : "share points");
	if (c->tested)
		fprintf(out,
			"Each side has several runs: times are the mean per run, and the last "
			"column tests each change of %.0f%% of a run or more (Mann-Whitney U "
			"over the runs' total times, bootstrap 95%% CI of the ratio of medians "
			"B / A, Holm-Bonferroni over the functions tested).\n\n",
			COMPARE_TEST_MIN_PTS);
	fprintf(out,
		"| function | module | self A | self B | Δ self | total A | total B | Δ total "
		"| share A | share B | Δ share |%s\n"
		"|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|%s\n",
		c->tested ? " test |" : "", c->tested ? "---|" : "");
	for (size_t k = 0; k < c->nranked && k < COMPARE_MD_TOP; k++) {
		const struct compare_func *f = &c->v[c->ranked[k]];
		fputs("| ", out);
		md_cell(out, f->function);
		fputs(" | ", out);
		md_cell(out, f->module ? f->module : "");
		fputs(" |", out);
		md_time_cell(out, compare_seconds(c, f, 0, 1));
		md_time_cell(out, compare_seconds(c, f, 1, 1));
		md_delta_cell(out, compare_seconds(c, f, 1, 1) - compare_seconds(c, f, 0, 1), 1);
		md_time_cell(out, compare_seconds(c, f, 0, 0));
		md_time_cell(out, compare_seconds(c, f, 1, 0));
		md_delta_cell(out, compare_seconds(c, f, 1, 0) - compare_seconds(c, f, 0, 0), 1);
		fprintf(out, " %.1f%% | %.1f%% |", compare_share(c, f, 0, 0),
			compare_share(c, f, 1, 0));
		md_delta_cell(out, compare_share(c, f, 1, 0) - compare_share(c, f, 0, 0), 0);
		if (c->tested) {
			struct strbuf sb = STRBUF_INIT;
			test_phrase(c, f, &sb);
			fputc(' ', out);
			md_cell(out, sb.buf);
			fputs(" |", out);
			strbuf_release(&sb);
		}
		fputc('\n', out);
	}
	fputc('\n', out);
}

static void md_phases(FILE *out, json_t *const reports[2])
{
	json_t *phases = compare_phases(reports[0], reports[1]);
	fputs("## Phases\n\n", out);
	if (!json_array_size(phases)) {
		fputs("Neither run has phases.\n\n", out);
		json_decref(phases);
		return;
	}
	fputs("| phase | duration A | duration B | Δ duration | CPU A | CPU B | Δ CPU |\n"
	      "|---|--:|--:|--:|--:|--:|--:|\n",
	      out);
	size_t i;
	json_t *p;
	json_array_foreach(phases, i, p)
	{
		json_t *a = json_object_get(p, "a"), *b = json_object_get(p, "b");
		fputs("| ", out);
		md_cell(out, md_str(p, "name"));
		fputs(" |", out);
		static const char *const keys[] = { "duration_s", "cpu_s" };
		for (int k = 0; k < 2; k++) {
			double va = md_num(a, keys[k]), vb = md_num(b, keys[k]);
			md_time_cell(out, va);
			md_time_cell(out, vb);
			md_delta_cell(out, vb - va, 1);
		}
		fputc('\n', out);
	}
	fputc('\n', out);
	json_decref(phases);
}

/* " A | B | Δ" of two byte counts, dashes where unknown. */
static void md_bytes_cells(FILE *out, double a, double b)
{
	fputc(' ', out);
	md_cell_bytes(out, a);
	fputs(" | ", out);
	md_cell_bytes(out, b);
	fputs(" | ", out);
	if (isnan(a) || isnan(b)) {
		fputs("–", out);
	} else {
		fputs(b >= a ? "+" : "-", out);
		md_cell_bytes(out, fabs(b - a));
	}
}

static void md_bytes_row(FILE *out, const char *label, double a, double b)
{
	fprintf(out, "| %s |", label);
	md_bytes_cells(out, a, b);
	fputs(" |\n", out);
}

/* The heap sites of both runs matched by function, the biggest change of
 * peak first (compare_heap.h). */
static void md_heap_sites(FILE *out, json_t *const reports[2])
{
	json_t *sites = compare_heap_sites(reports[0], reports[1]), *e;
	size_t i;
	if (json_array_size(sites))
		fprintf(out,
			"\nHeap by allocating function (each run's top sites, matched by function "
			"and file; – where a run does not list it), the %d biggest changes of "
			"peak:\n\n| function | file | peak A | peak B | Δ peak | allocated A "
			"| allocated B | Δ allocated |\n|---|---|--:|--:|--:|--:|--:|--:|\n",
			COMPARE_MD_HEAP_TOP);
	json_array_foreach(sites, i, e)
	{
		if (i >= COMPARE_MD_HEAP_TOP)
			break;
		json_t *a = json_object_get(e, "a"), *b = json_object_get(e, "b");
		fputs("| ", out);
		md_cell(out, md_str(e, "function"));
		fputs(" | ", out);
		md_cell(out, md_str(e, "file"));
		static const char *const keys[] = {"peak_bytes", "allocated_bytes"};
		for (int k = 0; k < 2; k++) {
			fputs(" |", out);
			md_bytes_cells(out, md_num(a, keys[k]), md_num(b, keys[k]));
		}
		fputs(" |\n", out);
	}
	json_decref(sites);
}

static void md_memory(FILE *out, json_t *const reports[2])
{
	json_t *mem[2] = {json_object_get(reports[0], "memory"),
			  json_object_get(reports[1], "memory")};
	json_t *heap[2] = {json_object_get(mem[0], "heap"), json_object_get(mem[1], "heap")};
	fputs("## Memory\n\n| | A | B | Δ |\n|---|--:|--:|--:|\n", out);
	md_bytes_row(out, "peak RSS", md_num(mem[0], "peak_rss_bytes"),
		     md_num(mem[1], "peak_rss_bytes"));
	if (!heap[0] && !heap[1])
		return;
	md_bytes_row(out, "heap peak", md_num(heap[0], "peak_bytes"),
		     md_num(heap[1], "peak_bytes"));
	md_bytes_row(out, "heap live at exit", md_num(heap[0], "leaked_bytes"),
		     md_num(heap[1], "leaked_bytes"));
	md_bytes_row(out, "heap allocated", md_num(heap[0], "allocated_bytes"),
		     md_num(heap[1], "allocated_bytes"));
	if (!heap[0] || !heap[1])
		fprintf(out, "\nOnly %s tracked its heap (--memory): the heap is not compared.\n",
			heap[0] ? "A" : "B");
	else
		md_heap_sites(out, reports);
}

/* The GPU kernels of both sides, the largest change first; a line when only
 * one side ran GPU work; nothing when neither did. */
static void md_gpu(FILE *out, const struct compare *c)
{
	const struct compare_gpu *g = &c->gpu;
	if (!g->present[0] && !g->present[1])
		return;
	fputs("\n## GPU kernels\n\n", out);
	if (!compare_gpu_both(g)) {
		fprintf(out, "Only %s ran GPU kernels: there is nothing to compare them with.\n",
			g->present[0] ? "A" : "B");
		return;
	}
	int many = c->run[0].nruns > 1 || c->run[1].nruns > 1;
	fprintf(out,
		"GPU time by kernel (demangled name), the %d biggest changes of %zu "
		"kernels%s.\n\n| kernel | calls A | calls B | time A | time B | Δ time |\n"
		"|---|--:|--:|--:|--:|--:|\n| all kernels | %.0f | %.0f |",
		COMPARE_MD_TOP, g->n,
		many ? "; a family's times and calls are the mean per run" : "", g->kernels[0],
		g->kernels[1]);
	md_time_cell(out, g->kernel_s[0]);
	md_time_cell(out, g->kernel_s[1]);
	md_delta_cell(out, g->kernel_s[1] - g->kernel_s[0], 1);
	fprintf(out, "\n| all copies | %.0f | %.0f |", g->copies[0], g->copies[1]);
	md_time_cell(out, g->copy_s[0]);
	md_time_cell(out, g->copy_s[1]);
	md_delta_cell(out, g->copy_s[1] - g->copy_s[0], 1);
	fputc('\n', out);
	for (size_t k = 0; k < g->n && k < COMPARE_MD_TOP; k++) {
		const struct compare_kernel *kn = &g->v[k];
		fputs("| ", out);
		md_cell(out, kn->name);
		fprintf(out, " | %.0f | %.0f |", kn->count[0], kn->count[1]);
		md_time_cell(out, kn->total_s[0]);
		md_time_cell(out, kn->total_s[1]);
		md_delta_cell(out, kn->total_s[1] - kn->total_s[0], 1);
		fputc('\n', out);
	}
}

/* The family note and each side's machine warnings, as a list. */
static void md_caveats(FILE *out, const struct compare *c)
{
	struct strbuf sb = STRBUF_INIT;
	if (family_note(c, "", &sb)) {
		fputs("\n**Note:** ", out);
		md_text(out, sb.buf);
		fputs(".\n", out);
		strbuf_reset(&sb);
	}
	int any = 0;
	for (int r = 0; r < 2; r++) {
		json_t *w;
		size_t i;
		json_array_foreach(c->warnings[r], i, w)
		{
			if (!any++)
				fputs(
				    "\n**Machine warnings** (the numbers of a run with one are less "
				    "sure):\n\n",
				    out);
			warning_line(c, r, w, &sb);
			fputs("- ", out);
			md_text(out, sb.buf);
			fputc('\n', out);
			strbuf_reset(&sb);
		}
	}
	strbuf_release(&sb);
}

void compare_md_write(const struct compare *c, json_t *const reports[2], const char *const names[2],
		      FILE *out)
{
	fputs("# sonde compare\n\n", out);
	for (int r = 0; r < 2; r++) {
		const struct compare_run *run = &c->run[r];
		fprintf(out, "- %s: ", r ? "B (after)" : "A (before)");
		md_code(out, names[r]);
		if (run->nruns > 1)
			fprintf(out, ", %zu runs", run->nruns);
		fprintf(out, ", %lld %s samples", (long long)run->samples_all,
			run->source ? run->source : "no");
		if (!isnan(run->period_s))
			fprintf(out, " at %.0f Hz", 1.0 / run->period_s);
		fputc('\n', out);
	}
	md_caveats(out, c);
	const struct compare_func *top = most_changed(c);
	fputs("\n**What changed most:** ", out);
	if (top && c->tested && !top->test.significant) {
		struct strbuf sb = STRBUF_INIT;
		headline(c, top, &sb);
		md_text(out, sb.buf);
		strbuf_release(&sb);
	} else if (top) {
		struct strbuf sb = STRBUF_INIT;
		md_code(out, top->function);
		change_sentence(c, top, &sb);
		if (c->tested) {
			strbuf_addstr(&sb, "; ");
			test_phrase(c, top, &sb);
		}
		fprintf(out, " %s: ", compare_total_delta(c, top, NULL) < 0 ? "shrank" : "grew");
		md_text(out, sb.buf);
		strbuf_release(&sb);
	} else {
		fputs("no function's time changed.", out);
	}
	fputs("\n\nThe differential flame graph is diff.svg: B's stacks, red where a function "
	      "grew since A, blue where it shrank.\n\n",
	      out);
	md_functions(out, c);
	md_phases(out, reports);
	md_memory(out, reports);
	md_gpu(out, c);
}

struct diff_paint {
	const struct compare *c;
	double max_abs; /* the largest |Δ total| of a function drawn */
};

static void diff_color(void *arg, size_t func, char *color, size_t cap, struct strbuf *note)
{
	const struct diff_paint *p = arg;
	const struct compare_func *f = &p->c->v[p->c->run[1].entry[func]];
	int secs;
	double d = compare_total_delta(p->c, f, &secs);
	double x = p->max_abs > 0 ? fabs(d) / p->max_abs : 0;
	int fade = (int)lround(255 * (1 - (x > 1 ? 1 : x)));
	if (d > 0)
		snprintf(color, cap, "rgb(255,%d,%d)", fade, fade);
	else if (d < 0)
		snprintf(color, cap, "rgb(%d,%d,255)", fade, fade);
	else
		snprintf(color, cap, "rgb(255,255,255)");
	char buf[32];
	fmt_delta(buf, sizeof(buf), d, secs);
	strbuf_addf(note, "; total %s since A", buf);
}

int compare_svg_write(const struct compare *c, FILE *out)
{
	struct diff_paint p = { c, 0 };
	const struct compare_run *b = &c->run[1];
	for (size_t i = 0; i < b->ss.nfuncs; i++) {
		double d = fabs(compare_total_delta(c, &c->v[b->entry[i]], NULL));
		if (d > p.max_abs)
			p.max_abs = d;
	}
	struct flame_paint paint = { diff_color, &p };
	struct strbuf title = STRBUF_INIT;
	strbuf_addf(&title, "Differential flame graph: B's %lld samples, red grew, blue shrank",
		    (long long)b->ss.total_samples);
	int rc = flamegraph_write_painted(&b->ss, FLAME_SAMPLES, title.buf, &paint, out);
	strbuf_release(&title);
	return rc;
}
