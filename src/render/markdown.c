/* markdown renderer: report.md, Part A (what was measured, by dimension, and
 * the ranked findings) and Part B (the instrumentation changelog). */
#include "render.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

/* Outside text with control characters and stray bytes escaped (\x1b):
 * report.md is read in terminals (cat, less -r) as much as in viewers. */
static const char *md_escaped(const char *s, struct strbuf *sb)
{
	if (s)
		utf8_escape(s, strlen(s), 0, sb);
	return strbuf_str(sb);
}

/* Table cells: no pipes, newlines or raw markup (HTML, links) from outside
 * text. A backslash before punctuation is escaped too: left alone, it would
 * turn the "\\|" that follows into a cell border; before anything else
 * (the \x1b of an escaped control character) it is literal already.
 * Emphasis characters stay as they are, so report.md reads well as plain text. */
static void md_cell(FILE *out, const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *s = md_escaped(text, &sb); *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '\\':
			fputs(!s[1] || ispunct((unsigned char)s[1]) ? "\\\\" : "\\", out);
			break;
		case '|': case '`': case '[':
			fputc('\\', out);
			fputc(*s, out);
			break;
		default: fputc(*s, out);
		}
	}
	strbuf_release(&sb);
}

/* A code span holding outside text verbatim. Backslashes are literal inside
 * code spans, so instead of escaping, the fence is one backtick longer than
 * the longest run of backticks in s, and padded with spaces (which CommonMark
 * strips) so a leading or trailing backtick cannot merge with it. */
static void md_code(FILE *out, const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s = md_escaped(text, &sb);
	size_t longest = 0, run = 0;
	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	for (size_t i = 0; i <= longest; i++)
		fputc('`', out);
	fprintf(out, " %s ", s);
	for (size_t i = 0; i <= longest; i++)
		fputc('`', out);
	strbuf_release(&sb);
}

/* Prose lines: code spans stay code, raw markup does not pass. */
static void md_text(FILE *out, const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *s = md_escaped(text, &sb); *s; s++) {
		if (*s == '<')
			fputs("&lt;", out);
		else
			fputc(*s, out);
	}
	strbuf_release(&sb);
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static void cell_s(FILE *out, double s)
{
	char buf[32];
	if (isnan(s)) {
		fputs("–", out);
		return;
	}
	fmt_seconds(buf, sizeof(buf), s);
	fputs(buf, out);
}

static void cell_bytes(FILE *out, double b)
{
	char buf[32];
	if (isnan(b) || b < 0) {
		fputs("–", out);
		return;
	}
	fmt_bytes(buf, sizeof(buf), b);
	fputs(buf, out);
}

/* v * scale in fmt (one double conversion), or a dash when unknown. */
static void cell_num(FILE *out, double v, const char *fmt, double scale)
{
	if (isnan(v))
		fputs("–", out);
	else
		fprintf(out, fmt, v * scale);
}

static void cell_int(FILE *out, double v)
{
	if (isnan(v) || v < 0)
		fputs("–", out);
	else
		fprintf(out, "%.0f", v);
}

