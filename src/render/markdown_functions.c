/* markdown_functions: report.md's section on the functions `--function`
 * named (the report's `functions`): one row each with its calls and latency
 * distribution, then its callers and, for a Python function, its lines. */
#include "mdcell.h"

#include <math.h>
#include <string.h>

#define MD_FN_CALLERS_SHOWN 5
#define MD_FN_LINES_SHOWN 15

static void distribution_row(FILE *out, json_t *f, json_t *d, const char *what)
{
	fputs("| ", out);
	md_code(out, md_str(f, "spec"));
	fprintf(out, " | %s | ", what);
	md_cell_int(out, md_num(f, "calls"));
	md_fill(out, d,
		" | {s:total_s} | {s:mean_s} | {s:p50_s} | {s:p95_s} | {s:p99_s} |"
		" {s:max_s} |\n");
}

static void callers_list(FILE *out, json_t *f)
{
	json_t *cs = json_object_get(f, "callers"), *c;
	size_t i;
	if (!json_array_size(cs))
		return;
	fputs("- ", out);
	md_code(out, md_str(f, "spec"));
	fputs(" called from: ", out);
	json_array_foreach(cs, i, c)
	{
		if (i == MD_FN_CALLERS_SHOWN) {
			fprintf(out, ", %zu more", json_array_size(cs) - i);
			break;
		}
		fputs(i ? ", " : "", out);
		md_cell(out, md_str(c, "function"));
		if (!isnan(md_num(c, "line"))) {
			const char *file = md_str(c, "file"), *base = strrchr(file, '/');
			fputs(" (", out);
			md_cell(out, base ? base + 1 : file);
			fprintf(out, ":%.0f)", md_num(c, "line"));
		}
		fprintf(out, " %.0f calls (%.0f%%)", md_num(c, "calls"), md_num(c, "pct"));
	}
	fputs("\n", out);
}

static void lines_table(FILE *out, json_t *f)
{
	json_t *ls = json_object_get(f, "lines"), *l;
	size_t i;
	if (!json_array_size(ls))
		return;
	fputs("\nLines of ", out);
	md_code(out, md_str(f, "spec"));
	fputs(", slowest first (time from the line's start to the function's next line, "
	      "summed over every call",
	      out);
	if (!isnan(md_num(f, "overhead_ns_per_call")))
		fprintf(
		    out,
		    "; timing a call and its lines costs about %.1f µs of CPU, in the times above",
		    md_num(f, "overhead_ns_per_call") / 1e3);
	fputs("):\n\n| line | hits | time | share | code |\n|---:|---:|---:|---:|---|\n", out);
	json_array_foreach(ls, i, l)
	{
		if (i == MD_FN_LINES_SHOWN)
			break;
		md_fill(out, l,
			"| {whole:line} | {int:hits} | {s:wall_s} | {pct:pct} | {code:text} |\n");
	}
}

void md_section_functions(FILE *out, json_t *report)
{
	json_t *fs = json_object_get(report, "functions"), *f;
	size_t i;
	if (!json_array_size(fs))
		return;
	int timed = 0;
	json_array_foreach(fs, i, f) timed |= json_object_get(f, "wall") != NULL;
	fputs("## Functions (--function)\n\n", out);
	if (timed)
		fputs("Every call of each function named, timed from its entry to its return.\n\n"
		      "| function | time | calls | total | mean | p50 | p95 | p99 | max |\n"
		      "|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
		      out);
	json_array_foreach(fs, i, f)
	{
		json_t *wall = json_object_get(f, "wall"), *cpu = json_object_get(f, "cpu");
		if (wall)
			distribution_row(out, f, wall, "wall");
		if (cpu)
			distribution_row(out, f, cpu, "CPU");
	}
	if (timed)
		fputc('\n', out);
	json_array_foreach(fs, i, f)
	{
		if (!json_object_get(f, "wall")) {
			fputs("- ", out);
			md_code(out, md_str(f, "spec"));
			fprintf(out, ": %s",
				!strcmp(md_str(f, "status"), "never_called") ? "never called"
									     : "not measured");
			if (*md_str(f, "note")) {
				fputs(": ", out);
				md_text(out, md_str(f, "note"));
			}
			fputc('\n', out);
			continue;
		}
		callers_list(out, f);
		if (*md_str(f, "note")) {
			fputs("- ", out);
			md_code(out, md_str(f, "spec"));
			fputs(": ", out);
			md_text(out, md_str(f, "note"));
			fputc('\n', out);
		}
	}
	json_array_foreach(fs, i, f) lines_table(out, f);
	fputc('\n', out);
}
