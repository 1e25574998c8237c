/* markdown_system: report.md's System section (report key `system`): the
 * machine's CPUs, run queue and pressure stalls over the run, its busy
 * devices, and a timeline of them. */
#include "mdcell.h"

#include <math.h>

void md_section_system(FILE *out, json_t *report)
{
	json_t *sys = json_object_get(report, "system");
	if (!sys)
		return;
	json_t *cpu = json_object_get(sys, "cpu"), *rq = json_object_get(sys, "run_queue");
	json_t *psi = json_object_get(sys, "pressure"), *devs = json_object_get(sys, "devices");
	fputs("## System\n\nThe machine while the target ran (`vmstat` and `iostat -x`'s view):",
	      out);
	if (!isnan(md_num(cpu, "busy_pct")))
		md_fill(out, cpu,
			" CPUs busy {tenths:busy_pct}%, iowait {tenths:iowait_pct}%, "
			"steal {tenths:steal_pct}%;");
	if (rq)
		md_fill(out, rq,
			" runnable tasks {tenths:mean} on average (at most {whole:max}), "
			"blocked on I/O {tenths:blocked_mean} (at most {whole:blocked_max});");
	if (json_object_size(psi))
		md_fill(out, psi,
			" some task stalled (PSI) for CPU {tenths:cpu_pct}%, memory "
			"{tenths:memory_pct}%, I/O {tenths:io_pct}% of the run.");
	fputs("\n\n", out);
	if (json_array_size(devs)) {
		fputs(
		    "| device | read | written | IOPS | read MB/s | write MB/s | busy | busiest "
		    "interval | queue depth | deepest |\n|---|---|---|---|---|---|---|---|---|---|\n",
		    out);
		size_t i;
		json_t *d;
		json_array_foreach(devs, i, d)
		    md_fill(out, d,
			    "| {code:device} | {bytes:read_bytes} | {bytes:write_bytes} | "
			    "{ratio:iops} | {ratio:read_mb_s} | {ratio:write_mb_s} | "
			    "{pct:util_pct} | {pct:util_peak_pct} | {ratio:queue_depth} | "
			    "{ratio:queue_peak} |\n");
		fputc('\n', out);
	}
	json_t *tl = json_object_get(sys, "timeline");
	if (json_array_size(tl) < 2)
		return;
	fputs("| over the run | |\n|---|---|\n", out);
	md_sparkline_row(out, tl, "runnable tasks", "running", md_timeline_max(tl, "running"));
	md_sparkline_row(out, tl, "CPUs busy (of 100%)", "busy_pct", 100);
	md_sparkline_row(out, tl, "iowait (of 100%)", "iowait_pct", 100);
	md_sparkline_row(out, tl, "busiest disk busy (of 100%)", "disk_util_pct", 100);
	fputc('\n', out);
}
