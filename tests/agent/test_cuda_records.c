/* test_cuda_records: the CUDA agent's formatting (src/agents/cuda/records.c,
 * out.c) without a GPU: CUPTI is played by fakes that hand over records
 * built here, and every line the agent writes must parse (gpu_wire.h) to
 * the record's values. Built only where the CUPTI headers are. */
#include "check.h"
#include "agents/cuda/cuda_agent.h"
#include "probes/gpu_wire.h"

#include <fcntl.h>
#include <sys/wait.h>

struct cupti_fns cupti;

/* The "buffer" handed to records_buffer_completed: the records' addresses. */
static CUptiResult fake_next(uint8_t *buffer, size_t valid_bytes, CUpti_Activity **record)
{
	CUpti_Activity **recs = (CUpti_Activity **)(void *)buffer;
	size_t n = valid_bytes / sizeof(*recs), i = 0;
	if (*record) { /* the one after it */
		while (i < n && recs[i] != *record)
			i++;
		i++;
	}
	if (i >= n)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = recs[i];
	return CUPTI_SUCCESS;
}

static size_t fake_dropped_next;

static CUptiResult fake_dropped(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	(void)ctx;
	(void)stream;
	*dropped = fake_dropped_next;
	fake_dropped_next = 0;
	return CUPTI_SUCCESS;
}

static CUptiResult fake_name(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	*name = domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211 ? "cudaLaunchKernel_v7000" :
		cbid == 1 ? "cudaGetDeviceProperties_v2_v12000" : "cudaFree";
	return CUPTI_SUCCESS;
}

static char *agent_dir;

static void agent_dir_remove(void)
{
	check_rmtree(agent_dir);
}

/* Hands the records to the agent as one completed buffer, then reads back
 * the whole file the agent writes (into a directory made for this test). */
static char *run_buffer(CUpti_Activity **recs, size_t n, size_t dropped)
{
	static char path[4200];
	if (!agent_dir) {
		if (!(agent_dir = check_tmpdir()))
			return NULL;
		atexit(agent_dir_remove);
		cupti.ActivityGetNextRecord = fake_next;
		cupti.ActivityGetNumDroppedRecords = fake_dropped;
		cupti.GetCallbackName = fake_name;
		if (out_open(agent_dir, 130001))
			return NULL;
		snprintf(path, sizeof(path), "%s/cuda-%d.txt", agent_dir, (int)getpid());
	}
	fake_dropped_next = dropped;
	uint8_t *buf = malloc(n * sizeof(*recs) + 1);
	memcpy(buf, recs, n * sizeof(*recs));
	records_buffer_completed(NULL, 0, buf, n * sizeof(*recs), n * sizeof(*recs));
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char all[1 << 20];
	size_t got = fread(all, 1, sizeof(all) - 1, f);
	fclose(f);
	all[got] = '\0';
	return all;
}

/* The last line of text that starts with kind, parsed. */
static int last_line(const char *text, char kind, struct gpu_record *r, char *copy, size_t cap)
{
	const char *found = NULL;
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p == kind)
			found = p;
	if (!found)
		return -1;
	size_t len = (size_t)(strchr(found, '\n') - found);
	if (len >= cap)
		return -1;
	memcpy(copy, found, len);
	copy[len] = '\0';
	return gpu_record_parse(copy, len, r);
}

static int str_is(const struct gpu_record *r, int i, const char *want)
{
	return r->slen[i] == strlen(want) && !memcmp(r->s[i], want, r->slen[i]);
}

static char line[GPU_LINE_MAX + 2];

TEST(header, "the file starts with the V line: wire version, pid and CUPTI's version")
{
	CUpti_Activity *none[1];
	const char *text = run_buffer(none, 0, 0);
	REQUIRE(text);
	char want[64];
	snprintf(want, sizeof(want), "V\t1\t%d\t130001\n", (int)getpid());
	CHECK(!strncmp(text, want, strlen(want)));
}

