/* stackview: what the stack renderers (folded, flame graphs) share: which
 * samples they draw and how a frame's name is written. */
#ifndef SONDE_STACKVIEW_H
#define SONDE_STACKVIEW_H

#include <sqlite3.h>
#include <stdio.h>

struct stack_set;
struct stack_func;
struct strbuf;

/* Appends f's name in folded form: `;` becomes `:`, control characters
 * \xNN (utf8_escape), `_[k]` and `_[i]` for kernel and inlined functions. */
void folded_frame_name(struct strbuf *sb, const struct stack_func *f);
/* Writes ss as folded lines, counting samples or weight. 0, or 1 when there
 * is no stack to write. */
int folded_write(const struct stack_set *ss, int by_weight, FILE *out);

/* Appends s (n bytes of outside text) escaped for XML text and attributes:
 * & < > " ' become entities, control characters and invalid UTF-8 become
 * U+FFFD, so no name can open markup. */
void xml_escape(struct strbuf *sb, const char *s, size_t n);

/* What a flame graph's widths count. */
enum { FLAME_SAMPLES = 0, FLAME_NS = 1, FLAME_BYTES = 2 };

/* Writes ss as a flame graph SVG (by_ns: FLAME_SAMPLES, FLAME_NS or FLAME_BYTES).
 * 0, or 1 when there is nothing to draw. */
int flamegraph_write(const struct stack_set *ss, int by_ns, const char *title, FILE *out);

#endif
