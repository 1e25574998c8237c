/* mdcell: the pieces report.md's sections are written with. Outside text
 * (names from the target, its output) is made safe: control characters
 * escaped, no raw markup, no cell borders. Unknown numbers (NaN, or below 0
 * for counts and sizes) print as a dash. */
#ifndef SONDE_MDCELL_H
#define SONDE_MDCELL_H

#include <jansson.h>
#include <stdio.h>

void md_cell(FILE *out, const char *text);  /* inside a table cell */
void md_code(FILE *out, const char *text);  /* a code span, verbatim */
void md_text(FILE *out, const char *text);  /* prose */

double md_num(json_t *o, const char *key);	 /* NaN when absent or not a number */
const char *md_str(json_t *o, const char *key); /* "" when absent */

void md_cell_s(FILE *out, double s);
void md_cell_bytes(FILE *out, double b);
void md_cell_num(FILE *out, double v, const char *fmt, double scale); /* v * scale in fmt */
void md_cell_int(FILE *out, double v);
void md_cell_pct(FILE *out, double v);
void md_cell_sd(FILE *out, double sd, double value); /* " ±12%": one standard deviation */
void md_cell_location(FILE *out, json_t *o);	     /* o's "file:line", else its module */

/* Writes tmpl, each "{kind:key}" in it replaced by o's key as a cell of
 * that kind, so that a row reads like what it writes:
 * "| {text:name} | {s:cpu_s} |\n". Kinds: text (md_cell), code (md_code),
 * prose (md_text), whole ("%.0f" of the number as it is, "nan" when absent),
 * s, bytes, int, pct (md_cell_s, _bytes, _int, _pct), tenths ("1.5"), ratio
 * ("1.25"), fraction ("12.5%" of a 0-1 fraction), fraction2 ("0.25%"),
 * location (md_cell_location of o; its key is "file"). A brace that names
 * no kind is written as it is. */
void md_fill(FILE *out, json_t *o, const char *tmpl);
/* Eight-level sparkline of one key of a timeline (RSS, live heap). */
void md_sparkline(FILE *out, json_t *timeline, const char *key, double peak);
/* A table row "| label | sparkline |", none when peak is not above 0. */
void md_sparkline_row(FILE *out, json_t *timeline, const char *label, const char *key,
		      double peak);
/* The largest value of key in the timeline's points (0 when none is above). */
double md_timeline_max(json_t *timeline, const char *key);

/* report.md's GPU and interconnect sections (markdown_gpu.c). */
void md_section_gpu(FILE *out, json_t *report);
/* report.md's focus line and what sonde chose to measure, and why
 * (markdown_focus.c); md_focused: 1 when the report leads with dimension
 * (report.focus.dimensions holds it; NULL is never focused). */
void md_section_focus(FILE *out, json_t *report);
int md_focused(json_t *report, const char *dimension);
/* report.md's PyTorch section (markdown_torch.c). */
void md_section_torch(FILE *out, json_t *report);
/* report.md's section on the functions --function named (markdown_functions.c). */
void md_section_functions(FILE *out, json_t *report);
/* report.md's Components section (markdown_components.c). */
void md_section_components(FILE *out, json_t *report);
/* The other sections of report.md, one file each beside markdown.c: a
 * section that has nothing to show writes nothing. */
void md_section_cpu(FILE *out, json_t *report);	     /* markdown_cpu.c */
void md_section_hotspots(FILE *out, json_t *report); /* markdown_hotspots.c */
void md_section_coverage(FILE *out, json_t *report);
void md_section_phases(FILE *out, json_t *report); /* markdown_phases.c */
void md_section_python(FILE *out, json_t *report); /* markdown_threads.c */
void md_section_asyncio(FILE *out, json_t *report);
void md_section_offcpu(FILE *out, json_t *report);
void md_section_memory(FILE *out, json_t *report); /* markdown_memory.c */
void md_section_io(FILE *out, json_t *report);	   /* markdown_processes.c */
void md_section_syscalls(FILE *out, json_t *report); /* markdown_syscalls.c */
void md_section_system(FILE *out, json_t *report);   /* markdown_system.c */
void md_section_processes(FILE *out, json_t *report);
void md_section_gaps(FILE *out, json_t *report); /* markdown_notes.c */
void md_section_not_measured(FILE *out, json_t *report);
void md_section_notes(FILE *out, json_t *report);
void md_section_changelog(FILE *out, json_t *report);
/* The machine's line under the title, and its warnings (markdown_hygiene.c). */
void md_section_hygiene(FILE *out, json_t *report);

#endif
