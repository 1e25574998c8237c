/* markdown_syscalls: report.md's System calls section (report key
 * `syscalls`): the calls by time as `strace -c` lists them, each with its
 * busiest call site, then the errors and the files. */
#include "mdcell.h"

#include <math.h>

#define MD_SYSCALLS_LISTED 15

static void errors_part(FILE *out, json_t *errors)
{
	if (!json_array_size(errors))
		return;
	fputs("Errors: ", out);
	size_t i;
	json_t *e;
	json_array_foreach(errors, i, e)
	{
		if (i)
			fputs(", ", out);
		md_fill(out, e, "{text:call} {text:error} ×{int:calls}");
	}
	fputs(".\n\n", out);
}

static void files_part(FILE *out, json_t *files)
{
	if (!json_array_size(files))
		return;
	fputs("| file | pid | reads | read | writes | written |\n|---|---|---|---|---|---|\n", out);
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f)
	    md_fill(out, f,
		    "| {code:path} | {whole:pid} | {int:reads} | {bytes:read_bytes} | "
		    "{int:writes} | {bytes:write_bytes} |\n");
	fputc('\n', out);
}

void md_section_syscalls(FILE *out, json_t *report)
{
	json_t *sc = json_object_get(report, "syscalls");
	if (!sc)
		return;
	fputs("## System calls\n\n", out);
	md_fill(out, sc,
		"{int:calls} calls ({int:errors} failed), {s:seconds} in the kernel for them "
		"(summed over threads); by time, as `strace -c` lists them.");
	if (md_num(sc, "lost_calls") > 0)
		md_fill(out, sc,
			" The records of {int:lost_calls} calls were lost (sonde could not read "
			"its rings in time): the counts are lower bounds.");
	fputs("\n\n| call | calls | errors | time | share | mean | slowest | bytes | busiest "
	      "call site |\n|---|---|---|---|---|---|---|---|---|\n",
	      out);
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(sc, "by_time"), i, c)
	{
		if (i == MD_SYSCALLS_LISTED)
			break;
		md_fill(out, c,
			"| {code:call} | {int:calls} | {int:errors} | {s:seconds} | "
			"{pct:share_pct} | ");
		md_cell_num(out, md_num(c, "mean_us"), "%.1f µs", 1);
		fputs(" | ", out);
		md_cell_num(out, md_num(c, "max_us") / 1e3, "%.2f ms", 1);
		fputs(" | ", out);
		md_cell_bytes(out, md_num(c, "bytes") > 0 ? md_num(c, "bytes") : NAN);
		fputs(" | ", out);
		json_t *site = json_array_get(json_object_get(c, "sites"), 0);
		if (site)
			md_fill(out, site, "{text:location} ({int:calls})");
		fputs(" |\n", out);
	}
	fputc('\n', out);
	errors_part(out, json_object_get(sc, "errors_by_errno"));
	files_part(out, json_object_get(sc, "files"));
}
