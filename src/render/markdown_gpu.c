/* markdown_gpu: report.md's GPU and interconnect sections (the report's
 * `gpu` and `interconnect` keys, docs/gpu.md). */
#include "mdcell.h"

#include <math.h>
#include <string.h>

static void gpu_devices(FILE *out, json_t *gpu)
{
	json_t *devs = json_object_get(gpu, "devices"), *o;
	size_t i;
	if (!json_array_size(devs))
		return;
	fputs("| device | name | memory | SM busy (mean) | memory used (peak) | "
	      "power (mean) | SM clock (max) | throttled |\n|---|---|---|---|---|---|---|---|\n",
	      out);
	json_array_foreach(devs, i, o)
	{
		fprintf(out, "| %.0f | ", md_num(o, "device"));
		md_cell(out, md_str(o, "name"));
		fputs(" | ", out);
		md_cell_bytes(out, md_num(o, "mem_total_bytes"));
		fputs(" | ", out);
		md_cell_pct(out, md_num(o, "sm_util_mean_pct"));
		fputs(" | ", out);
		md_cell_bytes(out, md_num(o, "mem_used_peak_bytes"));
		fputs(" | ", out);
		md_cell_num(out, md_num(o, "power_mean_w"), "%.0f W", 1);
		fputs(" | ", out);
		md_cell_num(out, md_num(o, "sm_clock_max_mhz"), "%.0f MHz", 1);
		fputs(" | ", out);
		md_cell_pct(out, md_num(o, "throttled_pct"));
		fputs(" |\n", out);
	}
	fputc('\n', out);
}

static void gpu_compute(FILE *out, json_t *gpu)
{
	json_t *o;
	size_t i;
	json_array_foreach(json_object_get(gpu, "compute"), i, o)
	{
		fprintf(out, "GPU %.0f ran %.0f kernels (", md_num(o, "device"),
			md_num(o, "kernels"));
		md_cell_s(out, md_num(o, "kernel_s"));
		fprintf(out, ", %.1f us mean) and %.0f copies (", md_num(o, "mean_kernel_us"),
			md_num(o, "copies"));
		md_cell_s(out, md_num(o, "copy_s"));
		fputs("); busy ", out);
		md_cell_pct(out, md_num(o, "busy_pct"));
		fputs(" of ", out);
		md_cell_s(out, md_num(o, "window_s"));
		fprintf(out, ", idle %.0f times for ", md_num(o, "idle_gaps"));
		md_cell_s(out, md_num(o, "idle_s"));
		if (md_num(o, "copies") > 0) {
			fputs("; copying alone (no kernel running) ", out);
			md_cell_s(out, md_num(o, "copy_exposed_s"));
		}
		fputs(".\n\n", out);
	}
	json_t *l = json_object_get(gpu, "launches"), *s = json_object_get(gpu, "syncs");
	if (l && s && (md_num(l, "calls") > 0 || md_num(s, "calls") > 0)) {
		fprintf(out, "The host made %.0f kernel launches (", md_num(l, "calls"));
		md_cell_s(out, md_num(l, "seconds"));
		fprintf(out, " in the calls) and waited for the GPU %.0f times (",
			md_num(s, "calls"));
		md_cell_s(out, md_num(s, "seconds"));
		fputs(").\n\n", out);
	}
	json_t *top = json_object_get(gpu, "top_kernels");
	if (json_array_size(top)) {
		fputs("| kernel | count | total | mean | share |\n|---|---|---|---|---|\n", out);
		json_array_foreach(top, i, o)
		{
			fputs("| ", out);
			md_cell(out, md_str(o, "name"));
			fprintf(out, " | %.0f | ", md_num(o, "count"));
			md_cell_s(out, md_num(o, "total_s"));
			fputs(" | ", out);
			md_cell_num(out, md_num(o, "mean_us"), "%.1f us", 1);
			fputs(" | ", out);
			md_cell_pct(out, md_num(o, "share_pct"));
			fputs(" |\n", out);
		}
		fputc('\n', out);
	}
	json_array_foreach(json_object_get(gpu, "memory"), i, o)
	{
		fprintf(out, "GPU %.0f memory allocated through CUDA (%.0f allocations): peak ",
			md_num(o, "device"), md_num(o, "allocations"));
		md_cell_bytes(out, md_num(o, "peak_bytes"));
		fputs(", at the end ", out);
		md_cell_bytes(out, md_num(o, "end_bytes"));
		if (json_array_size(json_object_get(gpu, "memory")) > 1)
			fprintf(out, "; %.2fx the devices' mean peak", md_num(o, "peak_vs_mean"));
		fputs(".\n\n", out);
	}
	json_array_foreach(json_object_get(gpu, "processes"), i, o)
	{
		const char *st = md_str(o, "status");
		if (*st && strcmp(st, "ok")) {
			fprintf(out, "Process %.0f: ", md_num(o, "pid"));
			md_text(out, st);
			fputs("\n\n", out);
		}
	}
}

/* A range's GPU time (kernels and copies launched inside it) and its share. */
static void nvtx_gpu_cell(FILE *out, json_t *o)
{
	fputs(" | ", out);
	md_cell_s(out, md_num(o, "gpu_kernel_s") + md_num(o, "gpu_copy_s"));
	fprintf(out, " (%.0f kernel%s, ", md_num(o, "kernels"),
		md_num(o, "kernels") == 1 ? "" : "s");
	md_cell_pct(out, md_num(o, "gpu_pct"));
	fputs(")", out);
}

