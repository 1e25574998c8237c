/* markdown_focus: report.md's opening lines on what the report leads with
 * (--focus) and what sonde chose to measure and why (the report's `focus`). */
#include "mdcell.h"

#include <string.h>

int md_focused(json_t *report, const char *dimension)
{
	json_t *dims = json_object_get(json_object_get(report, "focus"), "dimensions"), *d;
	size_t i;
	if (!dimension)
		return 0;
	json_array_foreach(dims, i, d)
	{
		const char *s = json_string_value(d);
		if (s && !strcmp(s, dimension))
			return 1;
	}
	return 0;
}

void md_section_focus(FILE *out, json_t *report)
{
	json_t *f = json_object_get(report, "focus"), *d, *c;
	size_t i;
	if (!f)
		return;
	json_t *dims = json_object_get(f, "dimensions");
	if (json_array_size(dims)) {
		fputs("Focus: ", out);
		json_array_foreach(dims, i, d)
		{
			fputs(i ? ", " : "", out);
			md_text(out, json_string_value(d));
		}
		fputs(" (asked with --focus): its sections come first.\n\n", out);
	} else {
		fputs("Focus: none asked (--focus cpu|memory|gpu|io|async); sonde measured what it "
		      "found.\n\n",
		      out);
	}
	json_t *choices = json_object_get(f, "choices");
	if (!json_array_size(choices))
		return;
	fputs("What sonde measured, and why:\n\n", out);
	json_array_foreach(choices, i, c)
	{
		md_fill(out, c, "- {prose:what}: {prose:why}\n");
	}
	fputc('\n', out);
}
