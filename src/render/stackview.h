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

/* Who colours the frames instead of the default hues (a differential flame
 * graph): fn writes an "rgb(r,g,b)" colour of the function func (an index into
 * ss->funcs) into color (cap bytes) and may append plain text to note, shown
 * in the frame's tooltip after its count and share. */
struct flame_paint {
	void (*fn)(void *arg, size_t func, char *color, size_t cap, struct strbuf *note);
	void *arg;
};

/* flamegraph_write, with the frames coloured by paint (NULL: the default). */
int flamegraph_write_painted(const struct stack_set *ss, int by_ns, const char *title,
			     const struct flame_paint *paint, FILE *out);

#endif
