/* The GPU analyses (src/analysis/gpu*.c) on synthesised cuda-probe records:
 * known timelines give the known busy and idle time, known copies the known
 * bandwidth table, and the planted problems their findings at the Python
 * line the host was on. No GPU is needed: the tables are written as the cuda
 * probe writes them (docs/gpu.md). */
#include "check.h"
#include "gpu_fixture.h"
#include "probes/cuda_host.h"
#include "render/mdcell.h"

#define MS 1000000LL
#define US 1000LL

/* A Python stack <module> -> train (train.py:line_train) -> leaf
 * (train.py:leaf_fn:leaf_line), sampled on tid at t_ns. */
static void py_sample(struct fixture *fx, int tid, int64_t t_ns, int line_train,
		      const char *leaf_fn, int leaf_line)
{
	struct stack_writer *sw = recorder_stacks(fx->rec);
	/* "torch:NAME" runs an installed package's Python code under leaf_fn. */
	const char *lib = leaf_fn && !strncmp(leaf_fn, "torch:", 6) ? leaf_fn + 6 : NULL;
	struct frame_info fr[4] = {
	    {"<module>", "/home/u/train.py", 90, "train", "python"},
	    {"train", "/home/u/train.py", line_train, "train", "python"},
	    {lib ? "load_batch" : leaf_fn, "/home/u/train.py", leaf_line, "train", "python"},
	    {lib, "/opt/venv/lib/python3.12/site-packages/torch/nn/init.py", 575, "torch.nn.init",
	     "python"},
	};
	int64_t ids[4];
	size_t n = lib ? 4 : leaf_fn ? 3 : 2;
	for (size_t i = 0; i < n; i++)
		ids[i] = stack_frame(sw, &fr[i]);
	struct sample_info si = {.t_ns = t_ns,
				 .pid = 100,
				 .tid = tid,
				 .node = stack_intern(sw, ids, n),
				 .source = "python",
				 .weight = 1,
				 .on_cpu = 1,
				 .gil = 1};
	stack_sample(sw, &si);
}

