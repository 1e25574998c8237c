/* terminal: the few lines printed after a run, pointing to the full report. */
#include "render.h"
#include "../util/utf8.h"

#include <math.h>
#include <string.h>

#define TERMINAL_BUSY_PCT 50  /* a disk busier than this is worth a line */
#define TERMINAL_STALL_PCT 10 /* memory stalls (PSI) of this share too */

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Outside text (symbols, paths, thread names) reaches the terminal escaped
 * (\x1b, utf8_escape), so no escape sequence or carriage return from the
 * target passes, and names are shortened: the files keep them whole. */
#define TERMINAL_NAME_CHARS 120
#define TERMINAL_LINE_CHARS 400

static void put_plain(FILE *out, const char *s)
{
	utf8_print(out, s, TERMINAL_NAME_CHARS);
}

/* The longest top-level phases: where the run's time went, in the program's
 * own words. */
static void terminal_phases(FILE *out, json_t *r)
{
	json_t *phases = json_object_get(r, "phases");
	double wall_s = num(json_object_get(r, "target"), "wall_s");
	size_t n = json_array_size(phases), shown[3] = { 0 }, nshown = 0;
	for (size_t k = 0; k < 3; k++) {
		size_t best = n;
		for (size_t i = 0; i < n; i++) {
			json_t *p = json_array_get(phases, i);
			int taken = 0;
			for (size_t j = 0; j < nshown; j++)
				taken |= shown[j] == i;
			if (!taken && num(p, "depth") == 0 &&
			    (best == n || num(p, "duration_s") >
						  num(json_array_get(phases, best), "duration_s")))
				best = i;
		}
		if (best == n)
			break;
		shown[nshown++] = best;
	}
	for (size_t k = 0; k < nshown; k++) {
		json_t *p = json_array_get(phases, shown[k]);
		char a[32];
		fmt_seconds(a, sizeof(a), num(p, "duration_s"));
		fputs(k ? ", " : "  phases  ", out);
		put_plain(out, json_string_value(json_object_get(p, "name")));
		fprintf(out, " %s", a);
		if (wall_s > 0)
			fprintf(out, " (%.0f%%)", 100.0 * num(p, "duration_s") / wall_s);
	}
	if (nshown)
		fprintf(out, "%s\n", n > nshown ? ", ..." : "");
}

/* The machine's line, only for what limited the run: a busy disk, or stalls
 * on I/O or memory. */
static void system_line(FILE *out, json_t *r)
{
	json_t *sys = json_object_get(r, "system"), *psi = json_object_get(sys, "pressure");
	json_t *devs = json_object_get(sys, "devices"), *disk = json_array_get(devs, 0);
	for (size_t i = 1; i < json_array_size(devs); i++)
		if (num(json_array_get(devs, i), "util_pct") > num(disk, "util_pct"))
			disk = json_array_get(devs, i);
	if (!(num(disk, "util_pct") >= TERMINAL_BUSY_PCT || num(psi, "io_pct") >= TERMINAL_BUSY_PCT ||
	      num(psi, "memory_pct") >= TERMINAL_STALL_PCT))
		return;
	fputs("  system ", out);
	if (disk) {
		fputs(" disk ", out);
		put_plain(out, json_string_value(json_object_get(disk, "device")));
		fprintf(out, " %.0f%% busy (%.1f MB/s read, %.1f MB/s written),",
			num(disk, "util_pct"), num(disk, "read_mb_s"), num(disk, "write_mb_s"));
	}
	fprintf(out, " stalls on I/O %.0f%%, on memory %.0f%% of the run (report.md: System)\n",
		isnan(num(psi, "io_pct")) ? 0 : num(psi, "io_pct"),
		isnan(num(psi, "memory_pct")) ? 0 : num(psi, "memory_pct"));
}

