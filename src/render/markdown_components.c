/* markdown_components: report.md's Components section (the report's
 * `components` key: a target of several processes grouped by program,
 * src/analysis/components.c). */
#include "mdcell.h"

#include <string.h>

static void function_cell(FILE *out, json_t *f)
{
	const char *file = md_str(f, "file"), *slash = strrchr(file, '/');
	md_cell(out, md_str(f, "function"));
	if (*file) {
		fputs(" (", out);
		md_cell(out, slash ? slash + 1 : file);
		fputc(')', out);
	}
}

/* A list of functions, each with its share (top functions) or its seconds
 * (waits). */
static void functions_cell(FILE *out, json_t *list, int seconds)
{
	json_t *f;
	size_t j;
	json_array_foreach(list, j, f)
	{
		if (j)
			fputs(", ", out);
		function_cell(out, f);
		if (seconds)
			md_fill(out, f, " {s:seconds}");
		else
			fprintf(out, " %.0f%%", md_num(f, "share_pct"));
	}
}

void md_section_components(FILE *out, json_t *report)
{
	json_t *c = json_object_get(report, "components"), *k;
	size_t i;
	if (!c)
		return;
	fputs("## Components\n\n", out);
	fputs("The target's processes grouped by program (a multiprocessing Process by the "
	      "function it runs). ",
	      out);
	md_text(out, md_str(c, "dominant"));
	fputs(" dominates", out);
	if (md_num(c, "dominant_cpu_pct") == md_num(c, "dominant_cpu_pct"))
		fprintf(out, " with %.0f%% of the CPU time", md_num(c, "dominant_cpu_pct"));
	fputs(".\n\n| component | processes | CPU | share | peak RSS | top functions "
	      "| busiest process | off the CPU in |\n|---|---|---|---|---|---|---|---|\n",
	      out);
	json_array_foreach(json_object_get(c, "list"), i, k)
	{
		md_fill(out, k,
			"| {text:name} | {int:processes} | {s:cpu_s} | {pct:cpu_pct} | "
			"{bytes:peak_rss_bytes} | ");
		functions_cell(out, json_object_get(k, "top_functions"), 0);
		json_t *b = json_object_get(k, "busiest");
		md_fill(out, b, " | {whole:pid}: {s:cpu_s}");
		if (*md_str(b, "function")) {
			fputs(" in ", out);
			function_cell(out, b);
		}
		fputs(" | ", out);
		functions_cell(out, json_object_get(k, "waits"), 1);
		fputs(" |\n", out);
	}
	fputc('\n', out);
}