/* Eight-level sparkline of one key of a timeline (RSS, live heap). */
static void sparkline(FILE *out, json_t *timeline, const char *key, double peak)
{
	static const char *bars[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
	size_t n = json_array_size(timeline), step = n > 60 ? (n + 59) / 60 : 1;
	for (size_t i = 0; i < n && peak > 0; i += step) {
		double m = 0;
		for (size_t j = i; j < i + step && j < n; j++) {
			double v = num(json_array_get(timeline, j), key);
			m = v > m ? v : m;
		}
		double level = m / peak * 7.999; /* clamped before the cast: m may pass peak */
		int k = level > 0 ? (level < 7 ? (int)level : 7) : 0;
		fputs(bars[k], out);
	}
}

static void section_findings(FILE *out, json_t *report)
{
	json_t *fs = json_object_get(report, "findings");
	fputs("## Findings\n\n", out);
	if (!json_array_size(fs)) {
		fputs("No finding: nothing measured in this run stands out.\n\n", out);
		return;
	}
	size_t i;
	json_t *f;
	json_array_foreach(fs, i, f) {
		json_t *impact = json_object_get(f, "impact");
		fprintf(out, "### %zu. ", i + 1);
		md_cell(out, str(f, "title"));
		fprintf(out, "\n\n*%s* · ", str(f, "dimension"));
		if (json_string_value(json_object_get(f, "id"))) {
			fputc('`', out);
			md_cell(out, str(f, "id"));
			fputs("` · ", out);
		}
		fputs("at stake: ", out);
		if (!isnan(num(impact, "seconds")))
			cell_s(out, num(impact, "seconds"));
		if (!isnan(num(impact, "seconds")) && !isnan(num(impact, "bytes")))
			fputs(" and ", out);
		if (!isnan(num(impact, "bytes")) || isnan(num(impact, "seconds")))
			cell_bytes(out, num(impact, "bytes"));
		fprintf(out, " (%.0f%% of the run)\n\n", num(impact, "share_pct"));
		static const char *rows[][2] = { { "Location", "location" },
						 { "Evidence", "evidence" },
						 { "Diagnosis", "diagnosis" },
						 { "Next step", "next_step" },
						 { "Validation", "validation" } };
		for (size_t r = 0; r < 5; r++) {
			fprintf(out, "- **%s**: ", rows[r][0]);
			md_text(out, str(f, rows[r][1]));
			fputc('\n', out);
		}
		fputc('\n', out);
	}
}

/* cpu.thread_counters: the counted threads with the most of the first event. */
static void section_thread_counters(FILE *out, json_t *cpu)
{
	json_t *threads = json_object_get(cpu, "thread_counters");
	json_t *first = json_array_get(threads, 0);
	if (!first)
		return;
	json_t *counts = json_object_get(first, "counts"), *v, *t;
	const char *event;
	size_t i, shown = json_array_size(threads) < 20 ? json_array_size(threads) : 20;
	fprintf(out, "Counters per thread (%zu of %lld threads):\n\n| pid | tid | thread |", shown,
		(long long)num(cpu, "thread_counters_total"));
	json_object_foreach (counts, event, v) {
		fputc(' ', out);
		md_cell(out, event);
		fputs(" |", out);
	}
	fputs(" IPC | cache miss rate |\n|---|---|---|", out);
	json_object_foreach (counts, event, v)
		fputs("---|", out);
	fputs("---|---|\n", out);
	json_array_foreach (threads, i, t) {
		if (i == shown)
			break;
		fprintf(out, "| %lld | %lld | ", (long long)num(t, "pid"), (long long)num(t, "tid"));
		md_cell(out, *str(t, "name") ? str(t, "name") : "–");
		fputs(" |", out);
		json_object_foreach (counts, event, v) {
			fputc(' ', out);
			cell_int(out, num(json_object_get(t, "counts"), event));
			fputs(" |", out);
		}
		fputc(' ', out);
		cell_num(out, num(t, "ipc"), "%.2f", 1);
		fputs(" | ", out);
		cell_num(out, num(t, "cache_miss_rate"), "%.1f%%", 100);
		fputs(" |\n", out);
	}
	fputc('\n', out);
}

static void section_cpu(FILE *out, json_t *report)
{
	json_t *cpu = json_object_get(report, "cpu");
	if (!cpu)
		return;
	fputs("## CPU\n\n| metric | value |\n|---|---|\n", out);
	fputs("| user time | ", out);
	cell_s(out, num(cpu, "user_s"));
	fputs(" |\n| system time | ", out);
	cell_s(out, num(cpu, "sys_s"));
	fprintf(out, " |\n| CPU/wall | %.2f |\n", num(cpu, "utilization"));
	fputs("| voluntary context switches | ", out);
	cell_int(out, num(cpu, "voluntary_ctx_switches"));
	fputs(" |\n| involuntary context switches | ", out);
	cell_int(out, num(cpu, "involuntary_ctx_switches"));
	fputs(" |\n| waiting for a CPU (run queue) | ", out);
	cell_s(out, num(cpu, "runqueue_wait_s"));
	fputs(" |\n| minor / major page faults | ", out);
	cell_int(out, num(cpu, "minor_faults"));
	fputs(" / ", out);
	cell_int(out, num(cpu, "major_faults"));
	fputs(" |\n", out);
	const char *busy = json_string_value(json_object_get(cpu, "contention_note"));
	if (busy) {
		fputs("\n", out);
		md_text(out, busy);
		fputs("\n", out);
	}
	json_t *hw = json_object_get(cpu, "counters");
	if (json_is_object(hw)) {
		fputs("| instructions per cycle (IPC) | ", out);
		cell_num(out, num(hw, "ipc"), "%.2f", 1);
		fputs(" |\n| cache miss rate | ", out);
		cell_num(out, num(hw, "cache_miss_rate"), "%.1f%%", 100);
		fputs(" |\n| branch miss rate | ", out);
		cell_num(out, num(hw, "branch_miss_rate"), "%.2f%%", 100);
		fputs(" |\n", out);
	}
	fputc('\n', out);
	if (json_is_object(hw) && !isnan(num(hw, "ipc"))) {
		double ipc = num(hw, "ipc");
		fprintf(out, "Hardware counters: IPC %.2f, %s%s\n\n", ipc,
			ipc < 1 ? "under one instruction per cycle: the cores are likely stalled "
				  "(memory-bound or waiting on dependencies)"
				: "the cores retire instructions at a healthy rate",
			json_is_true(json_object_get(hw, "multiplexed"))
				? " (counts scaled: the counters were multiplexed)"
				: "");
	} else if (!json_is_object(hw)) {
		const char *why = json_string_value(
			json_object_get(json_object_get(report, "not_measured"), "counters"));
		if (why) {
			fputs("Hardware counters: not measured (", out);
			md_text(out, why);
			fputs(").\n\n", out);
		}
	}
	section_thread_counters(out, cpu);
}

/* "file:line" or the module, for a hotspot row. */
static void md_location(FILE *out, json_t *h)
{
	const char *file = str(h, "file");
	if (!*file)
		file = str(h, "module");
	md_cell(out, *file ? file : "–");
	if (!isnan(num(h, "line")))
		fprintf(out, ":%.0f", num(h, "line"));
}

static void section_hotspots(FILE *out, json_t *report)
{
	json_t *hs = json_object_get(report, "hotspots");
	json_t *src = json_object_get(report, "hotspots_source");
	if (!json_array_size(hs))
		return;
	const char *mode = str(src, "mode");
	int py = !strcmp(str(src, "source"), "python") || !strcmp(str(src, "source"), "mixed");
	const char *event = str(src, "event");
	int by_event = *event && strcmp(event, "cycles") && strcmp(event, "cpu-clock");
	int ipc = !isnan(num(src, "ipc")); /* the samples read cycles and instructions */
	fprintf(out, "## Hotspots\n\nFrom %.0f %s samples%s%s%s", num(src, "samples"),
		str(src, "source"), py ? " (mode " : "", py ? mode : "",
		!py		       ? ""
		: !strcmp(mode, "wall") ? ": every sample, on or off the CPU)"
		: !strcmp(mode, "gil")	? ": the thread held the GIL)"
					: ": on-CPU samples)");
	if (by_event) {
		fputs(" of the ", out);
		md_cell(out, event);
		fputs(" event (--event): they count where ", out);
		md_cell(out, event);
		fputs(" happen, not time", out);
	}
	fputs("; self: the function's own code, total: with what it calls.", out);
	if (ipc)
		fputs(" IPC and cache misses per 1000 instructions: counted in the function's own "
		      "samples (each sample reads the counters).",
		      out);
	fprintf(out, "\n\n| # | function | location | self | total | samples |%s\n"
		     "|---|---|---|---|---|---|%s\n",
		ipc ? " IPC | misses / 1k instr |" : "", ipc ? "---|---|" : "");
	size_t i;
	json_t *h;
	json_array_foreach(hs, i, h) {
		fprintf(out, "| %zu | ", i + 1);
		md_cell(out, str(h, "function"));
		fputs(" | ", out);
		md_location(out, h);
		fprintf(out, " | %.1f%% | %.1f%% | %.0f |", num(h, "self_pct"),
			num(h, "total_pct"), num(h, "samples"));
		if (ipc) {
			fputc(' ', out);
			cell_num(out, num(h, "ipc"), "%.2f", 1);
			fputs(" | ", out);
			cell_num(out, num(h, "cache_misses_per_kinstr"), "%.1f", 1);
			fputs(" |", out);
		}
		fputc('\n', out);
	}
	json_t *lines = json_object_get(report, "hot_lines");
	if (json_array_size(lines)) {
		fputs("\n### Hot lines\n\n| line | function | share of samples | share of the "
		      "function |\n|---|---|---|---|\n",
		      out);
		json_array_foreach(lines, i, h) {
			fputs("| ", out);
			md_location(out, h);
			fputs(" | ", out);
			md_cell(out, str(h, "function"));
			fprintf(out, " | %.1f%% | %.1f%% |\n", num(h, "pct"),
				num(h, "function_pct"));
		}
	}
	json_t *tree = json_object_get(report, "call_tree");
	if (json_array_size(tree)) {
		fputs("\n### Call tree\n\nEach call path is its own branch (total %, self % "
		      "when the function's own code runs).\n\n",
		      out);
		json_array_foreach(tree, i, h) {
			int depth = (int)num(h, "depth");
			fprintf(out, "%*s- %.1f%% ", 2 * (depth > 1 ? depth - 1 : 0), "",
				num(h, "total_pct"));
			md_code(out, str(h, "function"));
			if (num(h, "self_pct") >= 0.05)
				fprintf(out, " (self %.1f%%)", num(h, "self_pct"));
			fputc('\n', out);
		}
	}
	fputc('\n', out);
}

static void cell_pct(FILE *out, double v)
{
	cell_num(out, v, "%.0f%%", 1);
}

/* report["python"]: the threads of the Python processes and the GIL. */
static void section_python(FILE *out, json_t *report)
{
	json_t *py = json_object_get(report, "python");
	if (!py)
		return;
	json_t *gil = json_object_get(py, "gil");
	fputs("## Python threads\n\n", out);
	if (!isnan(num(gil, "held_pct")))
		fprintf(out,
			"GIL held in %.0f%% of the sampled moments; contended (a thread on the CPU "
			"waits for it while another holds it) in %.0f%%.\n\n",
			num(gil, "held_pct"), num(gil, "contention_pct"));
	fputs("| pid | tid | name | samples | on CPU | holds GIL | idle |\n"
	      "|---|---|---|---|---|---|---|\n",
	      out);
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(py, "threads"), i, t) {
		if (i == 40) {
			fputs("| … | | | | | | |\n", out);
			break;
		}
		fprintf(out, "| %.0f | %.0f | ", num(t, "pid"), num(t, "tid"));
		md_cell(out, str(t, "name"));
		fprintf(out, " | %.0f | ", num(t, "samples"));
		cell_pct(out, num(t, "on_cpu_pct"));
		fputs(" | ", out);
		cell_pct(out, num(t, "gil_pct"));
		fputs(" | ", out);
		cell_pct(out, num(t, "idle_pct"));
		fputs(" |\n", out);
	}
	fputc('\n', out);
}

