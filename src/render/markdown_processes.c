/* markdown_processes: report.md's I/O totals (`io`) and processes table
 * (`processes`). */
#include "mdcell.h"

#include <math.h>

#define MD_MACHINE_PROCESSES 25 /* rows of the whole machine's processes table */

/* The tree's throughput over the run is shown when it moved this much. */
#define IO_TIMELINE_MIN_BYTES (1024.0 * 1024.0)
#define IO_TIMELINE_MIN_MB_S 1.0

/* The processes that read or wrote most, when more than one did. */
static void io_processes(FILE *out, json_t *io)
{
	json_t *ps = json_object_get(io, "processes");
	if (json_array_size(ps) < 2)
		return;
	fputs("| pid | command | read | read calls | written | write calls | from storage | to "
	      "storage |\n|---|---|---|---|---|---|---|---|\n",
	      out);
	size_t i;
	json_t *p;
	json_array_foreach(ps, i, p)
	    md_fill(out, p,
		    "| {whole:pid} | {text:command} | {bytes:read_bytes} | {int:read_calls} | "
		    "{bytes:write_bytes} | {int:write_calls} | {bytes:storage_read_bytes} | "
		    "{bytes:storage_write_bytes} |\n");
	double with_io = md_num(io, "processes_with_io");
	if (with_io > (double)json_array_size(ps))
		fprintf(out, "\n%.0f more processes read or wrote less.\n",
			with_io - (double)json_array_size(ps));
	fputc('\n', out);
}

/* The whole tree's throughput over the run, when it moved data. */
static void io_timeline(FILE *out, json_t *io)
{
	json_t *tl = json_object_get(io, "timeline"), *busiest = json_object_get(io, "busiest");
	double rd = md_timeline_max(tl, "read_mb_s"), wr = md_timeline_max(tl, "write_mb_s");
	double moved = md_num(io, "read_bytes") + md_num(io, "write_bytes");
	if (json_array_size(tl) < 2 || !busiest || !(moved >= IO_TIMELINE_MIN_BYTES) ||
	    !(rd + wr >= IO_TIMELINE_MIN_MB_S))
		return;
	md_fill(out, busiest,
		"Busiest from {s:start_s} to {s:end_s}: read {ratio:read_mb_s} MB/s, written "
		"{ratio:write_mb_s} MB/s.\n\n| over the run | |\n|---|---|\n");
	md_sparkline_row(out, tl, "read MB/s", "read_mb_s", rd);
	md_sparkline_row(out, tl, "written MB/s", "write_mb_s", wr);
	md_sparkline_row(out, tl, "read and write calls/s", "calls_s", md_timeline_max(tl, "calls_s"));
	fputc('\n', out);
}

void md_section_io(FILE *out, json_t *report)
{
	json_t *io = json_object_get(report, "io");
	if (!io)
		return;
	md_fill(out, io,
		"## I/O\n\n| metric | value |\n|---|---|\n"
		"| read (system calls) | {bytes:read_bytes} |\n"
		"| written (system calls) | {bytes:write_bytes} |\n");
	if (!isnan(md_num(io, "read_calls")))
		md_fill(out, io,
			"| read calls | {int:read_calls} |\n| write calls | {int:write_calls} |\n");
	md_fill(out, io,
		"| read from storage | {bytes:storage_read_bytes} |\n"
		"| written to storage | {bytes:storage_write_bytes} |\n\n");
	io_processes(out, io);
	io_timeline(out, io);
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
		if (json_is_integer(json_object_get(p, "os_pid")))
			fprintf(out, "| %.0f (process %.0f with this pid) |", md_num(p, "os_pid"),
				md_num(p, "pid_use"));
		else
			fprintf(out, "| %.0f%s |", md_num(p, "pid"),
				json_is_true(json_object_get(p, "leader")) && !whole ? " (launched)"
										     : "");
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
