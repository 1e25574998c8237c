/* test_gpu_wire: the cuda agent's line format (src/probes/gpu_wire.h). */
#include "check.h"
#include "probes/gpu_wire.h"

static int parse(const char *line, struct gpu_record *r)
{
	return gpu_record_parse(line, strlen(line), r);
}

static int str_is(const struct gpu_record *r, int i, const char *want)
{
	return r->slen[i] == strlen(want) && !memcmp(r->s[i], want, r->slen[i]);
}

TEST(header_and_reason, "the V header and a Q reason parse with their fields")
{
	struct gpu_record r;
	REQUIRE(!parse("V\t1\t4242\t130001", &r));
	CHECK_INT_EQ(r.kind, 'V');
	CHECK_INT_EQ(r.n[0], 1);
	CHECK_INT_EQ(r.n[1], 4242);
	CHECK_INT_EQ(r.n[2], 130001);
	REQUIRE(!parse("Q\tCUPTI is taken by another profiler in this process (nsys)", &r));
	CHECK_INT_EQ(r.kind, 'Q');
	CHECK(str_is(&r, 0, "CUPTI is taken by another profiler in this process (nsys)"));
}

TEST(device_line, "a D line gives the device's numbers and its name with spaces")
{
	struct gpu_record r;
	REQUIRE(!parse("D\t1\t132\t85899345920\t9\t0\tNVIDIA H100 80GB HBM3", &r));
	CHECK_INT_EQ(r.n[0], 1);
	CHECK_INT_EQ(r.n[1], 132);
	CHECK_INT_EQ(r.n[2], 85899345920LL);
	CHECK_INT_EQ(r.n[3], 9);
	CHECK_INT_EQ(r.n[4], 0);
	CHECK(str_is(&r, 0, "NVIDIA H100 80GB HBM3"));
}

TEST(kernel_line, "a K line gives its fourteen integers in order and the mangled name")
{
	struct gpu_record r;
	REQUIRE(!parse("K\t100\t200\t0\t7\t9\t1\t2\t3\t4\t5\t6\t32\t0\t128\t_Z3addPfS_i", &r));
	static const int64_t want[GPU_WIRE_INTS] = { 100, 200, 0, 7, 9, 1, 2, 3, 4, 5, 6, 32, 0, 128 };
	for (int i = 0; i < GPU_WIRE_INTS; i++)
		CHECK_INT_EQ(r.n[i], want[i]);
	CHECK(str_is(&r, 0, "_Z3addPfS_i"));
}

TEST(copy_line, "an M line gives nine integers, a negative one kept, and its three words")
{
	struct gpu_record r;
	REQUIRE(!parse("M\t100\t200\t0\t7\t10\t4096\t1\t-1\t0\tHtoD\tpinned\tdevice", &r));
	CHECK_INT_EQ(r.n[5], 4096);
	CHECK_INT_EQ(r.n[6], 1);
	CHECK_INT_EQ(r.n[7], -1);
	CHECK_INT_EQ(r.n[8], 0);
	CHECK(str_is(&r, 0, "HtoD"));
	CHECK(str_is(&r, 1, "pinned"));
	CHECK(str_is(&r, 2, "device"));
}

TEST(other_kinds, "S, A, Y, G and X lines parse with their fields")
{
	struct gpu_record r;
	REQUIRE(!parse("S\t100\t200\t0\t7\t11\t512", &r));
	CHECK_INT_EQ(r.n[5], 512);
	REQUIRE(!parse("A\t100\t200\t77\t12\t0\tcudaMemcpyAsync", &r));
	CHECK_INT_EQ(r.n[2], 77);
	CHECK(str_is(&r, 0, "cudaMemcpyAsync"));
	REQUIRE(!parse("Y\t100\t200\t7\t13\tstream_wait_event", &r));
	CHECK_INT_EQ(r.n[3], 13);
	CHECK(str_is(&r, 0, "stream_wait_event"));
	REQUIRE(!parse("G\t100\t0\t140737488355328\t4096\t14\tfree\tmanaged", &r));
	CHECK_INT_EQ(r.n[2], 140737488355328LL);
	CHECK(str_is(&r, 0, "free"));
	CHECK(str_is(&r, 1, "managed"));
	REQUIRE(!parse("X\trecords_dropped\t3", &r));
	CHECK(str_is(&r, 0, "records_dropped"));
	CHECK_INT_EQ(r.n[0], 3);
}

TEST(nvtx_line, "an N line gives five integers, its type, an empty default domain and the "
		"message with spaces")
{
	struct gpu_record r;
	REQUIRE(!parse("N\t100\t200\t4242\t1\t0\tpush\t\tforward pass 3", &r));
	CHECK_INT_EQ(r.kind, 'N');
	static const int64_t want[5] = { 100, 200, 4242, 1, 0 };
	for (int i = 0; i < 5; i++)
		CHECK_INT_EQ(r.n[i], want[i]);
	CHECK(str_is(&r, 0, "push"));
	CHECK_INT_EQ(r.slen[1], 0);
	CHECK(str_is(&r, 2, "forward pass 3"));
	CHECK(parse("N\t100\t200\t4242\t1\tpush\t\tstep", &r) == -1);
}

TEST(empty_string_field, "an empty name is still a field: a kernel without a name parses")
{
	struct gpu_record r;
	REQUIRE(!parse("K\t1\t2\t0\t7\t9\t1\t1\t1\t1\t1\t1\t1\t0\t0\t", &r));
	CHECK_INT_EQ(r.slen[0], 0);
}

TEST(refusals, "unknown kinds, missing or extra fields and non-numbers are refused")
{
	struct gpu_record r;
	CHECK(parse("", &r) == -1);
	CHECK(parse("V", &r) == -1);
	CHECK(parse("Z\t1\t2\t3", &r) == -1);
	CHECK(parse("V 1\t2\t3", &r) == -1);
	CHECK(parse("V\t1\t2", &r) == -1);
	CHECK(parse("V\t1\t2\t3\t4", &r) == -1);
	CHECK(parse("V\t1\tx\t3", &r) == -1);
	CHECK(parse("V\t1\t\t3", &r) == -1);
	CHECK(parse("V\t1\t-\t3", &r) == -1);
	CHECK(parse("V\t1\t1234567890123456789\t3", &r) == -1);
	CHECK(parse("S\t100\t200\t0\t7\t11", &r) == -1);
	CHECK(parse("M\t100\t200\t0\t7\t10\t4096\t1\t-1\t0\tHtoD\tpinned", &r) == -1);
	CHECK(parse("X\t3\trecords_dropped", &r) == -1);
	CHECK_INT_EQ(r.kind, 0);
}

TEST(long_line_refused, "a line longer than GPU_LINE_MAX is refused even when well formed")
{
	static char line[GPU_LINE_MAX + 64];
	struct gpu_record r;
	size_t head = (size_t)snprintf(line, sizeof(line), "Q\t");
	memset(line + head, 'a', GPU_LINE_MAX - head);
	CHECK(gpu_record_parse(line, GPU_LINE_MAX, &r) == 0);
	line[GPU_LINE_MAX] = 'a';
	CHECK(gpu_record_parse(line, GPU_LINE_MAX + 1, &r) == -1);
}

CHECK_MAIN()
