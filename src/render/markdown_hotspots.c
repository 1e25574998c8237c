/* markdown_hotspots: report.md's hotspots (the report's `hotspots`,
 * `hot_lines` and `call_tree`) and the sampling coverage line under them. */
#include "mdcell.h"

#include <math.h>
#include <string.h>

void md_section_hotspots(FILE *out, json_t *report)
{
	json_t *hs = json_object_get(report, "hotspots");
	json_t *src = json_object_get(report, "hotspots_source");
	if (!json_array_size(hs))
		return;
	const char *mode = md_str(src, "mode");
	int py =
	    !strcmp(md_str(src, "source"), "python") || !strcmp(md_str(src, "source"), "mixed");
	const char *event = md_str(src, "event");
	int by_event = *event && strcmp(event, "cycles") && strcmp(event, "cpu-clock");
	int ipc = !isnan(md_num(src, "ipc")); /* the samples read cycles and instructions */
	fprintf(out, "## Hotspots\n\nFrom %.0f %s samples%s%s%s", md_num(src, "samples"),
		md_str(src, "source"), py ? " (mode " : "", py ? mode : "",
		!py			? ""
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
	fprintf(out,
		"\n\n| # | function | location | self | total | samples |%s\n"
		"|---|---|---|---|---|---|%s\n",
		ipc ? " IPC | misses / 1k instr |" : "", ipc ? "---|---|" : "");
	size_t i;
	json_t *h;
	json_array_foreach(hs, i, h) {
		fprintf(out, "| %zu |", i + 1);
		md_fill(out, h, " {text:function} | {location:file} |");
		fprintf(out, " %.1f%% | %.1f%% | %.0f |", md_num(h, "self_pct"),
			md_num(h, "total_pct"), md_num(h, "samples"));
		md_fill(out, h, ipc ? " {ratio:ipc} | {tenths:cache_misses_per_kinstr} |\n" : "\n");
	}
	json_t *lines = json_object_get(report, "hot_lines");
	if (json_array_size(lines)) {
		fputs("\n### Hot lines\n\n| line | function | share of samples | share of the "
		      "function |\n|---|---|---|---|\n",
		      out);
		json_array_foreach(lines, i, h) {
			fputs("| ", out);
			md_cell_location(out, h);
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

/* One line under the hotspots: the CPU time the samples stand for. */
void md_section_coverage(FILE *out, json_t *report)
{
	json_t *c = json_object_get(report, "coverage");
	if (!c)
		return;
	md_fill(out, c,
		"**Sampling coverage**: {whole:samples} samples at {whole:rate_hz} Hz stand for "
		"{s:sampled_cpu_s} of CPU time");
	if (!isnan(md_num(c, "coverage_pct")))
		md_fill(out, c, " against {s:cpu_s} the kernel accounted ({whole:coverage_pct}%)");
	fputs(".", out);
	if (json_string_value(json_object_get(c, "note")))
		md_fill(out, c, " **{text:note}**");
	fputs("\n\n", out);
}
