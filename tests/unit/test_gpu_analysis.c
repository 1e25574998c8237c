/* The GPU analyses (src/analysis/gpu*.c) on synthesised cuda-probe records:
 * known timelines give the known busy and idle time, known copies the known
 * bandwidth table, and the planted problems their findings at the Python
 * line the host was on. No GPU is needed: the tables are written as the cuda
 * probe writes them (docs/gpu.md). */
#include "gpu_fixture.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		CHECK(cond);                                                                       \
		if (!(cond))                                                                       \
			return;                                                                    \
	} while (0)

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
		{ "<module>", "/home/u/train.py", 90, "train", "python" },
		{ "train", "/home/u/train.py", line_train, "train", "python" },
		{ lib ? "load_batch" : leaf_fn, "/home/u/train.py", leaf_line, "train", "python" },
		{ lib, "/opt/venv/lib/python3.12/site-packages/torch/nn/init.py", 575, "torch.nn.init",
		  "python" },
	};
	int64_t ids[4];
	size_t n = lib ? 4 : leaf_fn ? 3 : 2;
	for (size_t i = 0; i < n; i++)
		ids[i] = stack_frame(sw, &fr[i]);
	struct sample_info si = { .t_ns = t_ns,
				  .pid = 100,
				  .tid = tid,
				  .node = stack_intern(sw, ids, n),
				  .source = "python",
				  .weight = 1,
				  .on_cpu = 1,
				  .gil = 1 };
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
static void test_launch_bound_and_copies(void)
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
static void test_sync(void)
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
static void test_no_gpu(void)
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

int main(void)
{
	TEST("a launch-bound timeline gives its busy and idle time, the copy table "
	     "and its findings at the Python lines",
	     test_launch_bound_and_copies);
	TEST("waits that drain the GPU are one gpu.sync finding at the waiting line", test_sync);
	TEST("without GPU tables the report says why in one line", test_no_gpu);
	return fixture_done();
}
