/* markdown_notes: report.md's closing sections: the observability gaps, what
 * was not measured, the run's events, and Part B (the instrumentation
 * changelog). */
#include "mdcell.h"

#include <string.h>

/* report["observability_gaps"]: what would make the next run say more. */
void md_section_gaps(FILE *out, json_t *report)
{
	json_t *gaps = json_object_get(report, "observability_gaps");
	size_t i;
	json_t *g;
	if (!json_array_size(gaps))
		return;
	fputs("## Observability gaps\n\n", out);
	json_array_foreach(gaps, i, g) {
		md_fill(out, g, "- {prose:text} (`{prose:id}`)\n");
	}
	fputc('\n', out);
}

void md_section_not_measured(FILE *out, json_t *report)
{
	json_t *nm = json_object_get(report, "not_measured");
	json_t *probes = json_object_get(report, "probes");
	if (!json_object_size(nm) && !json_array_size(probes))
		return;
	fputs("## Not measured\n\n", out);
	const char *key;
	json_t *v;
	json_object_foreach(nm, key, v) {
		fprintf(out, "- **%s**: ", key);
		md_cell(out, json_string_value(v));
		fputc('\n', out);
	}
	size_t i;
	json_t *p;
	json_array_foreach(probes, i, p) {
		if (strcmp(md_str(p, "status"), "unavailable"))
			continue;
		md_fill(out, p, "- **probe {text:name}** unavailable: {text:reason}\n");
	}
	fputc('\n', out);
}

void md_section_notes(FILE *out, json_t *report)
{
	json_t *notes = json_object_get(report, "notes");
	if (!json_array_size(notes))
		return;
	fputs("## Events\n\n", out);
	size_t i;
	json_t *n;
	json_array_foreach(notes, i, n) {
		md_fill(out, n, "- {s:t_s}: {text:text}\n");
	}
	fputc('\n', out);
}

void md_section_changelog(FILE *out, json_t *report)
{
	json_t *cl = json_object_get(report, "changelog");
	fputs("# Part B: instrumentation changelog\n\n", out);
	if (!json_array_size(cl)) {
		fputs("sonde created or modified no file for this run outside its run directory, "
		      "and changed nothing in the target's environment.\n",
		      out);
		return;
	}
	fputs("| file | change | what | lines |\n|---|---|---|---|\n", out);
	size_t i;
	json_t *c;
	json_array_foreach(cl, i, c)
		md_fill(out, c, "| {text:file} | {text:change} | {text:what} | {text:lines} |\n");
	fputs("\nEnvironment changes live only in the profiled processes. Anything listed "
	      "here as staying after the run (a mount sonde could not undo) says how to undo "
	      "it.\n",
	      out);
}