/* Where the threads wait: the offcpu probe's heaviest waits and threads. */
static void section_offcpu(FILE *out, json_t *report)
{
	json_t *o = json_object_get(report, "offcpu");
	json_t *waits = json_object_get(o, "waits"), *threads = json_object_get(o, "threads");
	if (!json_array_size(waits) && !json_array_size(threads))
		return;
	fputs("## Off-CPU time\n\nBlocked intervals from ", out);
	md_code(out, str(o, "event"));
	fprintf(out, " (flame graph: offcpu.svg); "
		     "state S sleeping, D uninterruptible (I/O), ? unknown. A wait's time is "
		     "summed over the threads that waited there, so its share of wall can pass "
		     "100%%.\n\n");
	size_t i;
	json_t *w;
	if (json_array_size(waits)) {
		fputs("| # | waiting in | location | blocking call | state | blocked | share of "
		      "wall |\n|---|---|---|---|---|---|---|\n",
		      out);
		json_array_foreach(waits, i, w) {
			fprintf(out, "| %zu | ", i + 1);
			md_cell(out, str(w, "function"));
			fputs(" | ", out);
			md_location(out, w);
			fputs(" | ", out);
			md_cell(out, str(w, "blocking_call"));
			fputs(" | ", out);
			md_cell(out, str(w, "state"));
			fputs(" | ", out);
			cell_s(out, num(w, "seconds"));
			fputs(" | ", out);
			cell_pct(out, num(w, "wall_pct"));
			fputs(" |\n", out);
		}
		fputc('\n', out);
	}
	if (json_array_size(threads)) {
		fputs("| thread | tid | on CPU | off CPU | off share |\n|---|---|---|---|---|\n", out);
		json_array_foreach(threads, i, w) {
			fputs("| ", out);
			md_cell(out, str(w, "name"));
			fprintf(out, " | %.0f | ", num(w, "tid"));
			cell_s(out, num(w, "on_cpu_s"));
			fputs(" | ", out);
			cell_s(out, num(w, "off_cpu_s"));
			fputs(" | ", out);
			cell_pct(out, num(w, "off_cpu_pct"));
			fputs(" |\n", out);
		}
		fputc('\n', out);
	}
}

