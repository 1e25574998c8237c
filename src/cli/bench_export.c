/* bench_export: sonde bench's results as JSON (--json) and as a Markdown
 * table (--markdown). */
#include "bench.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static json_t *summary_json(const struct stats_summary *s)
{
	return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "n", (json_int_t)s->n,
			 "median", s->median, "mean", s->mean, "stddev", s->stddev, "cov", s->cov,
			 "min", s->min, "max", s->max, "mad", s->mad, "outliers",
			 (json_int_t)s->outliers);
}

static json_t *variant_json(const struct bench_variant *a, const struct bench_variant *v)
{
	json_t *runs = json_array();
	for (size_t i = 0; i < v->n_runs; i++) {
		const struct bench_sample *s = &v->runs[i];
		json_t *run = json_pack("{s:f, s:f, s:f, s:f, s:i}", "wall_s", s->wall_s, "user_s",
					s->user_s, "sys_s", s->sys_s, "max_rss_kib", s->max_rss_kib,
					"exit_status", s->exit_status);
		if (!isnan(s->metric))
			json_object_set_new(run, "metric", json_real(s->metric));
		json_array_append_new(runs, run);
	}
	json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o}", "label", v->label, "command", v->command,
			      "summary", summary_json(&v->summary), "wall_s",
			      summary_json(&v->wall), "runs", runs);
	if (v != a && v->compared) {
		struct strbuf sb = STRBUF_INIT;
		bench_verdict(a, v, &sb);
		json_object_set_new(o, "versus_a",
				    json_pack("{s:f, s:f, s:f, s:f, s:f, s:b, s:b, s:s}", "ratio",
					      v->ratio.point, "ci95_lo", v->ratio.lo, "ci95_hi",
					      v->ratio.hi, "mann_whitney_u", v->test.u, "p",
					      v->test.p, "p_exact", v->test.exact, "significant",
					      v->significant, "verdict", sb.buf));
		strbuf_release(&sb);
	}
	return o;
}

int bench_write_json(const struct bench_result *r, const char *path, struct strbuf *err)
{
	json_t *rows = json_array();
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct bench_row *row = &r->rows[i];
		json_t *variants = json_array();
		for (size_t k = 0; k < row->n_variants; k++)
			json_array_append_new(variants,
					      variant_json(&row->variants[0], &row->variants[k]));
		json_t *jr = json_pack("{s:o}", "variants", variants);
		if (row->param_value)
			json_object_set_new(jr, "param_value", json_string(row->param_value));
		json_array_append_new(rows, jr);
	}
	json_t *root = json_pack("{s:I, s:I, s:s, s:o}", "runs", (json_int_t)r->runs, "warmup",
				 (json_int_t)r->warmup, "compared",
				 r->metric_pattern ? r->metric_pattern : "wall_s", "rows", rows);
	if (r->param_name)
		json_object_set_new(root, "param", json_string(r->param_name));
	int rc = json_dump_file(root, path, JSON_INDENT(2)) ? -1 : 0;
	if (rc)
		strbuf_addf(err, "cannot write %s: %s", path, strerror(errno));
	json_decref(root);
	return rc;
}

/* Markdown table cells: a '|' in a command would end the cell. */
static void md_cell(FILE *f, const char *s)
{
	for (; *s; s++)
		fputs(*s == '|' ? "\\|" : (char[]){ *s, 0 }, f);
}

int bench_write_markdown(const struct bench_result *r, const char *path, struct strbuf *err)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		strbuf_addf(err, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	int metric = r->metric_pattern != NULL;
	double k = metric ? 1 : 1000;
	fprintf(f,
		"| %s | variant | command | median%s | mean | stddev | CoV | min | max | "
		"outliers | versus A |\n",
		r->param_name ? r->param_name : "", metric ? "" : " (ms)");
	fputs("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n", f);
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct bench_row *row = &r->rows[i];
		for (size_t j = 0; j < row->n_variants; j++) {
			const struct bench_variant *v = &row->variants[j];
			const struct stats_summary *s = &v->summary;
			fputs("| ", f);
			md_cell(f, row->param_value ? row->param_value : "");
			fprintf(f, " | %s | `", v->label);
			md_cell(f, v->command);
			fprintf(f, "` | %.4g | %.4g | %.3g | %.1f%% | %.4g | %.4g | %zu | ",
				s->median * k, s->mean * k, s->stddev * k, s->cov * 100, s->min * k,
				s->max * k, s->outliers);
			if (j) {
				struct strbuf sb = STRBUF_INIT;
				bench_verdict(&row->variants[0], v, &sb);
				md_cell(f, sb.buf);
				strbuf_release(&sb);
			}
			fputs(" |\n", f);
		}
	}
	int rc = fclose(f) ? -1 : 0;
	if (rc)
		strbuf_addf(err, "cannot write %s: %s", path, strerror(errno));
	return rc;
}