TEST(kernel, "a kernel becomes a K line with its fields, its name raw")
{
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL };
	k.start = 1000;
	k.end = 5000;
	k.deviceId = 1;
	k.streamId = 7;
	k.correlationId = 9;
	k.gridX = 2, k.gridY = 3, k.gridZ = 4, k.blockX = 128, k.blockY = 1, k.blockZ = 1;
	k.registersPerThread = 32;
	k.staticSharedMemory = 16;
	k.dynamicSharedMemory = 256;
	k.name = "_Z3addPfS_i";
	CUpti_Activity *recs[] = { (CUpti_Activity *)&k };
	struct gpu_record r;
	REQUIRE(!last_line(run_buffer(recs, 1, 0), 'K', &r, line, sizeof(line)));
	static const int64_t want[GPU_WIRE_INTS] = { 1000, 5000, 1, 7, 9, 2, 3, 4, 128, 1, 1, 32, 16, 256 };
	for (int i = 0; i < GPU_WIRE_INTS; i++)
		CHECK_INT_EQ(r.n[i], want[i]);
	CHECK(str_is(&r, 0, "_Z3addPfS_i"));
}

TEST(kernel_long_name, "a kernel name with a tab and longer than a line is cut into a valid line")
{
	static char name[3 * GPU_LINE_MAX];
	memset(name, 'x', sizeof(name) - 1);
	name[5] = '\t';
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
				     .streamId = 0xFFFFFFFFu, .name = name };
	CUpti_Activity *recs[] = { (CUpti_Activity *)&k };
	struct gpu_record r;
	REQUIRE(!last_line(run_buffer(recs, 1, 0), 'K', &r, line, sizeof(line)));
	CHECK_INT_EQ(r.n[3], -1);
	CHECK(r.slen[0] > GPU_LINE_MAX / 2);
	CHECK(r.s[0][5] == ' ');
}

TEST(copies, "copies become M lines: kind words, async flag, host side -1, peer devices")
{
	CUpti_ActivityMemcpy6 m = { .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
				    .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
				    .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
				    .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
				    .flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC,
				    .bytes = 4096, .start = 10, .end = 20, .deviceId = 2,
				    .streamId = 3, .correlationId = 44 };
	CUpti_Activity *recs[] = { (CUpti_Activity *)&m };
	struct gpu_record r;
	REQUIRE(!last_line(run_buffer(recs, 1, 0), 'M', &r, line, sizeof(line)));
	static const int64_t want[9] = { 10, 20, 2, 3, 44, 4096, 1, 2, -1 };
	for (int i = 0; i < 9; i++)
		CHECK_INT_EQ(r.n[i], want[i]);
	CHECK(str_is(&r, 0, "DtoH") && str_is(&r, 1, "device") && str_is(&r, 2, "pinned"));

	CUpti_ActivityMemcpyPtoP4 p = { .kind = CUPTI_ACTIVITY_KIND_MEMCPY2,
					.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
					.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
					.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, .bytes = 1 << 20,
					.start = 30, .end = 40, .deviceId = 0, .srcDeviceId = 0,
					.dstDeviceId = 1, .correlationId = 45 };
	recs[0] = (CUpti_Activity *)&p;
	REQUIRE(!last_line(run_buffer(recs, 1, 0), 'M', &r, line, sizeof(line)));
	CHECK_INT_EQ(r.n[6], 0);
	CHECK_INT_EQ(r.n[7], 0);
	CHECK_INT_EQ(r.n[8], 1);
	CHECK(str_is(&r, 0, "PtoP"));
}

TEST(api_sync_memset, "memsets, runtime calls (version suffix gone) and syncs become S, A, Y lines")
{
	CUpti_ActivityMemset4 s = { .kind = CUPTI_ACTIVITY_KIND_MEMSET, .bytes = 512, .start = 1,
				    .end = 2, .deviceId = 0, .streamId = 5, .correlationId = 6 };
	CUpti_ActivityAPI a = { .kind = CUPTI_ACTIVITY_KIND_RUNTIME, .cbid = 211, .start = 3,
				.end = 4, .threadId = 4242, .correlationId = 7, .returnValue = 0 };
	CUpti_ActivityAPI a2 = { .kind = CUPTI_ACTIVITY_KIND_RUNTIME, .cbid = 1, .start = 5,
				 .end = 6, .threadId = 4243, .correlationId = 8, .returnValue = 2 };
	CUpti_ActivitySynchronization2 y = {
		.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
		.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, .start = 7, .end = 8,
		.correlationId = 9, .streamId = 0xFFFFFFFFu
	};
	CUpti_Activity *recs[] = { (CUpti_Activity *)&s, (CUpti_Activity *)&a,
				   (CUpti_Activity *)&y, (CUpti_Activity *)&a2 };
	const char *text = run_buffer(recs, 4, 0);
	struct gpu_record r;
	REQUIRE(!last_line(text, 'S', &r, line, sizeof(line)));
	CHECK_INT_EQ(r.n[3], 5);
	CHECK_INT_EQ(r.n[5], 512);
	REQUIRE(!last_line(text, 'Y', &r, line, sizeof(line)));
	CHECK_INT_EQ(r.n[2], -1);
	CHECK_INT_EQ(r.n[3], 9);
	CHECK(str_is(&r, 0, "stream_wait_event"));
	REQUIRE(!last_line(text, 'A', &r, line, sizeof(line)));
	CHECK_INT_EQ(r.n[2], 4243);
	CHECK_INT_EQ(r.n[4], 2);
	CHECK(str_is(&r, 0, "cudaGetDeviceProperties_v2"));
	CHECK_CONTAINS(text, "\t4242\t7\t0\tcudaLaunchKernel\n");
}

