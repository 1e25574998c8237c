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

void md_section_components(FILE *out, json_t *report)
{
	json_t *c = json_object_get(report, "components"), *k, *f;
	size_t i, j;
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
		fputs("| ", out);
		md_cell(out, md_str(k, "name"));
		fputs(" | ", out);
		md_cell_int(out, md_num(k, "processes"));
		fputs(" | ", out);
		md_cell_s(out, md_num(k, "cpu_s"));
		fputs(" | ", out);
		md_cell_pct(out, md_num(k, "cpu_pct"));
		fputs(" | ", out);
		md_cell_bytes(out, md_num(k, "peak_rss_bytes"));
		fputs(" | ", out);
		json_array_foreach(json_object_get(k, "top_functions"), j, f)
		{
			if (j)
				fputs(", ", out);
			function_cell(out, f);
			fprintf(out, " %.0f%%", md_num(f, "share_pct"));
		}
		json_t *b = json_object_get(k, "busiest");
		fprintf(out, " | %.0f: ", md_num(b, "pid"));
		md_cell_s(out, md_num(b, "cpu_s"));
		if (*md_str(b, "function")) {
			fputs(" in ", out);
			function_cell(out, b);
		}
		fputs(" | ", out);
		json_array_foreach(json_object_get(k, "waits"), j, f)
		{
			if (j)
				fputs(", ", out);
			function_cell(out, f);
			fputc(' ', out);
			md_cell_s(out, md_num(f, "seconds"));
		}
		fputs(" |\n", out);
	}
	fputc('\n', out);
}
