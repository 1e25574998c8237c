/* markdown_processes: report.md's I/O totals (`io`) and processes table
 * (`processes`). */
#include "mdcell.h"

#include <math.h>

void md_section_io(FILE *out, json_t *report)
{
	json_t *io = json_object_get(report, "io");
	if (!io)
		return;
	md_fill(out, io,
		"## I/O\n\n| metric | value |\n|---|---|\n"
		"| read (system calls) | {bytes:read_bytes} |\n"
		"| written (system calls) | {bytes:write_bytes} |\n"
		"| read from storage | {bytes:storage_read_bytes} |\n"
		"| written to storage | {bytes:storage_write_bytes} |\n\n");
}

void md_section_processes(FILE *out, json_t *report)
{
	json_t *ps = json_object_get(report, "processes");
	if (!json_array_size(ps))
		return;
	fputs(
	    "## Processes\n\n| pid | parent | command | start | end | exit | user | system | peak "
	    "RSS | threads |\n|---|---|---|---|---|---|---|---|---|---|\n",
	    out);
	size_t i;
	json_t *p;
	json_array_foreach(ps, i, p) {
		fprintf(out, "| %.0f%s |", md_num(p, "pid"),
			json_is_true(json_object_get(p, "leader")) ? " (launched)" : "");
		md_fill(out, p, " {whole:ppid} | {text:command} | {s:start_s} | ");
		if (isnan(md_num(p, "end_s")))
			fputs("running", out);
		else
			md_cell_s(out, md_num(p, "end_s"));
		fputs(" | ", out);
		if (!isnan(md_num(p, "signal")))
			fprintf(out, "signal %.0f", md_num(p, "signal"));
		else
			md_cell_int(out, md_num(p, "exit_code"));
		md_fill(
		    out, p,
		    " | {s:user_s} | {s:sys_s} | {bytes:peak_rss_bytes} | {int:threads_max} |\n");
	}
	fputc('\n', out);
}
