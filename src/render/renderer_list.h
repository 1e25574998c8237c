/* renderer_list: the registry of the files a run directory gets from every
 * report (`sonde run`, `sonde report DIR`), one line each: RENDERER(name) for
 * the `const struct renderer render_name` (render.h) its file defines, whose
 * `file` is the name it writes. Included by renderers.c only; they are
 * written in this order, report.json last: it lists the files the others
 * wrote. */
RENDERER(output_log)
RENDERER(markdown)
RENDERER(folded)
RENDERER(flamegraph)
RENDERER(callgraph)
RENDERER(offcpu)
RENDERER(memory)
RENDERER(trace)
RENDERER(html)
RENDERER(json)