static void section_heap(FILE *out, json_t *mem);

static void section_memory(FILE *out, json_t *report)
{
	json_t *mem = json_object_get(report, "memory");
	if (!mem)
		return;
	double peak = num(mem, "peak_rss_bytes");
	fputs("## Memory\n\n", out);
	if (isnan(peak)) {
		section_heap(out, mem); /* the proc probe did not run */
		return;
	}
	fputs("| metric | value |\n|---|---|\n| peak RSS | ", out);
	cell_bytes(out, peak);
	fputs(" at ", out);
	cell_s(out, num(mem, "peak_rss_at_s"));
	fprintf(out, " (%s) |\n\n", str(mem, "peak_rss_source"));
	json_t *tl = json_object_get(mem, "rss_timeline");
	if (json_array_size(tl) > 1) {
		fputs("RSS over time: `", out);
		sparkline(out, tl, "rss_bytes", num(mem, "sampled_peak_rss_bytes"));
		fputs("`\n\n", out);
	}
	json_t *jumps = json_object_get(mem, "rss_jumps");
	if (json_array_size(jumps)) {
		/* With the allocation tracker, the sites whose heap grew meanwhile. */
		int tracked = json_is_array(json_object_get(json_array_get(jumps, 0), "allocating"));
		fputs(tracked ? "| RSS jump | from | to | size | allocating then | running then |\n"
				"|---|---|---|---|---|---|\n"
			      : "| RSS jump | from | to | size | running then |\n|---|---|---|---|---|\n",
		      out);
		size_t i;
		json_t *j;
		json_array_foreach(jumps, i, j) {
			json_t *who = json_object_get(j, "during");
			fprintf(out, "| %zu | ", i + 1);
			cell_s(out, num(j, "start_s"));
			fputs(" | ", out);
			cell_s(out, num(j, "end_s"));
			fputs(" | +", out);
			cell_bytes(out, num(j, "size_bytes"));
			fputs(" | ", out);
			if (tracked) {
				json_t *top = json_array_get(json_object_get(j, "allocating"), 0);
				if (top) {
					md_cell(out, str(top, "location"));
					fputs(" +", out);
					cell_bytes(out, num(top, "bytes"));
				} else {
					fputs("no site's heap grew", out);
				}
				fputs(" | ", out);
			}
			if (json_is_object(who)) {
				md_cell(out, str(who, "function"));
				if (*str(who, "file")) {
					fputs(" (", out);
					md_cell(out, str(who, "file"));
					if (!isnan(num(who, "line")))
						fprintf(out, ":%.0f", num(who, "line"));
					fputc(')', out);
				}
			} else {
				fputs("no stack samples then", out);
			}
			fputs(" |\n", out);
		}
		fputc('\n', out);
	}
	section_heap(out, mem);
}

