/* test_tsc: the time-stamp counter map turns ticks into CLOCK_MONOTONIC
 * nanoseconds accurately and never out of order, whatever order knots and
 * times come in. */
#include "check.h"
#include "util/clock.h"
#include "util/tsc.h"

#include <time.h>

TEST(map_interpolates, "between knots a tick maps onto the line through them")
{
	struct tsc_map m = TSC_MAP_INIT;
	tsc_map_add(&m, 1000, 5000);
	tsc_map_add(&m, 1000 + 3 * 100000000ULL, 5000 + 100000000LL); /* 3 ticks per ns */
	CHECK_INT_EQ(tsc_map_ns(&m, 1000), 5000);
	CHECK_INT_EQ(tsc_map_ns(&m, 1000 + 300), 5100);
	CHECK_INT_EQ(tsc_map_ns(&m, 1000 + 3 * 100000000ULL), 5000 + 100000000LL);
	tsc_map_release(&m);
}

TEST(map_extrapolates, "past the last knot and before the first a tick follows the mean rate")
{
	struct tsc_map m = TSC_MAP_INIT;
	tsc_map_add(&m, 3000000, 1000000);
	tsc_map_add(&m, 3000000 + 60000000ULL, 1000000 + 30000000LL); /* 2 ticks per ns */
	CHECK_INT_EQ(tsc_map_ns(&m, 3000000 + 60000000ULL + 2000), 1000000 + 30000000LL + 1000);
	CHECK_INT_EQ(tsc_map_ns(&m, 3000000 - 2000), 1000000 - 1000);
	tsc_map_release(&m);
}

TEST(map_keeps_handed_out_times, "a knot added after an extrapolated time never maps a later tick before it")
{
	struct tsc_map m = TSC_MAP_INIT;
	tsc_map_add(&m, 0, 0);
	tsc_map_add(&m, 100000000, 100000000); /* 1 tick per ns */
	int64_t far = tsc_map_ns(&m, 150000000); /* 150 ms, extrapolated */
	/* The clock says the next knot came earlier than the line did: a slower rate. */
	tsc_map_add(&m, 200000000, 140000000);
	CHECK(tsc_map_ns(&m, 150000000) == far);
	CHECK(tsc_map_ns(&m, 150000001) >= far);
	CHECK(tsc_map_ns(&m, 200000000) > far);
	int64_t prev = INT64_MIN;
	int back = 0;
	for (uint64_t t = 0; t < 300000000; t += 999983) {
		int64_t ns = tsc_map_ns(&m, t);
		back += ns < prev;
		prev = ns;
	}
	CHECK_INT_EQ(back, 0);
	tsc_map_release(&m);
}

TEST(map_ignores_stale_knots, "a knot older than the last one, or too close to it, changes nothing")
{
	struct tsc_map m = TSC_MAP_INIT;
	tsc_map_add(&m, 1000, 1000);
	tsc_map_add(&m, 1000 + 100000000ULL, 1000 + 100000000LL);
	tsc_map_add(&m, 500, 12345);
	tsc_map_add(&m, 1000 + 100000001ULL, 1000 + 100000000LL + 5);
	CHECK_INT_EQ((int64_t)m.n, 2);
	tsc_map_release(&m);
}

TEST(map_real_counter, "on this machine's counter the map agrees with CLOCK_MONOTONIC within 50 us")
{
	if (!tsc_usable())
		SKIP("the time-stamp counter is not a clock here (no constant_tsc/nonstop_tsc, or "
		     "another clocksource)");
	struct tsc_map m = TSC_MAP_INIT;
	uint64_t tsc;
	int64_t ns;
	REQUIRE(!tsc_pair(&tsc, &ns));
	tsc_map_add(&m, tsc, ns);
	struct timespec ts = { 0, 30 * NS_PER_MS };
	nanosleep(&ts, NULL);
	REQUIRE(!tsc_pair(&tsc, &ns));
	tsc_map_add(&m, tsc, ns);
	nanosleep(&ts, NULL);
	uint64_t t = tsc_read_ordered();
	int64_t mono = clock_mono_ns();
	int64_t mapped = tsc_map_ns(&m, t);
	/* A loose bound: the test is about units and offsets, not the machine's load. */
	CHECK(mapped - mono < 50000 && mono - mapped < 50000);
	tsc_map_release(&m);
}

CHECK_MAIN()
