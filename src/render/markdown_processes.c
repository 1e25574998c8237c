/* markdown_processes: report.md's I/O totals (`io`) and processes table
 * (`processes`). */
#include "mdcell.h"

#include <math.h>

#define MD_MACHINE_PROCESSES 25 /* rows of the whole machine's processes table */

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
	/* The whole machine's (run -a): the busiest first, the rest counted. */
	int whole = json_is_true(json_object_get(json_object_get(report, "target"), "whole_machine"));
	size_t shown = whole && json_array_size(ps) > MD_MACHINE_PROCESSES ? MD_MACHINE_PROCESSES
									      : json_array_size(ps);
	if (whole)
		fputs("## Processes\n\nThe busiest first (user + system CPU time).\n\n| pid", out);
	else
		fputs("## Processes\n\n| pid", out);
	fputs(
	    " | parent | command | start | end | exit | user | system | peak "
	    "RSS | threads |\n|---|---|---|---|---|---|---|---|---|---|\n",
	    out);
	size_t i;
	json_t *p;
	json_array_foreach(ps, i, p) {
		if (i == shown)
			break;
		fprintf(out, "| %.0f%s |", md_num(p, "pid"),
			json_is_true(json_object_get(p, "leader")) && !whole ? " (launched)" : "");
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
	if (shown < json_array_size(ps))
		fprintf(out, "\n%zu more processes, with less CPU time, in report.json.\n",
			json_array_size(ps) - shown);
	fputc('\n', out);
}