TEST(memory_device, "allocations become G lines, an invalid operation none; devices D lines")
{
	CUpti_ActivityMemory4 g = { .kind = CUPTI_ACTIVITY_KIND_MEMORY2,
				    .memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
				    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED,
				    .correlationId = 3, .address = 0x7f0000000000ull,
				    .bytes = 1 << 21, .timestamp = 99, .deviceId = 1 };
	CUpti_ActivityMemory4 bad = g;
	bad.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
	bad.correlationId = 4;
	CUpti_ActivityDevice5 d = { .kind = CUPTI_ACTIVITY_KIND_DEVICE,
				    .globalMemorySize = 85899345920ull, .numMultiprocessors = 132,
				    .computeCapabilityMajor = 9, .computeCapabilityMinor = 0,
				    .id = 0, .name = "NVIDIA H100 80GB HBM3" };
	CUpti_Activity *recs[] = { (CUpti_Activity *)&g, (CUpti_Activity *)&bad,
				   (CUpti_Activity *)&d };
	const char *text = run_buffer(recs, 3, 0);
	struct gpu_record r;
	REQUIRE(!last_line(text, 'G', &r, line, sizeof(line)));
	static const int64_t want[5] = { 99, 1, 0x7f0000000000ll, 1 << 21, 3 };
	for (int i = 0; i < 5; i++)
		CHECK_INT_EQ(r.n[i], want[i]);
	CHECK(str_is(&r, 0, "free") && str_is(&r, 1, "managed"));
	REQUIRE(!last_line(text, 'D', &r, line, sizeof(line)));
	CHECK_INT_EQ(r.n[1], 132);
	CHECK_INT_EQ(r.n[2], 85899345920ll);
	CHECK(str_is(&r, 0, "NVIDIA H100 80GB HBM3"));
	CHECK_NOT_CONTAINS(text, "\t4\tfree");
}

TEST(dropped, "dropped records are reported as a growing X records_dropped total")
{
	CUpti_Activity *none[1];
	run_buffer(none, 0, 5);
	const char *text = run_buffer(none, 0, 2);
	struct gpu_record r;
	REQUIRE(text);
	REQUIRE(!last_line(text, 'X', &r, line, sizeof(line)));
	CHECK(str_is(&r, 0, "records_dropped"));
	CHECK_INT_EQ(r.n[0], 7);
}

TEST(every_line_parses, "every line the agent wrote is a record")
{
	CUpti_Activity *none[1];
	const char *text = run_buffer(none, 0, 0);
	REQUIRE(text);
	int lines = 0, bad = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		REQUIRE(nl);
		struct gpu_record r;
		lines++;
		bad += gpu_record_parse(p, (size_t)(nl - p), &r) != 0;
		p = nl + 1;
	}
	CHECK(lines > 10);
	CHECK_INT_EQ(bad, 0);
}

TEST(fork_child, "a forked child's lines go to a file of its own, which starts with its V line")
{
	CUpti_Activity *none[1];
	REQUIRE(run_buffer(none, 0, 0));
	pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		out_counter("from_child", 1);
		_exit(0);
	}
	int status;
	REQUIRE(waitpid(child, &status, 0) == child);
	char path[4200], want[96];
	snprintf(path, sizeof(path), "%s/cuda-%d.txt", agent_dir, (int)child);
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	char text[512];
	size_t got = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[got] = '\0';
	snprintf(want, sizeof(want), "V\t1\t%d\t130001\nX\tfrom_child\t1\n", (int)child);
	CHECK_STR_EQ(text, want);
	CHECK_NOT_CONTAINS(run_buffer(none, 0, 0), "from_child");
}

CHECK_MAIN()
