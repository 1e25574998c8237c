/* compare_view: the outputs of `sonde compare` from its model
 * (analysis/compare.h): compare.md, the terminal summary and diff.svg, a
 * differential flame graph. Like every renderer it formats and never decides.
 *
 * names[0] and names[1] label runs A and B (their directories, outside text,
 * escaped where written); reports[] are the two report models (NULL when a
 * run has no report.json: its phases and memory read as unknown). Both
 * outputs carry each side's machine warnings, the note a family compared
 * with one run needs, and the GPU kernels' changes when both sides ran
 * kernels. */
#ifndef SONDE_COMPARE_VIEW_H
#define SONDE_COMPARE_VIEW_H

#include <jansson.h>
#include <stdio.h>

struct compare;

#define COMPARE_TERMINAL_TOP 10 /* changes the terminal summary lists */
#define COMPARE_MD_TOP	     30 /* rows of compare.md's function table */
#define COMPARE_MD_HEAP_TOP 10 /* rows of its heap site table */

void compare_md_write(const struct compare *c, json_t *const reports[2], const char *const names[2],
		      FILE *out);
void compare_terminal(const struct compare *c, const char *const names[2], FILE *out);
/* B's flame graph (widths: B's samples), each frame red when its function's
 * total time grew since A, blue when it shrank, paler the smaller the change;
 * a function that left B has no frame. 0, or 1 when B has no samples. */
int compare_svg_write(const struct compare *c, FILE *out);

#endif
