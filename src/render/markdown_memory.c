/* markdown_memory: report.md's memory section (the report's `memory`: RSS,
 * its jumps, and the allocation tracker's heap and call sites). */
#include "mdcell.h"

#include <math.h>
#include <string.h>

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
	if (est)
		md_fill(out, heap,
			", one sample per {bytes:sampling_interval_bytes} on average: figures are "
			"estimates");
	md_fill(
	    out, heap,
	    ")\n\n| metric | value |\n|---|---|\n"
	    "| heap peak | {bytes:peak_bytes} at {s:peak_at_s} |\n"
	    "| leaked at exit | {bytes:leaked_bytes} in {int:leaked_allocations} allocations |\n"
	    "| allocations | {int:allocations} ({bytes:allocated_bytes}) |\n"
	    "| temporary allocations | {int:temporary_allocations} |\n"
	    "| processes tracked | {int:processes} |\n\n");
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
		if (!strcmp(md_str(site, "kind"), "mmap") ||
		    !strcmp(md_str(site, "kind"), "malloc+mmap"))
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
		/* redundant_bytes: "–" until measured */
		md_fill(
		    out, site,
		    " | {int:allocations} | {int:temporary_allocations} | {bytes:redundant_bytes} "
		    "|\n");
	}
	fputc('\n', out);
}

void md_section_memory(FILE *out, json_t *report)
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
	md_fill(out, mem,
		"| metric | value |\n|---|---|\n| peak RSS | {bytes:peak_rss_bytes} at "
		"{s:peak_rss_at_s}");
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
		int tracked =
		    json_is_array(json_object_get(json_array_get(jumps, 0), "allocating"));
		fputs(
		    tracked
			? "| RSS jump | from | to | size | allocating then | running then |\n"
			  "|---|---|---|---|---|---|\n"
			: "| RSS jump | from | to | size | running then |\n|---|---|---|---|---|\n",
		    out);
		size_t i;
		json_t *j;
		json_array_foreach(jumps, i, j) {
			json_t *who = json_object_get(j, "during");
			fprintf(out, "| %zu |", i + 1);
			md_fill(out, j, " {s:start_s} | {s:end_s} | +{bytes:size_bytes} | ");
			if (tracked) {
				json_t *top = json_array_get(json_object_get(j, "allocating"), 0);
				md_fill(out, top,
					top ? "{text:location} +{bytes:bytes}"
					    : "no site's heap grew");
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
