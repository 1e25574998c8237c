/* markdown_hygiene: report.md's one line about the machine under the title
 * (report.json `hygiene`), and each of its warnings. */
#include "mdcell.h"

#include <math.h>

void md_section_hygiene(FILE *out, json_t *report)
{
	json_t *h = json_object_get(report, "hygiene");
	if (!h)
		return;
	fputs("\n\n**Machine**: ", out);
	md_fill(out, h, "{int:cpus_online} CPUs");
	json_t *smt = json_object_get(h, "smt_active");
	if (smt)
		fprintf(out, " (SMT %s)", json_is_true(smt) ? "on" : "off");
	if (*md_str(h, "governor")) {
		fputs(", governor ", out);
		md_cell(out, md_str(h, "governor"));
	}
	if (!isnan(md_num(h, "cgroup_cpu_limit_cpus")))
		md_fill(out, h, ", cgroup limit {ratio:cgroup_cpu_limit_cpus} CPUs");
	if (!isnan(md_num(h, "load_1m_start")))
		md_fill(out, h, ", load {ratio:load_1m_start} at the start");
	const char *sep = "; during the run: ";
	if (!isnan(md_num(h, "busy_pct"))) {
		fputs(sep, out);
		md_fill(out, h, "busy {tenths:busy_pct}% of the CPU time (iowait {tenths:iowait_pct}%)");
		sep = ", ";
	}
	if (!isnan(md_num(h, "steal_pct"))) {
		fputs(sep, out);
		md_fill(out, h, "steal {tenths:steal_pct}% of the CPU time");
		sep = ", ";
	}
	if (!isnan(md_num(h, "thermal_throttles"))) {
		fputs(sep, out);
		md_fill(out, h, "{int:thermal_throttles} thermal throttles");
		sep = ", ";
	}
	/* Without a quota a cgroup throttles nothing: said only when it did. */
	if (md_num(h, "cgroup_throttled_count") > 0 || !isnan(md_num(h, "cgroup_cpu_limit_cpus"))) {
		fputs(sep, out);
		md_fill(out, h, "{int:cgroup_throttled_count} cgroup throttles");
	}
	fputc('.', out);
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(h, "warnings"), i, w)
	{
		fputs("\n\n> **Warning**: ", out);
		md_text(out, md_str(w, "text"));
	}
}
