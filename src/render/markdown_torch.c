/* markdown_torch: report.md's PyTorch section (the report's `torch` key,
 * docs/python.md#pytorch-on-the-cpu). */
#include "mdcell.h"

void md_section_torch(FILE *out, json_t *report)
{
	json_t *t = json_object_get(report, "torch"), *o;
	json_t *ops = json_object_get(t, "operators");
	json_t *dl = json_object_get(t, "dataloader"), *intra = json_object_get(t, "intra_op");
	size_t i;
	if (!t)
		return;
	fputs("## PyTorch\n\n", out);
	if (json_array_size(ops)) {
		fputs("Torch operators by the program's line that called them (on-CPU samples; "
		      "the outermost operator under the line).\n\n"
		      "| operator | called at | function | CPU | share | samples |\n"
		      "|---|---|---|---|---|---|\n",
		      out);
		json_array_foreach(ops, i, o)
		{
			md_fill(out, o, "| {text:operator} | {text:file}");
			fprintf(out, ":%.0f |", md_num(o, "line"));
			md_fill(
			    out, o,
			    " {text:function} | {s:cpu_s} | {pct:share_pct} | {int:samples} |\n");
		}
		fputc('\n', out);
	}
	if (dl) {
		fputs("**DataLoader**: the loop at ", out);
		md_code(out, md_str(dl, "loop"));
		fprintf(out,
			" waited %.2f s (%.0f%% of its time) for batches; %.0f worker "
			"process(es) ran the program's code.\n\n",
			md_num(dl, "wait_s"), md_num(dl, "wait_share_pct"), md_num(dl, "workers"));
	}
	if (intra) {
		fprintf(out,
			"**Intra-op threads**: process %.0f ran %.0f OpenMP worker threads "
			"for %.0f CPUs; callers waited %.2f s in the OpenMP runtime",
			md_num(intra, "pid"), md_num(intra, "openmp_threads"),
			md_num(intra, "cpus"), md_num(intra, "barrier_wait_s"));
		if (*md_str(intra, "set_num_threads_at")) {
			fputs("; torch.set_num_threads at ", out);
			md_code(out, md_str(intra, "set_num_threads_at"));
		}
		fputs(".\n\n", out);
	}
}
