/* markdown renderer: report.md, Part A (what was measured, by dimension, and
 * the ranked findings) and Part B (the instrumentation changelog). */
#include "render.h"
#include "mdcell.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define MD_PHASES_SHOWN 30

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
		md_cell(out, md_str(f, "title"));
		fprintf(out, "\n\n*%s* · ", md_str(f, "dimension"));
		if (json_string_value(json_object_get(f, "id"))) {
			fputc('`', out);
			md_cell(out, md_str(f, "id"));
			fputs("` · ", out);
		}
		fputs("at stake: ", out);
		if (!isnan(md_num(impact, "seconds")))
			md_cell_s(out, md_num(impact, "seconds"));
		if (!isnan(md_num(impact, "seconds")) && !isnan(md_num(impact, "bytes")))
			fputs(" and ", out);
		if (!isnan(md_num(impact, "bytes")) || isnan(md_num(impact, "seconds")))
			md_cell_bytes(out, md_num(impact, "bytes"));
		fprintf(out, " (%.0f%% of the run)", md_num(impact, "share_pct"));
		json_t *known = json_object_get(f, "known_mid_run");
		if (known) {
			fputs(" · known mid-run, after phase ", out);
			md_cell(out, md_str(known, "after_phase"));
			fputs(" at ", out);
			md_cell_s(out, md_num(known, "at_s"));
		}
		fputs("\n\n", out);
		static const char *rows[][2] = { { "Location", "location" },
						 { "Evidence", "evidence" },
						 { "Diagnosis", "diagnosis" },
						 { "Next step", "next_step" },
						 { "Validation", "validation" } };
		for (size_t r = 0; r < 5; r++) {
			fprintf(out, "- **%s**: ", rows[r][0]);
			md_text(out, md_str(f, rows[r][1]));
			fputc('\n', out);
		}
		fputc('\n', out);
	}
	json_t *more = json_object_get(report, "more_findings");
	if (json_array_size(more)) {
		fputs("Smaller findings (report.json's `more_findings` has each in full):\n\n", out);
		json_array_foreach(more, i, f) {
			fprintf(out, "- %zu. ", (size_t)json_integer_value(json_object_get(f, "rank")));
			md_cell(out, md_str(f, "title"));
			fprintf(out, " (%.0f%% of the run)\n",
				md_num(json_object_get(f, "impact"), "share_pct"));
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
		(long long)md_num(cpu, "thread_counters_total"));
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
		fprintf(out, "| %lld | %lld | ", (long long)md_num(t, "pid"), (long long)md_num(t, "tid"));
		md_cell(out, *md_str(t, "name") ? md_str(t, "name") : "–");
		fputs(" |", out);
		json_object_foreach (counts, event, v) {
			fputc(' ', out);
			md_cell_int(out, md_num(json_object_get(t, "counts"), event));
			fputs(" |", out);
		}
		fputc(' ', out);
		md_cell_num(out, md_num(t, "ipc"), "%.2f", 1);
		fputs(" | ", out);
		md_cell_num(out, md_num(t, "cache_miss_rate"), "%.1f%%", 100);
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
	md_cell_s(out, md_num(cpu, "user_s"));
	fputs(" |\n| system time | ", out);
	md_cell_s(out, md_num(cpu, "sys_s"));
	fprintf(out, " |\n| CPU/wall | %.2f |\n", md_num(cpu, "utilization"));
	fputs("| voluntary context switches | ", out);
	md_cell_int(out, md_num(cpu, "voluntary_ctx_switches"));
	fputs(" |\n| involuntary context switches | ", out);
	md_cell_int(out, md_num(cpu, "involuntary_ctx_switches"));
	fputs(" |\n| waiting for a CPU (run queue) | ", out);
	md_cell_s(out, md_num(cpu, "runqueue_wait_s"));
	fputs(" |\n| minor / major page faults | ", out);
	md_cell_int(out, md_num(cpu, "minor_faults"));
	fputs(" / ", out);
	md_cell_int(out, md_num(cpu, "major_faults"));
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
		md_cell_num(out, md_num(hw, "ipc"), "%.2f", 1);
		fputs(" |\n| cache miss rate | ", out);
		md_cell_num(out, md_num(hw, "cache_miss_rate"), "%.1f%%", 100);
		fputs(" |\n| branch miss rate | ", out);
		md_cell_num(out, md_num(hw, "branch_miss_rate"), "%.2f%%", 100);
		fputs(" |\n", out);
	}
	fputc('\n', out);
	if (json_is_object(hw) && !isnan(md_num(hw, "ipc"))) {
		double ipc = md_num(hw, "ipc");
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
/* report["phases"]: the program's own phases, in the order they started. */
static void section_phases(FILE *out, json_t *report)
{
	json_t *phases = json_object_get(report, "phases");
	json_t *mk = json_object_get(report, "phase_markers");
	size_t n = json_array_size(phases);
	if (!n)
		return;
	int nvtx = !strcmp(md_str(mk, "origin"), "nvtx");
	if (nvtx) {
		fprintf(out,
			"## Phases\n\n%.0f phases from the program's top-level NVTX ranges and "
			"sonde regions (its output has no phase markers)",
			md_num(mk, "phases_total"));
	} else {
		fprintf(out,
			"## Phases\n\n%.0f phases from %.0f markers in the %.0f lines the "
			"target wrote (times: ",
			md_num(mk, "phases_total"), md_num(mk, "markers"),
			md_num(mk, "lines_read"));
		md_text(out, md_str(mk, "clock"));
	}
	if (json_is_string(json_object_get(mk, "pattern")))
		fputs("; markers: --phase ", out);
	else if (!nvtx)
		fputc(')', out);
	if (json_is_string(json_object_get(mk, "pattern"))) {
		md_code(out, md_str(mk, "pattern"));
		fputc(')', out);
	}
	fputs(".\n\n| phase | start | duration | logged | CPU | RSS change | peak RSS | where the time"
	      " went | warnings / errors / retries |\n|---|---:|---:|---:|---:|---:|---:|---|---:|\n",
	      out);
	for (size_t i = 0; i < n && i < MD_PHASES_SHOWN; i++) {
		json_t *p = json_array_get(phases, i);
		fputs("| ", out);
		for (double d = md_num(p, "depth"); d >= 1; d--)
			fputs("↳ ", out);
		md_cell(out, md_str(p, "name"));
		fputs(" | ", out);
		md_cell_s(out, md_num(p, "start_s"));
		fputs(" | ", out);
		md_cell_s(out, md_num(p, "duration_s"));
		if (strcmp(md_str(p, "ended_by"), "marker") &&
		    strcmp(md_str(p, "ended_by"), "logged duration"))
			fprintf(out, " (to the %s)", md_str(p, "ended_by"));
		fputs(" | ", out);
		md_cell_s(out, md_num(p, "logged_duration_s"));
		fputs(" | ", out);
		md_cell_s(out, md_num(p, "cpu_s"));
		if (!isnan(md_num(p, "cpu_utilization")))
			fprintf(out, " (%.0f%%)", 100.0 * md_num(p, "cpu_utilization"));
		fputs(" | ", out);
		double delta = md_num(p, "rss_delta_bytes");
		fputs(delta < 0 ? "−" : delta > 0 ? "+" : "", out);
		md_cell_bytes(out, fabs(delta));
		fputs(" | ", out);
		md_cell_bytes(out, md_num(p, "rss_peak_bytes"));
		fputs(" | ", out);
		json_t *top = json_object_get(p, "top_functions");
		for (size_t k = 0; k < json_array_size(top) && k < 2; k++) {
			json_t *f = json_array_get(top, k);
			fputs(k ? ", " : "", out);
			md_cell(out, md_str(f, "function"));
			fprintf(out, " %.0f%%", md_num(f, "pct"));
		}
		fprintf(out, " | %.0f / %.0f / %.0f |\n", md_num(p, "warnings"), md_num(p, "errors"),
			md_num(p, "retries"));
	}
	if (n > MD_PHASES_SHOWN)
		fprintf(out, "\n%zu more phases in report.json.\n", n - MD_PHASES_SHOWN);
	fputc('\n', out);
}

static void md_location(FILE *out, json_t *h)
{
	const char *file = md_str(h, "file");
	if (!*file)
		file = md_str(h, "module");
	md_cell(out, *file ? file : "–");
	if (!isnan(md_num(h, "line")))
		fprintf(out, ":%.0f", md_num(h, "line"));
}

static void section_hotspots(FILE *out, json_t *report)
{
	json_t *hs = json_object_get(report, "hotspots");
	json_t *src = json_object_get(report, "hotspots_source");
	if (!json_array_size(hs))
		return;
	const char *mode = md_str(src, "mode");
	int py = !strcmp(md_str(src, "source"), "python") || !strcmp(md_str(src, "source"), "mixed");
	const char *event = md_str(src, "event");
	int by_event = *event && strcmp(event, "cycles") && strcmp(event, "cpu-clock");
	int ipc = !isnan(md_num(src, "ipc")); /* the samples read cycles and instructions */
	fprintf(out, "## Hotspots\n\nFrom %.0f %s samples%s%s%s", md_num(src, "samples"),
		md_str(src, "source"), py ? " (mode " : "", py ? mode : "",
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
		md_cell(out, md_str(h, "function"));
		fputs(" | ", out);
		md_location(out, h);
		fprintf(out, " | %.1f%% | %.1f%% | %.0f |", md_num(h, "self_pct"),
			md_num(h, "total_pct"), md_num(h, "samples"));
		if (ipc) {
			fputc(' ', out);
			md_cell_num(out, md_num(h, "ipc"), "%.2f", 1);
			fputs(" | ", out);
			md_cell_num(out, md_num(h, "cache_misses_per_kinstr"), "%.1f", 1);
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
			md_cell(out, md_str(h, "function"));
			fprintf(out, " | %.1f%% | %.1f%% |\n", md_num(h, "pct"),
				md_num(h, "function_pct"));
		}
	}
	json_t *tree = json_object_get(report, "call_tree");
	if (json_array_size(tree)) {
		fputs("\n### Call tree\n\nEach call path is its own branch (total %, self % "
		      "when the function's own code runs).\n\n",
		      out);
		json_array_foreach(tree, i, h) {
			int depth = (int)md_num(h, "depth");
			fprintf(out, "%*s- %.1f%% ", 2 * (depth > 1 ? depth - 1 : 0), "",
				md_num(h, "total_pct"));
			md_code(out, md_str(h, "function"));
			if (md_num(h, "self_pct") >= 0.05)
				fprintf(out, " (self %.1f%%)", md_num(h, "self_pct"));
			fputc('\n', out);
		}
	}
	fputc('\n', out);
}

/* report["python"]: the threads of the Python processes and the GIL. */
static void section_python(FILE *out, json_t *report)
{
	json_t *py = json_object_get(report, "python");
	if (!py)
		return;
	json_t *gil = json_object_get(py, "gil");
	fputs("## Python threads\n\n", out);
	if (!isnan(md_num(gil, "held_pct")))
		fprintf(out,
			"GIL held in %.0f%% of the sampled moments; contended (a thread on the CPU "
			"waits for it while another holds it) in %.0f%%.\n\n",
			md_num(gil, "held_pct"), md_num(gil, "contention_pct"));
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
		fprintf(out, "| %.0f | %.0f | ", md_num(t, "pid"), md_num(t, "tid"));
		md_cell(out, md_str(t, "name"));
		fprintf(out, " | %.0f | ", md_num(t, "samples"));
		md_cell_pct(out, md_num(t, "on_cpu_pct"));
		fputs(" | ", out);
		md_cell_pct(out, md_num(t, "gil_pct"));
		fputs(" | ", out);
		md_cell_pct(out, md_num(t, "idle_pct"));
		fputs(" |\n", out);
	}
	fputc('\n', out);
}

