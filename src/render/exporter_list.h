/* exporter_list: the registry of `sonde export` formats, one line each:
 * EXPORTER(name) for the `const struct exporter export_name` (render.h) its
 * renderer's file defines. Included by exporters.c only; `--format help`
 * lists them in this order. */
EXPORTER(folded)
EXPORTER(svg)
EXPORTER(offcpu_svg)
EXPORTER(memory_svg)
EXPORTER(trace)
EXPORTER(perfetto)
EXPORTER(pprof)
EXPORTER(speedscope)
EXPORTER(callgraph)
EXPORTER(dot)
