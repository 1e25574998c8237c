/* test_parse: command-line numbers and durations are strict. */
#include "check.h"
#include "util/clock.h"
#include "util/parse.h"

#include <errno.h>
#include <stdint.h>

TEST(duration_units, "durations accept seconds by default and the s, ms, us, m, min and h units")
{
	int64_t ns = 0;
	CHECK_INT_EQ(parse_duration_ns("2", &ns), 0);
	CHECK_INT_EQ(ns, 2 * NS_PER_S);
	CHECK_INT_EQ(parse_duration_ns("2.5s", &ns), 0);
	CHECK_INT_EQ(ns, 2500 * NS_PER_MS);
	CHECK_INT_EQ(parse_duration_ns("100ms", &ns), 0);
	CHECK_INT_EQ(ns, 100 * NS_PER_MS);
	CHECK_INT_EQ(parse_duration_ns("250us", &ns), 0);
	CHECK_INT_EQ(ns, 250000);
	CHECK_INT_EQ(parse_duration_ns("1m", &ns), 0);
	CHECK_INT_EQ(ns, 60 * NS_PER_S);
	CHECK_INT_EQ(parse_duration_ns("1.5min", &ns), 0);
	CHECK_INT_EQ(ns, 90 * NS_PER_S);
	CHECK_INT_EQ(parse_duration_ns("1h", &ns), 0);
	CHECK_INT_EQ(ns, 3600 * NS_PER_S);
}

TEST(duration_rejects, "a duration that is empty, zero, negative, not finite or has junk is refused and out is untouched")
{
	static const char *bad[] = { "", "0", "-1", "0s", "nan", "inf", "1x", "5 s", "s", "1ms2",
				     "1.2.3", "1e400" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ns = 777;
		int rc = parse_duration_ns(bad[i], &ns);
		if (rc == 0 || ns != 777)
			check_fail(__FILE__, __LINE__, "\"%s\" was accepted (rc %d, ns %lld)", bad[i],
				   rc, (long long)ns);
	}
	int64_t ns = 777;
	CHECK(parse_duration_ns(NULL, &ns) != 0);
	CHECK_INT_EQ(ns, 777);
}

TEST(duration_too_small_or_large, "a duration below one nanosecond or beyond int64 is out of range")
{
	int64_t ns = 5;
	CHECK_INT_EQ(parse_duration_ns("0.0000000001", &ns), -ERANGE);
	CHECK_INT_EQ(parse_duration_ns("1e12h", &ns), -ERANGE);
	CHECK_INT_EQ(ns, 5);
}

TEST(long_range_ok, "integers within the range are accepted, bounds included")
{
	long v = -1;
	CHECK_INT_EQ(parse_long_range("0", 0, 10, &v), 0);
	CHECK_INT_EQ(v, 0);
	CHECK_INT_EQ(parse_long_range("10", 0, 10, &v), 0);
	CHECK_INT_EQ(v, 10);
	CHECK_INT_EQ(parse_long_range("997", 1, 100000, &v), 0);
	CHECK_INT_EQ(v, 997);
}

TEST(long_range_rejects, "integers out of range, with junk, or overflowing long are refused and out is untouched")
{
	long v = 123;
	CHECK_INT_EQ(parse_long_range("11", 0, 10, &v), -ERANGE);
	CHECK_INT_EQ(parse_long_range("-1", 0, 10, &v), -ERANGE);
	CHECK_INT_EQ(parse_long_range("", 0, 10, &v), -EINVAL);
	CHECK_INT_EQ(parse_long_range("5x", 0, 10, &v), -EINVAL);
	CHECK_INT_EQ(parse_long_range("5.0", 0, 10, &v), -EINVAL);
	CHECK_INT_EQ(parse_long_range("x", 0, 10, &v), -EINVAL);
	CHECK(parse_long_range("99999999999999999999999", 0, 10, &v) != 0);
	CHECK(parse_long_range(NULL, 0, 10, &v) != 0);
	CHECK_INT_EQ(v, 123);
}

TEST(list_has, "a comma list holds a name only as a whole item, never as a part of one")
{
	CHECK_INT_EQ(parse_list_has("cpu,memory", "memory", 6), 1);
	CHECK_INT_EQ(parse_list_has("cpu,memory", "cpu", 3), 1);
	CHECK_INT_EQ(parse_list_has("cpu,memory", "mem", 3), 0);
	CHECK_INT_EQ(parse_list_has("offcpu", "cpu", 3), 0);
	CHECK_INT_EQ(parse_list_has("nvml,cuda", "cuda,x", 4), 1); /* name[0..n) only */
	CHECK_INT_EQ(parse_list_has("", "cpu", 3), 0);
	CHECK_INT_EQ(parse_list_has(NULL, "cpu", 3), 0);
}

CHECK_MAIN()
