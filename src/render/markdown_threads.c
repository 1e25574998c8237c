/* markdown_threads: report.md's sections on what the threads did besides
 * computing: Python's threads and the GIL (`python`), the asyncio tasks
 * (`asyncio`) and the off-CPU waits (`offcpu`). */
#include "mdcell.h"

#include <math.h>

/* report["python"]: the threads of the Python processes and the GIL. */
void md_section_python(FILE *out, json_t *report)
{
	json_t *py = json_object_get(report, "python");
	if (!py)
		return;
	json_t *gil = json_object_get(py, "gil");
	fputs("## Python threads\n\n", out);
	if (!isnan(md_num(gil, "held_pct")))
		fprintf(out,
			"GIL held in %.0f%% of the sampled moments; contended (a thread on the CPU "
			"waits for it while another holds it) in %.0f%%.\n\n",
			md_num(gil, "held_pct"), md_num(gil, "contention_pct"));
	fputs("| pid | tid | name | samples | on CPU | holds GIL | queued for a CPU | idle |\n"
	      "|---|---|---|---|---|---|---|---|\n",
	      out);
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(py, "threads"), i, t) {
		if (i == 40) {
			fputs("| … | | | | | | | |\n", out);
			break;
		}
		md_fill(out, t,
			"| {whole:pid} | {whole:tid} | {text:name} | {whole:samples} | "
			"{pct:on_cpu_pct} | {pct:gil_pct} | {pct:runq_pct} | {pct:idle_pct} |\n");
	}
	fputc('\n', out);
}

/* What the asyncio agent saw: task sites, loop lag, retries. */
void md_section_asyncio(FILE *out, json_t *report)
{
	json_t *a = json_object_get(report, "asyncio");
	if (!a)
		return;
	fprintf(out, "## asyncio\n\n%.0f tasks recorded in %.0f process(es).\n\n",
		md_num(a, "tasks"), md_num(a, "processes"));
	size_t i;
	json_t *o;
	if (json_array_size(json_object_get(a, "sites"))) {
		fputs(
		    "| created at | runs | tasks | most in flight | most working | median | p95 | "
		    "max | failed |\n|---|---|---|---|---|---|---|---|---|\n",
		    out);
		json_array_foreach(json_object_get(a, "sites"), i, o) {
			md_fill(out, o,
				"| {text:location} | {text:coroutine} | {whole:tasks} | "
				"{whole:peak_in_flight} | {whole:peak_working} | {s:median_s} | "
				"{s:p95_s} | {s:max_s} | {whole:failed} |\n");
		}
		fputc('\n', out);
	}
	json_array_foreach(json_object_get(a, "loop_lag"), i, o) {
		md_fill(
		    out, o,
		    "Event loop of thread {whole:tid}: its heartbeat ran late {whole:late_beats} "
		    "times, {s:late_s} in all, the longest {s:max_late_s}.\n\n");
	}
	json_array_foreach(json_object_get(a, "retries"), i, o) {
		md_fill(
		    out, o,
		    "Retries at {code:location} after {prose:exception}: {whole:retries}, delays "
		    "{s:delay_min_s} to {s:delay_max_s}");
		fprintf(out, " (%s), in %.0f waves of up to %.0f.\n\n",
			json_is_true(json_object_get(o, "jittered")) ? "jittered" : "no jitter",
			md_num(o, "waves"), md_num(o, "largest_wave"));
	}
}

/* Where the threads wait: the offcpu probe's heaviest waits and threads. */
void md_section_offcpu(FILE *out, json_t *report)
{
	json_t *o = json_object_get(report, "offcpu");
	json_t *waits = json_object_get(o, "waits"), *threads = json_object_get(o, "threads");
	if (!json_array_size(waits) && !json_array_size(threads))
		return;
	fputs("## Off-CPU time\n\nBlocked intervals from ", out);
	md_code(out, md_str(o, "event"));
	fprintf(out, " (flame graph: offcpu.svg); "
		     "state S sleeping, D uninterruptible (I/O), ? unknown. A wait's time is "
		     "summed over the threads that waited there, so its share of wall can pass "
		     "100%%.\n\n");
	size_t i;
	json_t *w;
	if (json_array_size(waits)) {
		fputs("| # | waiting in | location | blocking call | state | blocked | share of "
		      "wall |\n|---|---|---|---|---|---|---|\n",
		      out);
		json_array_foreach(waits, i, w) {
			fprintf(out, "| %zu |", i + 1);
			md_fill(out, w,
				" {text:function} | {location:file} | {text:blocking_call} | "
				"{text:state} | {s:seconds} | {pct:wall_pct} |\n");
		}
		fputc('\n', out);
	}
	int states = !isnan(md_num(json_array_get(threads, 0), "runnable_s"));
	if (json_array_size(threads)) {
		fputs(states ? "| thread | tid | on CPU | off CPU | off share | runnable (queued "
			       "for a CPU) | blocked |\n|---|---|---|---|---|---|---|\n"
			     : "| thread | tid | on CPU | off CPU | off share |\n|---|---|---|---|---|\n",
		      out);
		json_array_foreach(threads, i, w) {
			md_fill(out, w,
				"| {text:name} | {whole:tid} | {s:on_cpu_s} | {s:off_cpu_s} | "
				"{pct:off_cpu_pct} |");
			if (states)
				md_fill(out, w, " {s:runnable_s} | {s:blocked_s} |");
			fputc('\n', out);
		}
		fputc('\n', out);
	}
}