/* What the asyncio agent saw: task sites, loop lag, retries. */
static void section_asyncio(FILE *out, json_t *report)
{
	json_t *a = json_object_get(report, "asyncio");
	if (!a)
		return;
	fprintf(out, "## asyncio\n\n%.0f tasks recorded in %.0f process(es).\n\n",
		md_num(a, "tasks"), md_num(a, "processes"));
	size_t i;
	json_t *o;
	if (json_array_size(json_object_get(a, "sites"))) {
		fputs("| created at | runs | tasks | most in flight | most working | median | p95 | "
		      "max | failed |\n|---|---|---|---|---|---|---|---|---|\n",
		      out);
		json_array_foreach(json_object_get(a, "sites"), i, o) {
			fputs("| ", out);
			md_cell(out, md_str(o, "location"));
			fputs(" | ", out);
			md_cell(out, md_str(o, "coroutine"));
			fprintf(out, " | %.0f | %.0f | %.0f | ", md_num(o, "tasks"),
				md_num(o, "peak_in_flight"), md_num(o, "peak_working"));
			md_cell_s(out, md_num(o, "median_s"));
			fputs(" | ", out);
			md_cell_s(out, md_num(o, "p95_s"));
			fputs(" | ", out);
			md_cell_s(out, md_num(o, "max_s"));
			fprintf(out, " | %.0f |\n", md_num(o, "failed"));
		}
		fputc('\n', out);
	}
	json_array_foreach(json_object_get(a, "loop_lag"), i, o) {
		fprintf(out, "Event loop of thread %.0f: its heartbeat ran late %.0f times, ",
			md_num(o, "tid"), md_num(o, "late_beats"));
		md_cell_s(out, md_num(o, "late_s"));
		fputs(" in all, the longest ", out);
		md_cell_s(out, md_num(o, "max_late_s"));
		fputs(".\n\n", out);
	}
	json_array_foreach(json_object_get(a, "retries"), i, o) {
		fprintf(out, "Retries at ");
		md_code(out, md_str(o, "location"));
		fputs(" after ", out);
		md_text(out, md_str(o, "exception"));
		fprintf(out, ": %.0f, delays ", md_num(o, "retries"));
		md_cell_s(out, md_num(o, "delay_min_s"));
		fputs(" to ", out);
		md_cell_s(out, md_num(o, "delay_max_s"));
		fprintf(out, " (%s), in %.0f waves of up to %.0f.\n\n",
			json_is_true(json_object_get(o, "jittered")) ? "jittered" : "no jitter",
			md_num(o, "waves"), md_num(o, "largest_wave"));
	}
}