void render_terminal(const struct render_ctx *ctx, FILE *out)
{
	json_t *r = ctx->report, *t = json_object_get(r, "target");
	json_t *cpu = json_object_get(r, "cpu"), *mem = json_object_get(r, "memory");
	char a[32], b[32];
	fmt_seconds(a, sizeof(a), num(t, "wall_s") >= 0 ? num(t, "wall_s") : 0);
	json_t *code = json_object_get(t, "exit_code");
	size_t npids = json_array_size(json_object_get(t, "pids"));
	json_t *slice = json_object_get(r, "slice");
	if (slice) {
		fputs("\nsonde: a slice of the run:", out);
		if (json_is_number(json_object_get(slice, "from_s")))
			fprintf(out, " %.3f s to %.3f s (%s),", num(slice, "from_s"),
				num(slice, "to_s"), a);
		if (json_is_integer(json_object_get(slice, "pid")))
			fprintf(out, " process %.0f,", num(slice, "pid"));
		if (json_is_integer(json_object_get(slice, "tid")))
			fprintf(out, " thread %.0f,", num(slice, "tid"));
		fprintf(out, " %zu process%s", npids, npids == 1 ? "" : "es");
	} else if (json_is_true(json_object_get(t, "whole_machine")))
		fprintf(out, "\nsonde: the whole machine for %s, %zu process%s", a, npids,
			npids == 1 ? "" : "es");
	else if (json_is_true(json_object_get(t, "attached")))
		fprintf(out, "\nsonde: followed for %s, %zu process%s; the process %s", a, npids,
			npids == 1 ? "" : "es",
			json_is_true(json_object_get(t, "target_exited")) ? "exited"
									  : "keeps running");
	else if (json_is_integer(code))
		fprintf(out, "\nsonde: exit code %lld after %s, %zu process%s",
			(long long)json_integer_value(code), a, npids, npids == 1 ? "" : "es");
	else
		fprintf(out, "\nsonde: stopped after %s (exit code unknown), %zu process%s", a, npids,
			npids == 1 ? "" : "es");
	if (json_is_true(json_object_get(t, "interrupted")))
		fputs(" (interrupted)", out);
	fputc('\n', out);
	json_t *prog = json_object_get(t, "program");
	if (prog) {
		fmt_seconds(a, sizeof(a),
			    num(prog, "wrapper_cpu_s") > 0 ? num(prog, "wrapper_cpu_s") : 0);
		fprintf(
		    out,
		    "  program %s (started through %s); the wrapper: %.0f process%s, %s of CPU\n",
		    json_string_value(json_object_get(prog, "command")),
		    json_string_value(json_object_get(prog, "started_through")),
		    num(prog, "wrapper_processes"), num(prog, "wrapper_processes") == 1 ? "" : "es",
		    a);
	}
	if (cpu) {
		fmt_seconds(a, sizeof(a), num(cpu, "user_s"));
		fmt_seconds(b, sizeof(b), num(cpu, "sys_s"));
		fprintf(out, "  cpu     user %s, system %s, CPU/wall %.2f\n", a, b,
			num(cpu, "utilization"));
	}
	json_t *hw = json_object_get(cpu, "counters");
	if (json_is_object(hw) && !isnan(num(hw, "ipc"))) {
		fprintf(out, "  counters IPC %.2f", num(hw, "ipc"));
		if (!isnan(num(hw, "cache_miss_rate")))
			fprintf(out, ", cache miss %.1f%%", 100 * num(hw, "cache_miss_rate"));
		if (!isnan(num(hw, "branch_miss_rate")))
			fprintf(out, ", branch miss %.2f%%", 100 * num(hw, "branch_miss_rate"));
		fputc('\n', out);
	}
	if (mem && !isnan(num(mem, "peak_rss_bytes"))) {
		fmt_bytes(a, sizeof(a), num(mem, "peak_rss_bytes"));
		fmt_seconds(b, sizeof(b), isnan(num(mem, "peak_rss_at_s")) ? 0 : num(mem, "peak_rss_at_s"));
		fprintf(out, "  memory  peak RSS %s at %s\n", a, b);
	}
	json_t *heap = json_object_get(mem, "heap");
	if (heap) {
		char c[32];
		fmt_bytes(a, sizeof(a), num(heap, "peak_bytes"));
		fmt_seconds(b, sizeof(b), num(heap, "peak_at_s"));
		fmt_bytes(c, sizeof(c), num(heap, "leaked_bytes"));
		fprintf(out, "  heap    peak %s at %s, %s leaked at exit, %.0f temporary allocations%s\n",
			a, b, c, num(heap, "temporary_allocations"),
			json_is_true(json_object_get(heap, "estimated")) ? " (sampled estimates)" : "");
	}
	terminal_phases(out, r);
	json_t *hs = json_object_get(r, "hotspots");
	for (size_t k = 0; k < 3 && k < json_array_size(hs); k++) {
		json_t *h = json_array_get(hs, k);
		const char *file = json_string_value(json_object_get(h, "file"));
		fprintf(out, "  %s %5.1f%% self  ", k ? "       " : "hot    ", num(h, "self_pct"));
		put_plain(out, json_string_value(json_object_get(h, "function")));
		if (file && !isnan(num(h, "line"))) {
			fputs(" (", out);
			put_plain(out, file);
			fprintf(out, ":%.0f)", num(h, "line"));
		}
		if (!isnan(num(h, "ipc")))
			fprintf(out, "  IPC %.2f", num(h, "ipc"));
		fputc('\n', out);
	}
	json_t *hy = json_object_get(r, "hygiene");
	if (json_is_true(json_object_get(t, "whole_machine")) && !isnan(num(hy, "busy_pct")))
		fprintf(out, "  machine busy %.0f%% of %.0f CPUs during the run, iowait %.1f%%\n",
			num(hy, "busy_pct"), num(hy, "cpus_online"), num(hy, "iowait_pct"));
	const char *busy =
		json_string_value(json_object_get(json_object_get(r, "cpu"), "contention_note"));
	if (busy) {
		fputs("  machine ", out);
		put_plain(out, busy);
		fputc('\n', out);
	}
	json_t *warning;
	size_t w;
	json_array_foreach(json_object_get(json_object_get(r, "hygiene"), "warnings"), w, warning)
	{
		fputs("  machine ", out);
		utf8_print(out, json_string_value(json_object_get(warning, "text")),
			   TERMINAL_LINE_CHARS);
		fputc('\n', out);
	}
	const char *coverage = json_string_value(json_object_get(json_object_get(r, "coverage"), "note"));
	if (coverage) {
		fputs("  samples ", out);
		put_plain(out, coverage);
		fputc('\n', out);
	}
	json_t *dims = json_object_get(json_object_get(r, "focus"), "dimensions"), *d;
	size_t k;
	json_array_foreach(dims, k, d) {
		fputs(k ? "," : "  focus   ", out);
		put_plain(out, json_string_value(d));
		if (k + 1 == json_array_size(dims))
			fputs(" (--focus: first in report.md)\n", out);
	}
	json_t *gil = json_object_get(json_object_get(r, "python"), "gil");
	if (!isnan(num(gil, "held_pct"))) {
		size_t nthreads =
		    json_array_size(json_object_get(json_object_get(r, "python"), "threads"));
		fprintf(out, "  python  %zu thread%s, GIL held %.0f%%, contended %.0f%% (mode ",
			nthreads, nthreads == 1 ? "" : "s", num(gil, "held_pct"),
			num(gil, "contention_pct"));
		put_plain(out, json_string_value(json_object_get(json_object_get(r, "python"), "mode")));
		fputs(")\n", out);
	}
	json_t *calls = json_object_get(json_object_get(r, "syscalls"), "by_time");
	for (size_t c = 0; c < json_array_size(calls) && c < 3; c++) {
		json_t *call = json_array_get(calls, c);
		fmt_seconds(a, sizeof(a), num(call, "seconds"));
		fprintf(out, "%s%.0f ", c ? ", " : "  syscall ", num(call, "calls"));
		put_plain(out, json_string_value(json_object_get(call, "call")));
		fprintf(out, " %s", a);
		if (num(call, "errors") > 0)
			fprintf(out, " (%.0f failed)", num(call, "errors"));
		if (c + 1 == json_array_size(calls) || c == 2)
			fputs(" (report.md: System calls)\n", out);
	}
	system_line(out, r);
	json_t *comp = json_object_get(r, "components");
	json_t *top = json_array_get(json_object_get(comp, "list"), 0);
	if (top) {
		fputs("  parts   ", out);
		put_plain(out, json_string_value(json_object_get(top, "name")));
		fprintf(out, " x%.0f: %.0f%% of the CPU; %.0f components (report.md)\n",
			num(top, "processes"), num(top, "cpu_pct"), num(comp, "count"));
	}
	json_t *fs = json_object_get(r, "functions");
	size_t i;
	json_t *f;
	json_array_foreach(fs, i, f) {
		json_t *wall = json_object_get(f, "wall");
		char p50[32], p95[32], max[32];
		fputs(i ? "          " : "  calls   ", out);
		put_plain(out, json_string_value(json_object_get(f, "spec")));
		if (!wall) {
			fputs(": not measured (report.md says why)\n", out);
			continue;
		}
		fmt_seconds(p50, sizeof(p50), num(wall, "p50_s"));
		fmt_seconds(p95, sizeof(p95), num(wall, "p95_s"));
		fmt_seconds(max, sizeof(max), num(wall, "max_s"));
		fprintf(out, ": %.0f calls, p50 %s, p95 %s, max %s\n", num(f, "calls"), p50, p95, max);
	}
	fs = json_object_get(r, "findings");
	json_array_foreach(fs, i, f) {
		fprintf(out, "  %zu. ", i + 1);
		utf8_print(out, json_string_value(json_object_get(f, "title")), TERMINAL_LINE_CHARS);
		fputs("\n     next: ", out);
		utf8_print(out, json_string_value(json_object_get(f, "next_step")),
			   TERMINAL_LINE_CHARS);
		fputc('\n', out);
	}
	if (!json_array_size(fs))
		fputs("  no finding stands out\n", out);
	size_t more = json_array_size(json_object_get(r, "more_findings"));
	if (more)
		fprintf(out, "  (%zu smaller finding%s in report.md)\n", more, more > 1 ? "s" : "");
	json_t *gaps = json_object_get(r, "observability_gaps");
	json_array_foreach(gaps, i, f) {
		fputs(i ? "          " : "  gaps    ", out);
		utf8_print(out, json_string_value(json_object_get(f, "text")), TERMINAL_LINE_CHARS);
		fputc('\n', out);
	}
	json_t *probes = json_object_get(r, "probes");
	json_t *p;
	json_array_foreach(probes, i, p) {
		const char *status = json_string_value(json_object_get(p, "status"));
		const char *reason = json_string_value(json_object_get(p, "reason"));
		/* A machine without a GPU is no news on the terminal: report.md
		 * says why the GPU was not measured. */
		if (reason && !strncmp(reason, "no NVIDIA driver here", 21))
			continue;
		if (status && !strcmp(status, "unavailable")) {
			fputs("  off: ", out);
			put_plain(out, json_string_value(json_object_get(p, "name")));
			fputs(" (", out);
			utf8_print(out, json_string_value(json_object_get(p, "reason")),
				   TERMINAL_LINE_CHARS);
			fputs(")\n", out);
		}
	}
	fputs("  report: ", out);
	utf8_print(out, ctx->dir, 0);
	fputs("/report.md\n", out);
}