static json_t *finding_with(json_t *r, const char *id)
{
	json_t *f;
	size_t i;
	json_array_foreach(json_object_get(r, "findings"), i, f)
	{
		if (!strcmp(json_string_value(json_object_get(f, "id")), id))
			return f;
		json_t *a;
		size_t k;
		json_array_foreach(
		    json_object_get(f, "also"), k,
		    a) if (!strcmp(json_string_value(json_object_get(a, "id")), id)) return f;
	}
	return NULL;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* 5000 kernels of 10 us, one every 100 us from 1 s, each launched from
 * train.py:per_item:17 by tid 200; before them, 20 pageable and 20 pinned
 * 8 MiB copies with the host in train.py:load_batch:25 between them. */
TEST(launch_bound_and_copies,
     "a launch-bound timeline gives its busy and idle time, the copy table "
     "and its findings at the Python lines")
{
	struct fixture fx;
	fixture_open(&fx, 2000 * MS);
	sql(&fx, "%s", gpu_tables);
	for (int i = 0; i < 5000; i++) {
		int64_t t = 1000 * MS + i * 100 * US;
		sql(&fx,
		    "INSERT INTO gpu_kernels VALUES(100, 0, 7, %d, %lld, %lld, "
		    "'_Z6addoneIfEvPT_i', 1, 1, 1, 32, 1, 1, 16, 0, 0)",
		    i + 1, (long long)t, (long long)(t + 10 * US));
		sql(&fx,
		    "INSERT INTO gpu_api VALUES(100, 200, %d, %lld, %lld, 0, 'cudaLaunchKernel')",
		    i + 1, (long long)(t - 60 * US), (long long)(t - 55 * US));
	}
	/* Copies before the kernels, on device 0 too: HtoD, 8 MiB each. */
	for (int i = 0; i < 40; i++) {
		int pageable = i < 20;
		int64_t t = 100 * MS + i * 10 * MS, dur = pageable ? 4 * MS : 1 * MS;
		sql(&fx,
		    "INSERT INTO gpu_copies VALUES(100, 0, 7, %d, %lld, %lld, 8388608, 0, -1, 0, "
		    "'HtoD', '%s', 'device')",
		    100000 + i, (long long)t, (long long)(t + dur),
		    pageable ? "pageable" : "pinned");
		sql(&fx,
		    "INSERT INTO gpu_api VALUES(100, 200, %d, %lld, %lld, 0, 'cudaMemcpyAsync')",
		    100000 + i, (long long)t, (long long)(t + dur));
	}
	for (int i = 0; i < 40; i++) /* 100 Hz samples while the kernels ran */
		py_sample(&fx, 200, 1000 * MS + i * 10 * MS + 3050 * US, 40, "per_item", 17);
	/* Between the copies the host loads the next batch, mostly
	 * inside torch's code: the location is the program's line that called it. */
	for (int i = 0; i < 40; i++)
		py_sample(&fx, 200, 100 * MS + i * 10 * MS + 7 * MS, 24,
			  i % 3 ? "torch:kaiming_uniform_" : "load_batch", 25);
	for (int i = 0; i < 20; i++) /* and while the pageable copies ran */
		py_sample(&fx, 200, 100 * MS + i * 10 * MS + 2 * MS, 33, NULL, 0);
	json_t *r = fixture_report(&fx);
	REQUIRE(r != NULL);
	json_t *c = json_array_get(json_object_get(json_object_get(r, "gpu"), "compute"), 0);
	REQUIRE(c != NULL);
	CHECK(fixture_num(c, "kernels") == 5000);
	/* Busy: 40 copies (20 x 4 ms + 20 x 1 ms) and 5000 x 10 us = 0.15 s. */
	CHECK(fabs(fixture_num(c, "busy_s") - 0.150) < 1e-6);
	/* Idle: the 39 gaps between copies (6 and 9 ms), the one before the
	 * kernels, and 4999 gaps of 90 us between kernels. */
	double idle = 20 * 0.006 + 19 * 0.009 + (1.0 - 0.491) + 4999 * 90e-6;
	CHECK(fabs(fixture_num(c, "idle_s") - idle) < 1e-6);
	json_t *k = json_array_get(json_object_get(json_object_get(r, "gpu"), "top_kernels"), 0);
	REQUIRE(k != NULL);
	CHECK(!strcmp(str(k, "name"), "void addone<float>(float*, int)") ||
	      !strcmp(str(k, "name"), "_Z6addoneIfEvPT_i")); /* no demangler here */
	CHECK(fabs(fixture_num(k, "mean_us") - 10.0) < 1e-6);

	json_t *cp =
	    json_array_get(json_object_get(json_object_get(r, "interconnect"), "copies"), 0);
	REQUIRE(cp != NULL);
	CHECK(!strcmp(str(cp, "kind"), "HtoD"));
	CHECK(fixture_num(cp, "count") == 40 && fixture_num(cp, "pageable") == 20);
	CHECK(fixture_num(cp, "bytes") == 40.0 * 8388608);
	CHECK(fabs(fixture_num(cp, "achieved_gb_per_s") - 40.0 * 8388608 / 0.1 / 1e9) < 1e-6);

	json_t *lb = finding_with(r, "gpu.launch_bound");
	REQUIRE(lb != NULL);
	CHECK(!strcmp(str(lb, "location"), "/home/u/train.py:per_item:17"));
	json_t *pg = finding_with(r, "interconnect.pageable_copies");
	REQUIRE(pg != NULL);
	CHECK(!strcmp(str(pg, "location"), "/home/u/train.py:train:33"));
	CHECK(strstr(str(pg, "evidence"), "8.39 GB/s") != NULL); /* the pinned copies' speed */
	json_t *hb = finding_with(r, "gpu.host_bound");
	REQUIRE(hb != NULL);
	CHECK(!strcmp(str(hb, "location"), "/home/u/train.py:load_batch:25"));
	CHECK(finding_with(r, "gpu.sync") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

/* 200 steps: a 2 ms kernel, a wait for it at train.py:train:52 (a .item()),
 * then 3 ms of the host's own work before the next launch. */
TEST(sync, "waits that drain the GPU are one gpu.sync finding at the waiting line")
{
	struct fixture fx;
	fixture_open(&fx, 1100 * MS);
	sql(&fx, "%s", gpu_tables);
	for (int i = 0; i < 200; i++) {
		int64_t t = 50 * MS + i * 5 * MS;
		sql(&fx,
		    "INSERT INTO gpu_kernels VALUES(100, 0, 7, %d, %lld, %lld, 'step', 1, 1, 1, "
		    "256, 1, 1, 32, 0, 0)",
		    i + 1, (long long)t, (long long)(t + 2 * MS));
		sql(&fx,
		    "INSERT INTO gpu_api VALUES(100, 300, %d, %lld, %lld, 0, 'cudaLaunchKernel')",
		    i + 1, (long long)(t - 20 * US), (long long)(t - 15 * US));
		sql(&fx,
		    "INSERT INTO gpu_api VALUES(100, 300, %d, %lld, %lld, 0, "
		    "'cudaStreamSynchronize')",
		    1000 + i, (long long)t, (long long)(t + 2 * MS + 20 * US));
		py_sample(&fx, 300, t + 1 * MS, 52, NULL, 0);
	}
	json_t *r = fixture_report(&fx);
	REQUIRE(r != NULL);
	json_t *s = finding_with(r, "gpu.sync");
	REQUIRE(s != NULL);
	CHECK(!strcmp(str(s, "location"), "/home/u/train.py:train:52"));
	/* Of the 199 gaps of 3 ms after the waits, the waits' own 2.02 ms are at
	 * stake (what the host could have done ahead); the rest, 0.98 ms each,
	 * is the host's other work, too little for a finding of its own. */
	CHECK(fabs(fixture_num(json_object_get(s, "impact"), "seconds") - 199 * 2.02e-3) < 1e-6);
	json_t *syncs = json_object_get(json_object_get(r, "gpu"), "syncs");
	CHECK(fixture_num(syncs, "calls") == 200);
	/* The idle time is the waits' own: no second finding for it. */
	CHECK(finding_with(r, "gpu.host_bound") == NULL &&
	      finding_with(r, "gpu.launch_bound") == NULL);
	json_decref(r);
	fixture_close(&fx);
}

/* A recording without any GPU table: no gpu section, the probes' reason. */
TEST(no_gpu, "without GPU tables the report says why in one line")
{
	struct fixture fx;
	fixture_open(&fx, 100 * MS);
	record_probe(fx.rec, "cuda", "unavailable",
		     "no NVIDIA driver here (libcuda.so.1 not found): the GPU side is not "
		     "recorded");
	json_t *r = fixture_report(&fx);
	REQUIRE(r != NULL);
	CHECK(json_object_get(r, "gpu") == NULL);
	CHECK(strstr(str(json_object_get(r, "not_measured"), "gpu"), "no NVIDIA driver") != NULL);
	json_decref(r);
	fixture_close(&fx);
}

/* count copies of kind on device (peer for PtoP) of `bytes` each taking
 * dur_ns, one every 10 ms from t0_ns, from pinned memory, each called by
 * tid 400 with a Python sample at train.py:train:line during it. */
static void copies_add(struct fixture *fx, const char *kind, int device, int peer, int count,
		       int64_t bytes, int64_t t0_ns, int64_t dur_ns, int line, int corr0)
{
	for (int i = 0; i < count; i++) {
		int64_t t = t0_ns + i * 10 * MS;
		int host = !strcmp(kind, "HtoD") || !strcmp(kind, "DtoH");
		sql(fx,
		    "INSERT INTO gpu_copies VALUES(100, %d, 7, %d, %lld, %lld, %lld, 1, %d, %d, "
		    "'%s', '%s', '%s')",
		    device, corr0 + i, (long long)t, (long long)(t + dur_ns), (long long)bytes,
		    host ? -1 : device, host ? device : peer, kind,
		    !strcmp(kind, "DtoH") ? "device"
		    : host		  ? "pinned"
					  : "device",
		    !strcmp(kind, "DtoH") ? "pinned" : "device");
		sql(fx,
		    "INSERT INTO gpu_api VALUES(100, 400, %d, %lld, %lld, 0, 'cudaMemcpyAsync')",
		    corr0 + i, (long long)t, (long long)(t + dur_ns));
		py_sample(fx, 400, t + dur_ns / 2, line, NULL, 0);
	}
}

static json_t *link_row(json_t *r, const char *kind, int device)
{
	json_t *o;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(r, "interconnect"), "links"), i, o)
	{
		if (!strcmp(str(o, "kind"), kind) && fixture_num(o, "device") == device)
			return o;
	}
	return NULL;
}

/* GPU 0 on PCIe 4.0 x16 (NVML) gets 20 HtoD copies of 8 MiB in 1 ms each
 * (8.39 GB/s: 27% of 31.5) when slow, 0.4 ms (21 GB/s: 67%) when not; GPU 1,
 * compute capability 9.0 without an NVML reading (PCIe 5.0 x16 assumed),
 * 20 DtoH copies of 8 MiB in 0.16 ms (52 GB/s: 83%); 10 PtoP copies of 64 MiB
 * from GPU 0 to GPU 1 over 4 NVLinks (100 GB/s) in 1 ms (67 GB/s). */
static void links_case(int slow)
{
	struct fixture fx;
	fixture_open(&fx, 500 * MS);
	sql(&fx, "%s", gpu_tables);
	sql(&fx, "%s", nvml_link_tables);
	sql(&fx, "INSERT INTO nvml_devices VALUES(0, 'A', 'u0', 'b0', 85899345920, 0, 700000,"
		 " 1980, 3201, 4, 16)");
	sql(&fx, "INSERT INTO nvml_topology VALUES(0, 1, 'NV4'), (1, 0, 'NV4'), (0, 0, 'X')");
	sql(&fx, "INSERT INTO gpu_devices VALUES(100, 1, 'H100', 132, 85899345920, 9, 0)");
	copies_add(&fx, "HtoD", 0, -1, 20, 8388608, 10 * MS, slow ? 1 * MS : 400 * US, 61, 1000);
	copies_add(&fx, "DtoH", 1, -1, 20, 8388608, 15 * MS, 160 * US, 62, 2000);
	copies_add(&fx, "PtoP", 0, 1, 10, 67108864, 250 * MS, 1 * MS, 63, 3000);
	json_t *r = fixture_report(&fx);
	REQUIRE(r != NULL);
	json_t *h = link_row(r, "HtoD", 0), *d = link_row(r, "DtoH", 1),
	       *p = link_row(r, "PtoP", 0);
	REQUIRE(h != NULL && d != NULL && p != NULL);
	CHECK(!strcmp(str(h, "link"), "PCIe 4.0 x16") && !strcmp(str(h, "peak_source"), "nvml"));
	CHECK(fabs(fixture_num(h, "peak_gb_per_s") - 16 * 1.969) < 1e-9);
	double want = 8388608 / (slow ? 1e-3 : 0.4e-3) / 1e9;
	CHECK(fabs(fixture_num(h, "achieved_gb_per_s") - want) < 1e-6);
	CHECK(fabs(fixture_num(h, "achieved_pct") - 100 * want / (16 * 1.969)) < 1e-6);
	CHECK(fixture_num(h, "copies") == 20 && fixture_num(h, "bytes") == 20.0 * 8388608);
	CHECK(!strcmp(str(d, "link"), "PCIe 5.0 x16") &&
	      !strcmp(str(d, "peak_source"), "compute capability"));
	CHECK(fabs(fixture_num(d, "peak_gb_per_s") - 16 * 3.938) < 1e-9);
	CHECK(!strcmp(str(p, "link"), "NVLink x4") && fixture_num(p, "peer") == 1);
	CHECK(fabs(fixture_num(p, "peak_gb_per_s") - 100.0) < 1e-9);
	CHECK(fabs(fixture_num(p, "achieved_pct") - 100.0 * 67108864 / 1e-3 / 1e9 / 100.0) < 1e-6);
	json_t *f = finding_with(r, "interconnect.low_bandwidth");
	if (slow) {
		REQUIRE(f != NULL);
		CHECK(!strcmp(str(f, "location"), "/home/u/train.py:train:61"));
		CHECK(strstr(str(f, "evidence"), "8.39 GB/s, against 31.5 GB/s for PCIe 4.0 x16") !=
		      NULL);
		/* At stake: the time over 80% of the link's peak. */
		double stake = 20e-3 - 20.0 * 8388608 / (0.8 * 16 * 1.969e9);
		CHECK(fabs(fixture_num(json_object_get(f, "impact"), "seconds") - stake) < 1e-6);
	} else {
		CHECK(f == NULL);
	}
	json_decref(r);
	fixture_close(&fx);
}

TEST(links_slow, "known copies give the links table (NVML's PCIe, the architecture's PCIe, NVLink) "
		 "and slow large pinned copies an interconnect.low_bandwidth finding at their line")
{
	links_case(1);
}

TEST(links_healthy, "copies at two thirds of the link's peak make no low-bandwidth finding")
{
	links_case(0);
}

/* 50 steps of 10 ms on GPU 0: an 8 MiB HtoD copy, then a kernel, in turn
 * (copy 8 ms and kernel 2 ms when transfer-bound); or, when not, a copy of
 * 2 ms under an 8 ms kernel on another stream. */
static void transfer_case(int bound)
{
	struct fixture fx;
	fixture_open(&fx, 600 * MS);
	sql(&fx, "%s", gpu_tables);
	for (int i = 0; i < 50; i++) {
		int64_t t = 50 * MS + i * 10 * MS;
		int64_t copy_ns = bound ? 8 * MS : 2 * MS;
		int64_t c0 = bound ? t : t + 1 * MS;
		int64_t k0 = bound ? t + 8 * MS : t, k1 = bound ? t + 10 * MS : t + 8 * MS;
		sql(&fx,
		    "INSERT INTO gpu_copies VALUES(100, 0, 7, %d, %lld, %lld, 8388608, 1, -1, 0, "
		    "'HtoD', 'pinned', 'device')",
		    5000 + i, (long long)c0, (long long)(c0 + copy_ns));
		sql(&fx,
		    "INSERT INTO gpu_api VALUES(100, 500, %d, %lld, %lld, 0, 'cudaMemcpyAsync')",
		    5000 + i, (long long)c0, (long long)(c0 + 20 * US));
		sql(&fx,
		    "INSERT INTO gpu_kernels VALUES(100, 0, %d, %d, %lld, %lld, 'step', 1, 1, 1, "
		    "256, 1, 1, 32, 0, 0)",
		    bound ? 7 : 8, 6000 + i, (long long)k0, (long long)k1);
		py_sample(&fx, 500, t + 10 * US, 71, NULL, 0);
	}
	json_t *r = fixture_report(&fx);
	REQUIRE(r != NULL);
	json_t *c = json_array_get(json_object_get(json_object_get(r, "gpu"), "compute"), 0);
	REQUIRE(c != NULL);
	json_t *f = finding_with(r, "interconnect.transfer_bound");
	if (bound) {
		CHECK(fabs(fixture_num(c, "copy_exposed_s") - 0.4) < 1e-9);
		CHECK(fabs(fixture_num(c, "copy_kernel_ratio") - 4.0) < 1e-9);
		REQUIRE(f != NULL);
		CHECK(!strcmp(str(f, "location"), "/home/u/train.py:train:71"));
		/* Overlap hides the copies up to the kernels' 0.1 s. */
		CHECK(fabs(fixture_num(json_object_get(f, "impact"), "seconds") - 0.1) < 1e-6);
	} else {
		CHECK(fabs(fixture_num(c, "copy_exposed_s")) < 1e-9);
		CHECK(fabs(fixture_num(c, "copy_kernel_ratio") - 0.25) < 1e-9);
		CHECK(f == NULL);
	}
	json_decref(r);
	fixture_close(&fx);
}

TEST(transfer_bound,
     "copies alone on the GPU longer than its kernels are an interconnect.transfer_bound "
     "finding at the copying line")
{
	transfer_case(1);
}

TEST(transfer_overlapped, "copies under the kernels make no transfer-bound finding")
{
	transfer_case(0);
}

/* Four GPUs of 80 GiB, 4 GiB allocated on each; GPU 0 also gets two more
 * 4 GiB blocks at train.py:train:88 when imbalanced. */
static void memory_case(int imbalanced)
{
	struct fixture fx;
	fixture_open(&fx, 300 * MS);
	sql(&fx, "%s", gpu_tables);
	int corr = 7000;
	for (int dev = 0; dev < 4; dev++) {
		sql(&fx, "INSERT INTO gpu_devices VALUES(100, %d, 'H100', 132, 85899345920, 9, 0)",
		    dev);
		int blocks = dev == 0 && imbalanced ? 3 : 1;
		for (int b = 0; b < blocks; b++) {
			int64_t t = 20 * MS + (dev * 3 + b) * 10 * MS;
			sql(&fx,
			    "INSERT INTO gpu_memory VALUES(100, %d, %lld, %lld, 4294967296, %d, "
			    "'alloc', 'device')",
			    dev, (long long)t,
			    0x7f0000000000LL + (long long)(dev * 3 + b) * (1LL << 33), corr);
			sql(&fx,
			    "INSERT INTO gpu_api VALUES(100, 600, %d, %lld, %lld, 0, 'cudaMalloc')",
			    corr++, (long long)(t - 3 * MS), (long long)t);
			py_sample(&fx, 600, t - 1 * MS, b ? 88 : 80, NULL, 0);
		}
	}
	json_t *r = fixture_report(&fx);
	REQUIRE(r != NULL);
	json_t *m0 = json_array_get(json_object_get(json_object_get(r, "gpu"), "memory"), 0);
	REQUIRE(m0 != NULL);
	json_t *f = finding_with(r, "gpu.memory_imbalance");
	if (imbalanced) {
		CHECK(fixture_num(m0, "peak_bytes") == 3 * 4294967296.0);
		CHECK(fabs(fixture_num(m0, "peak_vs_mean") - 2.0) < 1e-9); /* 12 / 6 GiB */
		CHECK(fabs(fixture_num(m0, "capacity_pct") - 15.0) < 1e-9);
		REQUIRE(f != NULL);
		CHECK(!strcmp(str(f, "location"), "/home/u/train.py:train:88"));
		CHECK(fixture_num(json_object_get(f, "impact"), "bytes") == 8 * 1073741824.0);
	} else {
		CHECK(fabs(fixture_num(m0, "peak_vs_mean") - 1.0) < 1e-9);
		CHECK(f == NULL);
	}
	json_decref(r);
	fixture_close(&fx);
}

TEST(memory_imbalanced,
     "a GPU holding three times the others' memory is a gpu.memory_imbalance finding at "
     "the allocating line")
{
	memory_case(1);
}

TEST(memory_balanced, "GPUs holding the same memory make no imbalance finding") { memory_case(0); }

/* A launch: the call on tid at call_ms (10 us long), then its kernels (count,
 * each of kernel_ms, one after another) from call_ms + 1; a copy of copy_ms
 * after them. call_ms < 0: no call recorded. */
static void launch_add(struct fixture *fx, int tid, int corr, double call_ms, int count,
		       int64_t kernel_ms, int64_t copy_ms)
{
	int64_t t = (int64_t)((call_ms < 0 ? 2000 : call_ms) * MS) + 1 * MS;
	if (call_ms >= 0)
		sql(fx,
		    "INSERT INTO gpu_api VALUES(100, %d, %d, %lld, %lld, 0, 'cudaLaunchKernel')",
		    tid, corr, (long long)(call_ms * MS), (long long)(call_ms * MS + 10 * US));
	for (int i = 0; i < count; i++, t += kernel_ms * MS)
		sql(fx,
		    "INSERT INTO gpu_kernels VALUES(100, 0, 7, %d, %lld, %lld, 'k', 1, 1, 1, 32, "
		    "1, 1, 16, 0, 0)",
		    corr, (long long)t, (long long)(t + kernel_ms * MS));
	if (copy_ms)
		sql(fx,
		    "INSERT INTO gpu_copies VALUES(100, 0, 7, %d, %lld, %lld, 1048576, 1, -1, 0, "
		    "'HtoD', 'pinned', 'device')",
		    corr, (long long)t, (long long)(t + copy_ms * MS));
}

static void range_add(struct fixture *fx, int tid, int64_t from_ms, int64_t to_ms, int depth,
		      const char *name)
{
	sql(fx, "INSERT INTO nvtx_ranges VALUES(100, %d, %lld, %lld, %d, 1, 'push', '', '%s')", tid,
	    (long long)(from_ms * MS), (long long)(to_ms * MS), depth, name);
}

static json_t *row_named(json_t *arr, const char *name)
{
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o) if (!strcmp(str(o, "name"), name)) return o;
	return NULL;
}

