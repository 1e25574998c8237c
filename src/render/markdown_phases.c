/* markdown_phases: report.md's table of the program's phases (the report's
 * `phases` and `phase_markers`). */
#include "mdcell.h"

#include <math.h>
#include <string.h>

#define MD_PHASES_SHOWN 30

/* report["phases"]: the program's own phases, in the order they started. */
void md_section_phases(FILE *out, json_t *report)
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
	fputs(
	    ".\n\n| phase | start | duration | logged | CPU | RSS change | peak RSS | where the "
	    "time"
	    " went | warnings / errors / retries |\n|---|---:|---:|---:|---:|---:|---:|---|---:|\n",
	    out);
	for (size_t i = 0; i < n && i < MD_PHASES_SHOWN; i++) {
		json_t *p = json_array_get(phases, i);
		fputs("| ", out);
		for (double d = md_num(p, "depth"); d >= 1; d--)
			fputs("↳ ", out);
		md_fill(out, p, "{text:name} | {s:start_s} | {s:duration_s}");
		if (strcmp(md_str(p, "ended_by"), "marker") &&
		    strcmp(md_str(p, "ended_by"), "logged duration"))
			fprintf(out, " (to the %s)", md_str(p, "ended_by"));
		md_fill(out, p, " | {s:logged_duration_s} | {s:cpu_s}");
		if (!isnan(md_num(p, "cpu_utilization")))
			fprintf(out, " (%.0f%%)", 100.0 * md_num(p, "cpu_utilization"));
		fputs(" | ", out);
		double delta = md_num(p, "rss_delta_bytes");
		fputs(delta < 0 ? "−" : delta > 0 ? "+" : "", out);
		md_cell_bytes(out, fabs(delta));
		md_fill(out, p, " | {bytes:rss_peak_bytes} | ");
		json_t *top = json_object_get(p, "top_functions");
		for (size_t k = 0; k < json_array_size(top) && k < 2; k++) {
			json_t *f = json_array_get(top, k);
			fputs(k ? ", " : "", out);
			md_cell(out, md_str(f, "function"));
			fprintf(out, " %.0f%%", md_num(f, "pct"));
		}
		fprintf(out, " | %.0f / %.0f / %.0f |\n", md_num(p, "warnings"),
			md_num(p, "errors"), md_num(p, "retries"));
	}
	if (n > MD_PHASES_SHOWN)
		fprintf(out, "\n%zu more phases in report.json.\n", n - MD_PHASES_SHOWN);
	fputc('\n', out);
}