/* " ±12%" after a sampled estimate (one standard deviation). */
static void cell_sd(FILE *out, double sd, double value)
{
	if (!isnan(sd) && value > 0 && sd > 0)
		fprintf(out, " ±%.0f%%", 100.0 * sd / value);
}

/* The allocation tracker's figures and its top call sites. */
static void section_heap(FILE *out, json_t *mem)
{
	json_t *heap = json_object_get(mem, "heap");
	if (!heap)
		return;
	int est = json_is_true(json_object_get(heap, "estimated"));
	fputs("### Heap (allocation tracker, ", out);
	md_cell(out, str(heap, "mode"));
	fputs(" mode", out);
	if (est) {
		fputs(", one sample per ", out);
		cell_bytes(out, num(heap, "sampling_interval_bytes"));
		fputs(" on average: figures are estimates", out);
	}
	fputs(")\n\n| metric | value |\n|---|---|\n| heap peak | ", out);
	cell_bytes(out, num(heap, "peak_bytes"));
	fputs(" at ", out);
	cell_s(out, num(heap, "peak_at_s"));
	fputs(" |\n| leaked at exit | ", out);
	cell_bytes(out, num(heap, "leaked_bytes"));
	fputs(" in ", out);
	cell_int(out, num(heap, "leaked_allocations"));
	fputs(" allocations |\n| allocations | ", out);
	cell_int(out, num(heap, "allocations"));
	fputs(" (", out);
	cell_bytes(out, num(heap, "allocated_bytes"));
	fputs(") |\n| temporary allocations | ", out);
	cell_int(out, num(heap, "temporary_allocations"));
	fputs(" |\n| processes tracked | ", out);
	cell_int(out, num(heap, "processes"));
	fputs(" |\n\n", out);
	json_t *tl = json_object_get(heap, "timeline");
	double live_max = 0;
	size_t k;
	json_t *pt;
	json_array_foreach(tl, k, pt)
		live_max = fmax(live_max, num(pt, "live_bytes"));
	if (json_array_size(tl) > 1 && live_max > 0) {
		fputs("Live heap over time (100 ms steps): `", out);
		sparkline(out, tl, "live_bytes", live_max);
		fputs("`\n\n", out);
	}
	json_t *sites = json_object_get(heap, "top_sites");
	if (!json_array_size(sites))
		return;
	fputs("| call site | called from | at peak | leaked | allocations | temporaries | "
	      "redundant |\n|---|---|---|---|---|---|---|\n",
	      out);
	size_t i;
	json_t *site;
	json_array_foreach(sites, i, site) {
		fputs("| ", out);
		md_cell(out, str(site, "location"));
		if (!strcmp(str(site, "kind"), "mmap") || !strcmp(str(site, "kind"), "malloc+mmap"))
			fprintf(out, " (%s)", str(site, "kind"));
		fputs(" | ", out);
		json_t *stack = json_object_get(site, "stack");
		size_t n = json_array_size(stack);
		md_cell(out, n >= 2 ? json_string_value(json_array_get(stack, n - 2)) : "");
		fputs(" | ", out);
		cell_bytes(out, num(site, "peak_bytes"));
		cell_sd(out, num(site, "peak_bytes_sd"), num(site, "peak_bytes"));
		fputs(" | ", out);
		cell_bytes(out, num(site, "leaked_bytes"));
		cell_sd(out, num(site, "leaked_bytes_sd"), num(site, "leaked_bytes"));
		fputs(" | ", out);
		cell_int(out, num(site, "allocations"));
		fputs(" | ", out);
		cell_int(out, num(site, "temporary_allocations"));
		fputs(" | ", out);
		cell_bytes(out, num(site, "redundant_bytes")); /* "–" until measured */
		fputs(" |\n", out);
	}
	fputc('\n', out);
}