/* Where the threads wait: the offcpu probe's heaviest waits and threads. */
static void section_offcpu(FILE *out, json_t *report)
{
	json_t *o = json_object_get(report, "offcpu");
	json_t *waits = json_object_get(o, "waits"), *threads = json_object_get(o, "threads");
	if (!json_array_size(waits) && !json_array_size(threads))
		return;
	fputs("## Off-CPU time\n\nBlocked intervals from ", out);
	md_code(out, md_str(o, "event"));
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
			md_cell(out, md_str(w, "function"));
			fputs(" | ", out);
			md_location(out, w);
			fputs(" | ", out);
			md_cell(out, md_str(w, "blocking_call"));
			fputs(" | ", out);
			md_cell(out, md_str(w, "state"));
			fputs(" | ", out);
			md_cell_s(out, md_num(w, "seconds"));
			fputs(" | ", out);
			md_cell_pct(out, md_num(w, "wall_pct"));
			fputs(" |\n", out);
		}
		fputc('\n', out);
	}
	if (json_array_size(threads)) {
		fputs("| thread | tid | on CPU | off CPU | off share |\n|---|---|---|---|---|\n", out);
		json_array_foreach(threads, i, w) {
			fputs("| ", out);
			md_cell(out, md_str(w, "name"));
			fprintf(out, " | %.0f | ", md_num(w, "tid"));
			md_cell_s(out, md_num(w, "on_cpu_s"));
			fputs(" | ", out);
			md_cell_s(out, md_num(w, "off_cpu_s"));
			fputs(" | ", out);
			md_cell_pct(out, md_num(w, "off_cpu_pct"));
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
	double peak = md_num(mem, "peak_rss_bytes");
	fputs("## Memory\n\n", out);
	if (isnan(peak)) {
		section_heap(out, mem); /* the proc probe did not run */
		return;
	}
	fputs("| metric | value |\n|---|---|\n| peak RSS | ", out);
	md_cell_bytes(out, peak);
	fputs(" at ", out);
	md_cell_s(out, md_num(mem, "peak_rss_at_s"));
	fprintf(out, " (%s) |\n\n", md_str(mem, "peak_rss_source"));
	json_t *tl = json_object_get(mem, "rss_timeline");
	if (json_array_size(tl) > 1) {
		fputs("RSS over time: `", out);
		md_sparkline(out, tl, "rss_bytes", md_num(mem, "sampled_peak_rss_bytes"));
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
			md_cell_s(out, md_num(j, "start_s"));
			fputs(" | ", out);
			md_cell_s(out, md_num(j, "end_s"));
			fputs(" | +", out);
			md_cell_bytes(out, md_num(j, "size_bytes"));
			fputs(" | ", out);
			if (tracked) {
				json_t *top = json_array_get(json_object_get(j, "allocating"), 0);
				if (top) {
					md_cell(out, md_str(top, "location"));
					fputs(" +", out);
					md_cell_bytes(out, md_num(top, "bytes"));
				} else {
					fputs("no site's heap grew", out);
				}
				fputs(" | ", out);
			}
			if (json_is_object(who)) {
				md_cell(out, md_str(who, "function"));
				if (*md_str(who, "file")) {
					fputs(" (", out);
					md_cell(out, md_str(who, "file"));
					if (!isnan(md_num(who, "line")))
						fprintf(out, ":%.0f", md_num(who, "line"));
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

/* The allocation tracker's figures and its top call sites. */
static void section_heap(FILE *out, json_t *mem)
{
	json_t *heap = json_object_get(mem, "heap");
	if (!heap)
		return;
	int est = json_is_true(json_object_get(heap, "estimated"));
	fputs("### Heap (allocation tracker, ", out);
	md_cell(out, md_str(heap, "mode"));
	fputs(" mode", out);
	if (est) {
		fputs(", one sample per ", out);
		md_cell_bytes(out, md_num(heap, "sampling_interval_bytes"));
		fputs(" on average: figures are estimates", out);
	}
	fputs(")\n\n| metric | value |\n|---|---|\n| heap peak | ", out);
	md_cell_bytes(out, md_num(heap, "peak_bytes"));
	fputs(" at ", out);
	md_cell_s(out, md_num(heap, "peak_at_s"));
	fputs(" |\n| leaked at exit | ", out);
	md_cell_bytes(out, md_num(heap, "leaked_bytes"));
	fputs(" in ", out);
	md_cell_int(out, md_num(heap, "leaked_allocations"));
	fputs(" allocations |\n| allocations | ", out);
	md_cell_int(out, md_num(heap, "allocations"));
	fputs(" (", out);
	md_cell_bytes(out, md_num(heap, "allocated_bytes"));
	fputs(") |\n| temporary allocations | ", out);
	md_cell_int(out, md_num(heap, "temporary_allocations"));
	fputs(" |\n| processes tracked | ", out);
	md_cell_int(out, md_num(heap, "processes"));
	fputs(" |\n\n", out);
	json_t *tl = json_object_get(heap, "timeline");
	double live_max = 0;
	size_t k;
	json_t *pt;
	json_array_foreach(tl, k, pt)
		live_max = fmax(live_max, md_num(pt, "live_bytes"));
	if (json_array_size(tl) > 1 && live_max > 0) {
		fputs("Live heap over time (100 ms steps): `", out);
		md_sparkline(out, tl, "live_bytes", live_max);
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
		md_cell(out, md_str(site, "location"));
		if (!strcmp(md_str(site, "kind"), "mmap") || !strcmp(md_str(site, "kind"), "malloc+mmap"))
			fprintf(out, " (%s)", md_str(site, "kind"));
		if (json_array_size(json_object_get(site, "native_paths")) > 1)
			fprintf(out, " (%zu native paths)",
				json_array_size(json_object_get(site, "native_paths")));
		fputs(" | ", out);
		json_t *stack = json_object_get(site, "stack");
		size_t n = json_array_size(stack);
		md_cell(out, n >= 2 ? json_string_value(json_array_get(stack, n - 2)) : "");
		fputs(" | ", out);
		md_cell_bytes(out, md_num(site, "peak_bytes"));
		md_cell_sd(out, md_num(site, "peak_bytes_sd"), md_num(site, "peak_bytes"));
		fputs(" | ", out);
		md_cell_bytes(out, md_num(site, "leaked_bytes"));
		md_cell_sd(out, md_num(site, "leaked_bytes_sd"), md_num(site, "leaked_bytes"));
		fputs(" | ", out);
		md_cell_int(out, md_num(site, "allocations"));
		fputs(" | ", out);
		md_cell_int(out, md_num(site, "temporary_allocations"));
		fputs(" | ", out);
		md_cell_bytes(out, md_num(site, "redundant_bytes")); /* "–" until measured */
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
	md_cell_bytes(out, md_num(io, "read_bytes"));
	fputs(" |\n| written (system calls) | ", out);
	md_cell_bytes(out, md_num(io, "write_bytes"));
	fputs(" |\n| read from storage | ", out);
	md_cell_bytes(out, md_num(io, "storage_read_bytes"));
	fputs(" |\n| written to storage | ", out);
	md_cell_bytes(out, md_num(io, "storage_write_bytes"));
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
		fprintf(out, "| %.0f%s | %.0f | ", md_num(p, "pid"),
			json_is_true(json_object_get(p, "leader")) ? " (launched)" : "",
			md_num(p, "ppid"));
		md_cell(out, md_str(p, "command"));
		fputs(" | ", out);
		md_cell_s(out, md_num(p, "start_s"));
		fputs(" | ", out);
		if (isnan(md_num(p, "end_s")))
			fputs("running", out);
		else
			md_cell_s(out, md_num(p, "end_s"));
		fputs(" | ", out);
		if (!isnan(md_num(p, "signal")))
			fprintf(out, "signal %.0f", md_num(p, "signal"));
		else
			md_cell_int(out, md_num(p, "exit_code"));
		fputs(" | ", out);
		md_cell_s(out, md_num(p, "user_s"));
		fputs(" | ", out);
		md_cell_s(out, md_num(p, "sys_s"));
		fputs(" | ", out);
		md_cell_bytes(out, md_num(p, "peak_rss_bytes"));
		fputs(" | ", out);
		md_cell_int(out, md_num(p, "threads_max"));
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
	fprintf(out, "**Sampling coverage**: %.0f samples at %.0f Hz stand for ", md_num(c, "samples"),
		md_num(c, "rate_hz"));
	md_cell_s(out, md_num(c, "sampled_cpu_s"));
	fputs(" of CPU time", out);
	if (!isnan(md_num(c, "coverage_pct"))) {
		fputs(" against ", out);
		md_cell_s(out, md_num(c, "cpu_s"));
		fprintf(out, " the kernel accounted (%.0f%%)", md_num(c, "coverage_pct"));
	}
	fputs(".", out);
	if (json_string_value(json_object_get(c, "note"))) {
		fputs(" **", out);
		md_cell(out, md_str(c, "note"));
		fputs("**", out);
	}
	fputs("\n\n", out);
}

/* report["observability_gaps"]: what would make the next run say more. */
static void section_gaps(FILE *out, json_t *report)
{
	json_t *gaps = json_object_get(report, "observability_gaps");
	size_t i;
	json_t *g;
	if (!json_array_size(gaps))
		return;
	fputs("## Observability gaps\n\n", out);
	json_array_foreach(gaps, i, g) {
		fputs("- ", out);
		md_text(out, md_str(g, "text"));
		fputs(" (`", out);
		md_text(out, md_str(g, "id"));
		fputs("`)\n", out);
	}
	fputc('\n', out);
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
		if (strcmp(md_str(p, "status"), "unavailable"))
			continue;
		fputs("- **probe ", out);
		md_cell(out, md_str(p, "name"));
		fputs("** unavailable: ", out);
		md_cell(out, md_str(p, "reason"));
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
		md_cell_s(out, md_num(n, "t_s"));
		fputs(": ", out);
		md_cell(out, md_str(n, "text"));
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
			md_cell(out, md_str(c, cols[k]));
			fputc(' ', out);
		}
		fputs("|\n", out);
	}
	fputs("\nEnvironment changes live only in the profiled processes. Anything listed "
	      "here as staying after the run (a mount sonde could not undo) says how to undo "
	      "it.\n",
	      out);
}

/* Which slice of the run the report is of (sonde report --from/--to/--pid). */
static void section_slice(FILE *out, json_t *s)
{
	if (!s)
		return;
	fputs("\n\n**A slice of the run**: ", out);
	if (json_is_number(json_object_get(s, "from_s")))
		fprintf(out, "from %.3f s to %.3f s of the run (times below count from %.3f s)",
			md_num(s, "from_s"), md_num(s, "to_s"), md_num(s, "from_s"));
	else
		fputs("the whole run", out);
	if (json_is_integer(json_object_get(s, "pid")))
		fprintf(out, ", process %.0f only", md_num(s, "pid"));
	if (json_is_integer(json_object_get(s, "tid")))
		fprintf(out, ", thread %.0f only", md_num(s, "tid"));
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(s, "left_out"), i, t) {
		fputs(i ? ", " : ". Left out (totals of the whole run that a slice cannot cut): ", out);
		md_cell(out, json_string_value(t));
	}
	fputc('.', out);
}

static int markdown_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	(void)err;
	json_t *r = ctx->report, *t = json_object_get(r, "target");
	json_t *prog = json_object_get(t, "program");
	fputs("# sonde report: ", out);
	md_code(out, md_str(prog ? prog : t, "command"));
	if (prog) {
		fputs(" (started through ", out);
		md_code(out, md_str(prog, "started_through"));
		fputc(')', out);
	}
	fputs("\n\n", out);
	json_t *code = json_object_get(t, "exit_code");
	if (json_object_get(r, "slice")) {
		fputs("A slice of ", out);
	} else if (json_is_true(json_object_get(t, "attached"))) {
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
	md_cell_s(out, md_num(t, "wall_s"));
	fprintf(out, " of wall time; %zu process%s followed.",
		json_array_size(json_object_get(t, "pids")),
		json_array_size(json_object_get(t, "pids")) == 1 ? "" : "es");
	if (prog) {
		fprintf(out,
			" The program is process %.0f from %.3f s; the wrapper that "
			"started it ran %.0f process%s, ",
			md_num(prog, "pid"), md_num(prog, "from_s"),
			md_num(prog, "wrapper_processes"),
			md_num(prog, "wrapper_processes") == 1 ? "" : "es");
		md_cell_s(out, md_num(prog, "wrapper_cpu_s"));
		fputs(" of CPU time, left out of the hotspots.", out);
	}
	if (json_is_true(json_object_get(t, "interrupted")))
		fputs(" The run was interrupted; the report covers what was collected.", out);
	if (json_is_true(json_object_get(t, "stopped_by_duration")))
		fputs(" Stopped by the duration limit (-d).", out);
	if (json_is_false(json_object_get(t, "complete")))
		fputs(" **The recording is incomplete** (sonde stopped before the end).", out);
	section_slice(out, json_object_get(r, "slice"));
	fputs("\n\n# Part A: what was measured\n\n", out);
	md_section_focus(out, r);
	/* The sections of the --focus dimensions first, then the rest in order. */
	static const struct {
		const char *dimension;
		void (*draw)(FILE *out, json_t *report);
	} parts[] = {
		{ NULL, section_findings },	{ "cpu", section_cpu },
		{ NULL, section_phases },	{ "cpu", section_hotspots },
		{ "cpu", section_coverage },	{ "cpu", section_python },
		{ "async", section_asyncio },	{ "io", section_offcpu },
		{ "memory", section_memory },	{ "gpu", md_section_gpu },
		{ "gpu", md_section_torch },	{ "io", section_io },
		{ "cpu", md_section_components }, { NULL, section_processes },
		{ NULL, section_gaps },
		{ NULL, section_not_measured }, { NULL, section_notes },
		{ NULL, section_changelog },
	};
	for (int lead = 1; lead >= 0; lead--)
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
			if (md_focused(r, parts[i].dimension) == lead)
				parts[i].draw(out, r);
	return 0;
}

const struct renderer render_markdown = { .name = "markdown", .file = "report.md",
					  .render = markdown_render };