/* Where the run's GPU time was launched: inside the ranges, outside them,
 * or from calls the agent did not record. */
static void nvtx_launches(FILE *out, json_t *gpu)
{
	json_t *l = json_object_get(gpu, "nvtx_launches");
	static const char *const parts[][2] = {{"inside", "inside the ranges"},
					       {"outside", "outside them"},
					       {"unattributed", "from calls not recorded"}};
	if (isnan(md_num(json_object_get(l, "inside"), "gpu_pct"))) /* no GPU time at all */
		return;
	fputs("The run's GPU time (kernels and copies) was launched ", out);
	for (size_t i = 0; i < 3; i++) {
		json_t *o = json_object_get(l, parts[i][0]);
		fputs(i ? (i == 2 ? " and " : ", ") : "", out);
		md_cell_pct(out, md_num(o, "gpu_pct"));
		fprintf(out, " %s", parts[i][1]);
	}
	fputs(".\n\n", out);
}

/* The program's NVTX ranges, the most time first; with the cuda probe's
 * launches, the GPU time launched inside each. */
static void gpu_nvtx(FILE *out, json_t *gpu)
{
	json_t *ranges = json_object_get(gpu, "nvtx_ranges"), *o;
	size_t i;
	if (!json_array_size(ranges))
		return;
	int with_gpu = json_object_get(json_array_get(ranges, 0), "gpu_kernel_s") != NULL;
	fprintf(out,
		"NVTX ranges (the program's own annotations):\n\n| range | domain | count | "
		"total | mean | longest | share of run |%s\n|---|---|---|---|---|---|---|%s\n",
		with_gpu ? " GPU launched inside |" : "", with_gpu ? "---|" : "");
	json_array_foreach(ranges, i, o)
	{
		fputs("| ", out);
		md_cell(out, md_str(o, "name"));
		if (md_num(o, "open") > 0)
			fprintf(out, " (%.0f open at exit)", md_num(o, "open"));
		fputs(" | ", out);
		md_cell(out, *md_str(o, "domain") ? md_str(o, "domain") : "default");
		fprintf(out, " | %.0f | ", md_num(o, "count"));
		md_cell_s(out, md_num(o, "total_s"));
		fputs(" | ", out);
		md_cell_s(out, md_num(o, "mean_s"));
		fputs(" | ", out);
		md_cell_s(out, md_num(o, "max_s"));
		fputs(" | ", out);
		md_cell_pct(out, md_num(o, "wall_pct"));
		if (with_gpu)
			nvtx_gpu_cell(out, o);
		fputs(" |\n", out);
	}
	fputc('\n', out);
	nvtx_launches(out, gpu);
}

void md_section_gpu(FILE *out, json_t *report)
{
	json_t *gpu = json_object_get(report, "gpu");
	if (json_is_object(gpu)) {
		fputs("## GPU\n\n", out);
		gpu_devices(out, gpu);
		gpu_compute(out, gpu);
		gpu_nvtx(out, gpu);
	}
	json_t *copies = json_object_get(json_object_get(report, "interconnect"), "copies"), *o;
	size_t i;
	if (!json_array_size(copies))
		return;
	fputs("## Interconnect\n\n| copy | count | volume | time | achieved | "
	      "pageable | under 64 KiB | median size |\n|---|---|---|---|---|---|---|---|\n",
	      out);
	json_array_foreach(copies, i, o)
	{
		fputs("| ", out);
		md_cell(out, md_str(o, "kind"));
		fprintf(out, " | %.0f | ", md_num(o, "count"));
		md_cell_bytes(out, md_num(o, "bytes"));
		fputs(" | ", out);
		md_cell_s(out, md_num(o, "seconds"));
		fputs(" | ", out);
		md_cell_num(out, md_num(o, "achieved_gb_per_s"), "%.2f GB/s", 1);
		fprintf(out, " | %.0f | %.0f | ", md_num(o, "pageable"), md_num(o, "small"));
		md_cell_bytes(out, md_num(o, "median_bytes"));
		fputs(" |\n", out);
	}
	fputc('\n', out);
	json_t *links = json_object_get(json_object_get(report, "interconnect"), "links");
	if (!json_array_size(links))
		return;
	fputs("Copies of 1 MiB or more against the link's peak:\n\n| copy | GPU | link | peak | "
	      "copies | volume | achieved | of peak |\n|---|---|---|---|---|---|---|---|\n",
	      out);
	json_array_foreach(links, i, o)
	{
		fputs("| ", out);
		md_cell(out, md_str(o, "kind"));
		fprintf(out, " | %.0f", md_num(o, "device"));
		if (!isnan(md_num(o, "peer")))
			fprintf(out, " to %.0f", md_num(o, "peer"));
		fputs(" | ", out);
		md_cell(out, *md_str(o, "link") ? md_str(o, "link") : "unknown");
		if (!strcmp(md_str(o, "peak_source"), "compute capability"))
			fputs(" (assumed)", out);
		fputs(" | ", out);
		md_cell_num(out, md_num(o, "peak_gb_per_s"), "%.1f GB/s", 1);
		fprintf(out, " | %.0f | ", md_num(o, "copies"));
		md_cell_bytes(out, md_num(o, "bytes"));
		fputs(" | ", out);
		md_cell_num(out, md_num(o, "achieved_gb_per_s"), "%.2f GB/s", 1);
		fputs(" | ", out);
		md_cell_pct(out, md_num(o, "achieved_pct"));
		fputs(" |\n", out);
	}
	fputc('\n', out);
}