static void section_io(FILE *out, json_t *report)
{
	json_t *io = json_object_get(report, "io");
	if (!io)
		return;
	fputs("## I/O\n\n| metric | value |\n|---|---|\n| read (system calls) | ", out);
	cell_bytes(out, num(io, "read_bytes"));
	fputs(" |\n| written (system calls) | ", out);
	cell_bytes(out, num(io, "write_bytes"));
	fputs(" |\n| read from storage | ", out);
	cell_bytes(out, num(io, "storage_read_bytes"));
	fputs(" |\n| written to storage | ", out);
	cell_bytes(out, num(io, "storage_write_bytes"));
	fputs(" |\n\n", out);
}

static void section_processes(FILE *out, json_t *report)
{
	json_t *ps = json_object_get(report, "processes");
	if (!json_array_size(ps))
		return;
	fputs("## Processes\n\n| pid | parent | command | start | end | exit | user | system | peak "
	      "RSS | threads |\n|---|---|---|---|---|---|---|---|---|---|\n",
	      out);
	size_t i;
	json_t *p;
	json_array_foreach(ps, i, p) {
		fprintf(out, "| %.0f%s | %.0f | ", num(p, "pid"),
			json_is_true(json_object_get(p, "leader")) ? " (launched)" : "",
			num(p, "ppid"));
		md_cell(out, str(p, "command"));
		fputs(" | ", out);
		cell_s(out, num(p, "start_s"));
		fputs(" | ", out);
		if (isnan(num(p, "end_s")))
			fputs("running", out);
		else
			cell_s(out, num(p, "end_s"));
		fputs(" | ", out);
		if (!isnan(num(p, "signal")))
			fprintf(out, "signal %.0f", num(p, "signal"));
		else
			cell_int(out, num(p, "exit_code"));
		fputs(" | ", out);
		cell_s(out, num(p, "user_s"));
		fputs(" | ", out);
		cell_s(out, num(p, "sys_s"));
		fputs(" | ", out);
		cell_bytes(out, num(p, "peak_rss_bytes"));
		fputs(" | ", out);
		cell_int(out, num(p, "threads_max"));
		fputs(" |\n", out);
	}
	fputc('\n', out);
}

