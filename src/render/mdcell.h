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
/* Eight-level sparkline of one key of a timeline (RSS, live heap). */
void md_sparkline(FILE *out, json_t *timeline, const char *key, double peak);

/* report.md's GPU and interconnect sections (markdown_gpu.c). */
void md_section_gpu(FILE *out, json_t *report);
/* report.md's focus line and what sonde chose to measure, and why
 * (markdown_focus.c); md_focused: 1 when the report leads with dimension
 * (report.focus.dimensions holds it; NULL is never focused). */
void md_section_focus(FILE *out, json_t *report);
int md_focused(json_t *report, const char *dimension);
/* report.md's PyTorch section (markdown_torch.c). */
void md_section_torch(FILE *out, json_t *report);
/* report.md's Components section (markdown_components.c). */
void md_section_components(FILE *out, json_t *report);

#endif