/* The GPU keys of o in ms (kernel, copy) and counts, against the expected. */
static int work_is(json_t *o, const char *pre, double kernel_ms, double copy_ms, int kernels)
{
	char k[64], c[64], n[64];
	snprintf(k, sizeof(k), "gpu_%skernel_s", pre);
	snprintf(c, sizeof(c), "gpu_%scopy_s", pre);
	snprintf(n, sizeof(n), "%skernels", pre);
	return o && fabs(fixture_num(o, k) - kernel_ms / 1e3) < 1e-9 &&
	       fabs(fixture_num(o, c) - copy_ms / 1e3) < 1e-9 && fixture_num(o, n) == kernels;
}

/* Thread 200: step [100, 500] holds forward [110, 200] (holding attn
 * [150, 180]) and backward [250, 400]; a second step [600, 900] holds
 * forward [610, 700]; thread 202 has load [140, 190]. Each launch's GPU
 * time is a power of two (ms), so every sum names its launches. Thread 201
 * has no range: its launch in forward alone is forward's (as autograd's
 * thread in a backward pass), its launch while attn and load are both open
 * is outside; one kernel has no recorded call. */
TEST(nvtx_gpu,
     "the GPU time launched in NVTX ranges: nested ranges total and self, a launch outside "
     "any range, a launch on another thread, a kernel without its call, and the NVTX "
     "phases")
{
	struct fixture fx;
	fixture_open(&fx, 1000 * MS);
	sql(&fx, "%s%s", gpu_tables, CUDA_HOST_NVTX_SCHEMA);
	range_add(&fx, 200, 100, 500, 0, "step");
	range_add(&fx, 200, 110, 200, 1, "forward");
	range_add(&fx, 200, 150, 180, 2, "attn");
	range_add(&fx, 200, 250, 400, 1, "backward");
	range_add(&fx, 200, 600, 900, 0, "step");
	range_add(&fx, 200, 610, 700, 1, "forward");
	range_add(&fx, 202, 140, 190, 0, "load");
	sql(&fx, "INSERT INTO nvtx_ranges VALUES(100, 200, %lld, %lld, 2, 1, 'mark', '', 'tick')",
	    160 * MS, 160 * MS);
	launch_add(&fx, 200, 1, 120, 2, 1, 0);	   /* forward: 2 kernels, 2 ms (a graph) */
	launch_add(&fx, 200, 2, 160, 1, 4, 0);	   /* attn */
	launch_add(&fx, 200, 3, 170, 0, 0, 2);	   /* attn: a 2 ms copy */
	launch_add(&fx, 200, 4, 300, 1, 8, 0);	   /* backward */
	launch_add(&fx, 200, 5, 450, 1, 16, 0);	   /* step's own */
	launch_add(&fx, 200, 6, 650, 1, 32, 0);	   /* the second step's forward */
	launch_add(&fx, 200, 7, 950, 1, 64, 0);	   /* outside any range */
	launch_add(&fx, 201, 8, 130, 1, 128, 0);   /* another thread, in forward alone */
	launch_add(&fx, 200, 9, -1, 1, 256, 0);	   /* its call not recorded */
	launch_add(&fx, 202, 10, 185, 1, 512, 0);  /* load, its own thread's */
	launch_add(&fx, 201, 11, 170, 1, 1024, 0); /* attn and load both open */
	json_t *r = fixture_report(&fx);
	REQUIRE(r != NULL);
	json_t *gpu = json_object_get(r, "gpu");
	json_t *ranges = json_object_get(gpu, "nvtx_ranges");
	/* Total: every range holding the launch, a name once; self: the innermost. */
	CHECK(work_is(row_named(ranges, "step"), "", 2 + 4 + 8 + 16 + 32 + 128, 2, 7));
	CHECK(work_is(row_named(ranges, "step"), "self_", 16, 0, 1));
	CHECK(work_is(row_named(ranges, "forward"), "", 2 + 4 + 32 + 128, 2, 5));
	CHECK(work_is(row_named(ranges, "forward"), "self_", 2 + 32 + 128, 0, 4));
	CHECK(work_is(row_named(ranges, "attn"), "", 4, 2, 1));
	CHECK(work_is(row_named(ranges, "attn"), "self_", 4, 2, 1));
	CHECK(work_is(row_named(ranges, "backward"), "", 8, 0, 1));
	CHECK(work_is(row_named(ranges, "load"), "", 512, 0, 1));
	CHECK(row_named(ranges, "tick") == NULL);
	/* The run's GPU time: 2046 ms of kernels and 2 ms of copies. */
	CHECK(fabs(fixture_num(row_named(ranges, "step"), "gpu_pct") - 100.0 * 192 / 2048) < 1e-9);
	CHECK(fabs(fixture_num(row_named(ranges, "step"), "gpu_self_pct") - 100.0 * 16 / 2048) <
	      1e-9);
	json_t *l = json_object_get(gpu, "nvtx_launches");
	CHECK(work_is(json_object_get(l, "inside"), "", 190 + 512, 2, 8));
	CHECK(work_is(json_object_get(l, "other_thread"), "", 128, 0, 1));
	CHECK(work_is(json_object_get(l, "outside"), "", 64 + 1024, 0, 2));
	CHECK(work_is(json_object_get(l, "unattributed"), "", 256, 0, 1));
	CHECK(fabs(fixture_num(json_object_get(l, "unattributed"), "gpu_pct") - 12.5) < 1e-9);
	/* The phases: the two steps (thread 200's ranges) and load (202's). */
	json_t *phases = json_object_get(r, "phases");
	REQUIRE(json_array_size(phases) == 3);
	CHECK(work_is(json_array_get(phases, 0), "", 2 + 4 + 8 + 16 + 128, 2, 6));
	CHECK(work_is(json_array_get(phases, 1), "", 512, 0, 1));
	CHECK(work_is(json_array_get(phases, 2), "", 32, 0, 1));
	char *md = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&md, &len);
	REQUIRE(f != NULL);
	md_section_gpu(f, r);
	fclose(f);
	CHECK(strstr(md, "| GPU launched inside |") != NULL);
	CHECK(strstr(md,
		     "| attn | default | 1 | 30.0 ms | 30.0 ms | 30.0 ms | 3% | 6.0 ms (1 kernel, "
		     "0%) |") != NULL);
	CHECK(strstr(md,
		     "| step | default | 2 | 700.0 ms | 350.0 ms | 400.0 ms | 70% | 192.0 ms (7 "
		     "kernels, 9%) |") != NULL);
	CHECK(strstr(md, "launched 34% inside the ranges, 53% outside them and 12% from calls not "
			 "recorded.") != NULL);
	if (check_state.failures)
		fprintf(stderr, "%s\n", md);
	free(md);
	json_decref(r);
	fixture_close(&fx);
}

CHECK_MAIN()