/* One line under the hotspots: the CPU time the samples stand for. */
static void section_coverage(FILE *out, json_t *report)
{
	json_t *c = json_object_get(report, "coverage");
	if (!c)
		return;
	fprintf(out, "**Sampling coverage**: %.0f samples at %.0f Hz stand for ", num(c, "samples"),
		num(c, "rate_hz"));
	cell_s(out, num(c, "sampled_cpu_s"));
	fputs(" of CPU time", out);
	if (!isnan(num(c, "coverage_pct"))) {
		fputs(" against ", out);
		cell_s(out, num(c, "cpu_s"));
		fprintf(out, " the kernel accounted (%.0f%%)", num(c, "coverage_pct"));
	}
	fputs(".", out);
	if (json_string_value(json_object_get(c, "note"))) {
		fputs(" **", out);
		md_cell(out, str(c, "note"));
		fputs("**", out);
	}
	fputs("\n\n", out);
}

static void section_not_measured(FILE *out, json_t *report)
{
	json_t *nm = json_object_get(report, "not_measured");
	json_t *probes = json_object_get(report, "probes");
	if (!json_object_size(nm) && !json_array_size(probes))
		return;
	fputs("## Not measured\n\n", out);
	const char *key;
	json_t *v;
	json_object_foreach(nm, key, v) {
		fprintf(out, "- **%s**: ", key);
		md_cell(out, json_string_value(v));
		fputc('\n', out);
	}
	size_t i;
	json_t *p;
	json_array_foreach(probes, i, p) {
		if (strcmp(str(p, "status"), "unavailable"))
			continue;
		fputs("- **probe ", out);
		md_cell(out, str(p, "name"));
		fputs("** unavailable: ", out);
		md_cell(out, str(p, "reason"));
		fputc('\n', out);
	}
	fputc('\n', out);
}

