/* markdown_cpu: report.md's CPU section (the report's `cpu` key: times,
 * context switches, page faults, hardware counters, counters per thread). */
#include "mdcell.h"

#include <math.h>

/* cpu.thread_counters: the counted threads with the most of the first event. */
static void section_thread_counters(FILE *out, json_t *cpu)
{
	json_t *threads = json_object_get(cpu, "thread_counters");
	json_t *first = json_array_get(threads, 0);
	if (!first)
		return;
	json_t *counts = json_object_get(first, "counts"), *v, *t;
	const char *event;
	size_t i, shown = json_array_size(threads) < 20 ? json_array_size(threads) : 20;
	fprintf(out, "Counters per thread (%zu of %lld threads):\n\n| pid | tid | thread |", shown,
		(long long)md_num(cpu, "thread_counters_total"));
	json_object_foreach(counts, event, v) {
		fputc(' ', out);
		md_cell(out, event);
		fputs(" |", out);
	}
	fputs(" IPC | cache miss rate |\n|---|---|---|", out);
	json_object_foreach(counts, event, v)
		fputs("---|", out);
	fputs("---|---|\n", out);
	json_array_foreach(threads, i, t) {
		if (i == shown)
			break;
		fprintf(out, "| %lld | %lld | ", (long long)md_num(t, "pid"),
			(long long)md_num(t, "tid"));
		md_cell(out, *md_str(t, "name") ? md_str(t, "name") : "–");
		fputs(" |", out);
		json_object_foreach(counts, event, v) {
			fputc(' ', out);
			md_cell_int(out, md_num(json_object_get(t, "counts"), event));
			fputs(" |", out);
		}
		md_fill(out, t, " {ratio:ipc} | {fraction:cache_miss_rate} |\n");
	}
	fputc('\n', out);
}

void md_section_cpu(FILE *out, json_t *report)
{
	json_t *cpu = json_object_get(report, "cpu");
	if (!cpu)
		return;
	md_fill(out, cpu,
		"## CPU\n\n| metric | value |\n|---|---|\n"
		"| user time | {s:user_s} |\n| system time | {s:sys_s} |\n");
	fprintf(out, "| CPU/wall | %.2f |\n", md_num(cpu, "utilization"));
	md_fill(out, cpu,
		"| voluntary context switches | {int:voluntary_ctx_switches} |\n"
		"| involuntary context switches | {int:involuntary_ctx_switches} |\n"
		"| waiting for a CPU (run queue) | {s:runqueue_wait_s} |\n"
		"| minor / major page faults | {int:minor_faults} / {int:major_faults} |\n");
	const char *busy = json_string_value(json_object_get(cpu, "contention_note"));
	if (busy) {
		fputs("\n", out);
		md_text(out, busy);
		fputs("\n", out);
	}
	json_t *hw = json_object_get(cpu, "counters");
	if (json_is_object(hw))
		md_fill(out, hw,
			"| instructions per cycle (IPC) | {ratio:ipc} |\n"
			"| cache miss rate | {fraction:cache_miss_rate} |\n"
			"| branch miss rate | {fraction2:branch_miss_rate} |\n");
	fputc('\n', out);
	if (json_is_object(hw) && !isnan(md_num(hw, "ipc"))) {
		double ipc = md_num(hw, "ipc");
		fprintf(out, "Hardware counters: IPC %.2f, %s%s\n\n", ipc,
			ipc < 1 ? "under one instruction per cycle: the cores are likely stalled "
				  "(memory-bound or waiting on dependencies)"
				: "the cores retire instructions at a healthy rate",
			json_is_true(json_object_get(hw, "multiplexed"))
			    ? " (counts scaled: the counters were multiplexed)"
			    : "");
	} else if (!json_is_object(hw)) {
		const char *why = json_string_value(
		    json_object_get(json_object_get(report, "not_measured"), "counters"));
		if (why) {
			fputs("Hardware counters: not measured (", out);
			md_text(out, why);
			fputs(").\n\n", out);
		}
	}
	section_thread_counters(out, cpu);
}
