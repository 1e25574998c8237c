/* perf_choose_timer_period_ns: a timer event's samples never keep step with
 * the kernel's tick, whose 1 ms grid the scheduler switches tasks on. */
#include "check.h"
#include "probes/perf_choose.h"

#include <stdint.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The widest stretch of the 1 ms grid (ns) that none of the first n samples
 * of a timer every period_ns falls on. */
static uint64_t widest_gap_ns(uint64_t period_ns, size_t n)
{
	uint64_t *at = malloc((n + 1) * sizeof(*at));
	if (!at)
		return UINT64_MAX;
	for (size_t k = 0; k < n; k++)
		at[k] = (uint64_t)k * period_ns % 1000000;
	qsort(at, n, sizeof(*at), cmp_u64);
	uint64_t widest = at[0] + 1000000 - at[n - 1];
	for (size_t k = 1; k < n; k++)
		if (at[k] - at[k - 1] > widest)
			widest = at[k] - at[k - 1];
	free(at);
	return widest;
}

TEST(thousand_hz_stretched, "1000 Hz, in step with a 1000 Hz tick, samples every 1.0039 ms")
{
	CHECK(perf_choose_timer_period_ns(1000) == 1003906);
	CHECK(perf_choose_timer_period_ns(4000) == 250976);
	CHECK(perf_choose_timer_period_ns(100) == 10039062);
}

TEST(odd_rates_kept, "99 Hz and 997 Hz, whose samples fall on many places of the grid, are kept")
{
	CHECK(perf_choose_timer_period_ns(99) == 1000000000 / 99);
	CHECK(perf_choose_timer_period_ns(997) == 1000000000 / 997);
	CHECK(perf_choose_timer_period_ns(0) == 0);
}

TEST(every_rate_sweeps, "at every rate from 50 to 10000 Hz, a second of samples (200 at "
			"least) leaves no gap wider than 0.1 ms on the tick's grid")
{
	for (int hz = 50; hz <= 10000; hz++) {
		uint64_t period_ns = perf_choose_timer_period_ns(hz);
		uint64_t gap_ns = widest_gap_ns(period_ns, (size_t)(hz > 200 ? hz : 200));
		if (gap_ns > 100000) {
			char what[96];
			snprintf(what, sizeof(what), "%d Hz (period %llu ns) leaves a %llu ns gap", hz,
				 (unsigned long long)period_ns, (unsigned long long)gap_ns);
			CHECK_NAMED(what, gap_ns <= 100000);
			return;
		}
		CHECK(period_ns >= 1000000000ULL / (uint64_t)hz); /* never faster than asked */
	}
}

TEST(timer_events_known, "cpu-clock and task-clock are timers; page-faults and cycles are not")
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK };
	CHECK(perf_choose_is_timer(&a));
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	CHECK(perf_choose_is_timer(&a));
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	CHECK(!perf_choose_is_timer(&a));
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	CHECK(!perf_choose_is_timer(&a));
}

CHECK_MAIN()