static void section_notes(FILE *out, json_t *report)
{
	json_t *notes = json_object_get(report, "notes");
	if (!json_array_size(notes))
		return;
	fputs("## Events\n\n", out);
	size_t i;
	json_t *n;
	json_array_foreach(notes, i, n) {
		fputs("- ", out);
		cell_s(out, num(n, "t_s"));
		fputs(": ", out);
		md_cell(out, str(n, "text"));
		fputc('\n', out);
	}
	fputc('\n', out);
}

static void section_changelog(FILE *out, json_t *report)
{
	json_t *cl = json_object_get(report, "changelog");
	fputs("# Part B: instrumentation changelog\n\n", out);
	if (!json_array_size(cl)) {
		fputs("sonde created or modified no file for this run outside its run directory, "
		      "and changed nothing in the target's environment.\n",
		      out);
		return;
	}
	fputs("| file | change | what | lines |\n|---|---|---|---|\n", out);
	size_t i;
	json_t *c;
	json_array_foreach(cl, i, c) {
		static const char *cols[] = { "file", "change", "what", "lines" };
		for (size_t k = 0; k < 4; k++) {
			fputs("| ", out);
			md_cell(out, str(c, cols[k]));
			fputc(' ', out);
		}
		fputs("|\n", out);
	}
	fputs("\nEnvironment changes live only in the profiled processes. Anything listed "
	      "here as staying after the run (a mount sonde could not undo) says how to undo "
	      "it.\n",
	      out);
}

static int markdown_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	(void)err;
	json_t *r = ctx->report, *t = json_object_get(r, "target");
	fputs("# sonde report: ", out);
	md_code(out, str(t, "command"));
	fputs("\n\n", out);
	json_t *code = json_object_get(t, "exit_code");
	if (json_is_true(json_object_get(t, "attached"))) {
		fprintf(out, "Attached to a running process (it %s); followed for ",
			json_is_true(json_object_get(t, "target_exited")) ? "exited"
									  : "kept running");
	} else {
		fputs("Exit code ", out);
		if (json_is_integer(code))
			fprintf(out, "%lld", (long long)json_integer_value(code));
		else
			fputs("unknown", out);
		fputs(" after ", out);
	}
	cell_s(out, num(t, "wall_s"));
	fprintf(out, " of wall time; %zu process%s followed.",
		json_array_size(json_object_get(t, "pids")),
		json_array_size(json_object_get(t, "pids")) == 1 ? "" : "es");
	if (json_is_true(json_object_get(t, "interrupted")))
		fputs(" The run was interrupted; the report covers what was collected.", out);
	if (json_is_true(json_object_get(t, "stopped_by_duration")))
		fputs(" Stopped by the duration limit (-d).", out);
	if (json_is_false(json_object_get(t, "complete")))
		fputs(" **The recording is incomplete** (sonde stopped before the end).", out);
	fputs("\n\n# Part A: what was measured\n\n", out);
	section_findings(out, r);
	section_cpu(out, r);
	section_hotspots(out, r);
	section_coverage(out, r);
	section_python(out, r);
	section_offcpu(out, r);
	section_memory(out, r);
	section_io(out, r);
	section_processes(out, r);
	section_not_measured(out, r);
	section_notes(out, r);
	section_changelog(out, r);
	return 0;
}

const struct renderer render_markdown = { .name = "markdown", .file = "report.md",
					  .render = markdown_render };
