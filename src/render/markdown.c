/* markdown renderer: report.md, Part A (what was measured, by dimension, and
 * the ranked findings) and Part B (the instrumentation changelog). This file
 * writes the title, the findings and the order of the sections; each other
 * section is a markdown_*.c of its own (their list: mdcell.h). */
#include "render.h"
#include "mdcell.h"

#include <math.h>

static void section_findings(FILE *out, json_t *report)
{
	json_t *fs = json_object_get(report, "findings");
	fputs("## Findings\n\n", out);
	if (!json_array_size(fs)) {
		fputs("No finding: nothing measured in this run stands out.\n\n", out);
		return;
	}
	size_t i;
	json_t *f;
	json_array_foreach(fs, i, f) {
		json_t *impact = json_object_get(f, "impact");
		fprintf(out, "### %zu. ", i + 1);
		md_cell(out, md_str(f, "title"));
		fprintf(out, "\n\n*%s* · ", md_str(f, "dimension"));
		if (json_string_value(json_object_get(f, "id"))) {
			fputc('`', out);
			md_cell(out, md_str(f, "id"));
			fputs("` · ", out);
		}
		fputs("at stake: ", out);
		if (!isnan(md_num(impact, "seconds")))
			md_cell_s(out, md_num(impact, "seconds"));
		if (!isnan(md_num(impact, "seconds")) && !isnan(md_num(impact, "bytes")))
			fputs(" and ", out);
		if (!isnan(md_num(impact, "bytes")) || isnan(md_num(impact, "seconds")))
			md_cell_bytes(out, md_num(impact, "bytes"));
		fprintf(out, " (%.0f%% of the run)", md_num(impact, "share_pct"));
		json_t *known = json_object_get(f, "known_mid_run");
		if (known) {
			fputs(" · known mid-run, after phase ", out);
			md_cell(out, md_str(known, "after_phase"));
			fputs(" at ", out);
			md_cell_s(out, md_num(known, "at_s"));
		}
		fputs("\n\n", out);
		static const char *rows[][2] = { { "Location", "location" },
						 { "Evidence", "evidence" },
						 { "Diagnosis", "diagnosis" },
						 { "Next step", "next_step" },
						 { "Validation", "validation" } };
		for (size_t r = 0; r < 5; r++) {
			fprintf(out, "- **%s**: ", rows[r][0]);
			md_text(out, md_str(f, rows[r][1]));
			fputc('\n', out);
		}
		fputc('\n', out);
	}
	json_t *more = json_object_get(report, "more_findings");
	if (json_array_size(more)) {
		fputs("Smaller findings (report.json's `more_findings` has each in full):\n\n", out);
		json_array_foreach(more, i, f) {
			fprintf(out, "- %zu. ", (size_t)json_integer_value(json_object_get(f, "rank")));
			md_cell(out, md_str(f, "title"));
			fprintf(out, " (%.0f%% of the run)\n",
				md_num(json_object_get(f, "impact"), "share_pct"));
		}
		fputc('\n', out);
	}
}

/* Which slice of the run the report is of (sonde report --from/--to/--pid/--during). */
static void section_slice(FILE *out, json_t *s)
{
	if (!s)
		return;
	fputs("\n\n**A slice of the run**: ", out);
	if (json_is_string(json_object_get(s, "phase"))) {
		fputs("phase ", out);
		md_cell(out, json_string_value(json_object_get(s, "phase")));
		fputs(", ", out);
	}
	if (json_is_number(json_object_get(s, "from_s")))
		fprintf(out, "from %.3f s to %.3f s of the run (times below count from %.3f s)",
			md_num(s, "from_s"), md_num(s, "to_s"), md_num(s, "from_s"));
	else
		fputs("the whole run", out);
	if (json_is_integer(json_object_get(s, "pid")))
		fprintf(out, ", process %.0f only", md_num(s, "pid"));
	if (json_is_integer(json_object_get(s, "tid")))
		fprintf(out, ", thread %.0f only", md_num(s, "tid"));
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(s, "left_out"), i, t) {
		fputs(i ? ", " : ". Left out (totals of the whole run that a slice cannot cut): ", out);
		md_cell(out, json_string_value(t));
	}
	fputc('.', out);
}

