/* test_clock: the monotonic clock recorded times come from. */
#include "check.h"
#include "util/clock.h"

#include <time.h>

TEST(mono_never_back, "the monotonic clock never goes backwards")
{
	int64_t prev = clock_mono_ns();
	int back = 0;
	for (int i = 0; i < 100000; i++) {
		int64_t now = clock_mono_ns();
		back += now < prev;
		prev = now;
	}
	CHECK_INT_EQ(back, 0);
	CHECK(prev > 0);
}

TEST(mono_advances, "the monotonic clock advances across a sleep by at least the time slept")
{
	int64_t a = clock_mono_ns();
	struct timespec ts = { 0, 20 * NS_PER_MS };
	nanosleep(&ts, NULL);
	CHECK(clock_mono_ns() - a >= 20 * NS_PER_MS);
}

TEST(real_is_epoch, "the real clock reads as a date after 2020")
{
	CHECK(clock_real_ns() / NS_PER_S > 1577836800LL);
}

TEST(ns_to_s, "ns_to_s converts nanoseconds to seconds")
{
	CHECK(ns_to_s(1500 * NS_PER_MS) == 1.5);
	CHECK(ns_to_s(0) == 0);
}

CHECK_MAIN()
