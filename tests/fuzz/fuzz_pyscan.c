/* fuzz_pyscan: `sonde instrument` reads the user's Python files, any bytes
 * (unclosed strings and brackets, f-strings nested deep, NUL bytes, lone CRs,
 * a def on the last byte): pyscan_defs() must stay inside the buffer, and
 * for any def it finds, the lines pyedit_instrument() inserts must come out
 * again through pyedit_strip() leaving exactly the input.
 * sources: src/util/pyscan.c src/util/pyedit.c src/util/strbuf.c
 * seed: mkdir -p "$CORPUS" && python3 -c 'import os, shutil, json.decoder, textwrap; [shutil.copy(m.__file__, os.environ["CORPUS"]) for m in (json.decoder, textwrap)]' || true
 * max_len: 16384 */
#include "util/pyedit.h"
#include "util/pyscan.h"
#include "util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* A copy of exactly n bytes: the scanner must not need a terminator. */
	char *text = malloc(n ? n : 1);
	memcpy(text, data, n);
	struct pyscan scan = PYSCAN_INIT;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, back = STRBUF_INIT;
	struct pyedit_lines lines = PYEDIT_LINES_INIT;
	struct pyedit_target t[4];
	size_t nt = 0, bad;
	if (pyscan_defs(text, n, &scan, &err) == 0)
		for (size_t i = 0; i < scan.n && nt < 4; i++) {
			const struct pyscan_def *d = &scan.defs[i];
			if (!d->qualname[0] || d->line < 1 || d->top_line > d->line ||
			    d->line_off > n || d->top_off > d->line_off)
				abort();
			if (d->kind == 'd')
				t[nt++] =
				    (struct pyedit_target){ d->qualname, "fuzz\x01\xc3\xa9\"" };
		}
	if (nt && pyedit_instrument(text, n, t, nt, &out, &lines, &bad, &err) == PYEDIT_OK) {
		if (pyedit_strip(out.buf, out.len, lines.v, lines.n, &back, &err) != PYEDIT_OK ||
		    back.len != n || memcmp(back.buf, text, n))
			abort();
	}
	pyedit_lines_release(&lines);
	pyscan_release(&scan);
	strbuf_release(&err);
	strbuf_release(&out);
	strbuf_release(&back);
	free(text);
	return 0;
}