static int markdown_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	(void)err;
	json_t *r = ctx->report, *t = json_object_get(r, "target");
	json_t *prog = json_object_get(t, "program");
	int whole = json_is_true(json_object_get(t, "whole_machine"));
	fputs("# sonde report: ", out);
	if (whole)
		fputs("the whole machine", out);
	else
		md_code(out, md_str(prog ? prog : t, "command"));
	if (prog) {
		fputs(" (started through ", out);
		md_code(out, md_str(prog, "started_through"));
		fputc(')', out);
	}
	fputs("\n\n", out);
	json_t *code = json_object_get(t, "exit_code");
	if (json_object_get(r, "slice")) {
		fputs("A slice of ", out);
	} else if (whole) {
		fputs("Every process of the machine (kernel threads and sonde aside), left "
		      "running; followed for ", out);
	} else if (json_is_true(json_object_get(t, "attached"))) {
		fprintf(out, "Attached to a running process (it %s); followed for ",
			json_is_true(json_object_get(t, "target_exited")) ? "exited"
									  : "kept running");
	} else {
		fputs("Exit code ", out);
		if (json_is_integer(code))
			fprintf(out, "%lld", (long long)json_integer_value(code));
		else
			fputs("unknown", out);
		fputs(" after ", out);
	}
	md_cell_s(out, md_num(t, "wall_s"));
	fprintf(out, " of wall time; %zu process%s followed.",
		json_array_size(json_object_get(t, "pids")),
		json_array_size(json_object_get(t, "pids")) == 1 ? "" : "es");
	if (prog) {
		fprintf(out,
			" The program is process %.0f from %.3f s; the wrapper that "
			"started it ran %.0f process%s, ",
			md_num(prog, "pid"), md_num(prog, "from_s"),
			md_num(prog, "wrapper_processes"),
			md_num(prog, "wrapper_processes") == 1 ? "" : "es");
		md_cell_s(out, md_num(prog, "wrapper_cpu_s"));
		fputs(" of CPU time, left out of the hotspots.", out);
	}
	if (json_is_true(json_object_get(t, "interrupted")))
		fputs(" The run was interrupted; the report covers what was collected.", out);
	if (json_is_true(json_object_get(t, "stopped_by_duration")))
		fputs(" Stopped by the duration limit (-d).", out);
	if (json_is_false(json_object_get(t, "complete")))
		fputs(" **The recording is incomplete** (sonde stopped before the end).", out);
	section_slice(out, json_object_get(r, "slice"));
	md_section_hygiene(out, r);
	fputs("\n\n# Part A: what was measured\n\n", out);
	md_section_focus(out, r);
	/* The sections of the --focus dimensions first, then the rest in order. */
	static const struct {
		const char *dimension;
		void (*draw)(FILE *out, json_t *report);
	} parts[] = {
		{ NULL, section_findings },	   { NULL, md_section_functions },
		{ "cpu", md_section_cpu },
		{ NULL, md_section_phases },	   { "cpu", md_section_hotspots },
		{ "cpu", md_section_coverage },	   { "cpu", md_section_python },
		{ "async", md_section_asyncio },   { "io", md_section_offcpu },
		{ "memory", md_section_memory },   { "gpu", md_section_gpu },
		{ "gpu", md_section_torch },	   { "io", md_section_io },
		{ "io", md_section_syscalls },	   { "io", md_section_system },
		{ "cpu", md_section_components }, { NULL, md_section_processes },
		{ NULL, md_section_gaps },
		{ NULL, md_section_not_measured }, { NULL, md_section_notes },
		{ NULL, md_section_changelog },
	};
	for (int lead = 1; lead >= 0; lead--)
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
			if (md_focused(r, parts[i].dimension) == lead)
				parts[i].draw(out, r);
	return 0;
}

const struct renderer render_markdown = { .name = "markdown", .file = "report.md",
					  .render = markdown_render };
