/* exporters: the table of formats `sonde export` writes, chosen by name. */
#include "render.h"

#include <string.h>

extern const struct renderer render_folded;
extern const struct renderer render_flamegraph;
extern const struct renderer render_offcpu;
extern const struct renderer render_memory;
extern const struct renderer render_trace;
extern const struct renderer render_perfetto;
extern const struct renderer render_pprof;
extern const struct renderer render_speedscope;
extern const struct renderer render_callgraph;
extern const struct renderer render_callgraph_dot;

const struct exporter export_table[] = {
	{ .name = "folded",
	  .description = "folded stacks (flamegraph.pl, speedscope, inferno): one line a call path",
	  .renderer = &render_folded },
	{ .name = "svg",
	  .description = "on-CPU flame graph, an interactive SVG for a browser",
	  .renderer = &render_flamegraph },
	{ .name = "offcpu-svg",
	  .description = "off-CPU flame graph: where threads waited, by blocked time",
	  .renderer = &render_offcpu },
	{ .name = "memory-svg",
	  .description = "memory flame graph: who allocated the heap's peak (--memory runs)",
	  .renderer = &render_memory },
	{ .name = "trace",
	  .description = "Chrome trace event JSON for ui.perfetto.dev or chrome://tracing; "
			 "also called chrome",
	  .renderer = &render_trace,
	  .needs_report = 1,
	  .alias = "chrome" },
	{ .name = "perfetto",
	  .description = "the same timeline in Perfetto's native protobuf (ui.perfetto.dev, "
			 "trace_processor): smaller and faster to open than the JSON",
	  .renderer = &render_perfetto,
	  .needs_report = 1 },
	{ .name = "pprof",
	  .description = "gzip'd pprof profile.proto (go tool pprof, Pyroscope): stacks per thread",
	  .renderer = &render_pprof },
	{ .name = "speedscope",
	  .description = "speedscope JSON (speedscope.app): one sampled profile per thread",
	  .renderer = &render_speedscope },
	{ .name = "callgraph",
	  .description = "call graph SVG (Graphviz's dot lays it out): functions with total and "
			 "self share, split by caller where their cost differs",
	  .renderer = &render_callgraph },
	{ .name = "dot",
	  .description = "the call graph in Graphviz's DOT language, to lay out or edit",
	  .renderer = &render_callgraph_dot },
	{ .name = NULL },
};

const struct exporter *exporter_find(const char *name)
{
	for (const struct exporter *e = export_table; e->name; e++)
		if (!strcmp(e->name, name) || (e->alias && !strcmp(e->alias, name)))
			return e;
	return NULL;
}
