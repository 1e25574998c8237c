/* terminal: the few lines printed after a run, pointing to the full report. */
#include "render.h"

#include <math.h>

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

void render_terminal(const struct render_ctx *ctx, FILE *out)
{
	json_t *r = ctx->report, *t = json_object_get(r, "target");
	json_t *cpu = json_object_get(r, "cpu"), *mem = json_object_get(r, "memory");
	char a[32], b[32];
	fmt_seconds(a, sizeof(a), num(t, "wall_s") >= 0 ? num(t, "wall_s") : 0);
	json_t *code = json_object_get(t, "exit_code");
	fprintf(out, "\nsonde: exit code %lld after %s, %zu process%s",
		json_is_integer(code) ? (long long)json_integer_value(code) : -1LL, a,
		json_array_size(json_object_get(t, "pids")),
		json_array_size(json_object_get(t, "pids")) == 1 ? "" : "es");
	if (json_is_true(json_object_get(t, "interrupted")))
		fputs(" (interrupted)", out);
	fputc('\n', out);
	if (cpu) {
		fmt_seconds(a, sizeof(a), num(cpu, "user_s"));
		fmt_seconds(b, sizeof(b), num(cpu, "sys_s"));
		fprintf(out, "  cpu     user %s, system %s, CPU/wall %.2f\n", a, b,
			num(cpu, "utilization"));
	}
	if (mem && !isnan(num(mem, "peak_rss_bytes"))) {
		fmt_bytes(a, sizeof(a), num(mem, "peak_rss_bytes"));
		fmt_seconds(b, sizeof(b), isnan(num(mem, "peak_rss_at_s")) ? 0 : num(mem, "peak_rss_at_s"));
		fprintf(out, "  memory  peak RSS %s at %s\n", a, b);
	}
	json_t *heap = json_object_get(mem, "heap");
	if (heap) {
		char c[32];
		fmt_bytes(a, sizeof(a), num(heap, "peak_bytes"));
		fmt_seconds(b, sizeof(b), num(heap, "peak_at_s"));
		fmt_bytes(c, sizeof(c), num(heap, "leaked_bytes"));
		fprintf(out, "  heap    peak %s at %s, %s leaked at exit, %.0f temporary allocations%s\n",
			a, b, c, num(heap, "temporary_allocations"),
			json_is_true(json_object_get(heap, "estimated")) ? " (sampled estimates)" : "");
	}
	json_t *fs = json_object_get(r, "findings");
	size_t i;
	json_t *f;
	json_array_foreach(fs, i, f) {
		fprintf(out, "  %zu. %s\n     next: %s\n", i + 1,
			json_string_value(json_object_get(f, "title")),
			json_string_value(json_object_get(f, "next_step")));
	}
	if (!json_array_size(fs))
		fputs("  no finding stands out\n", out);
	fprintf(out, "  report: %s/report.md\n", ctx->dir);
}
