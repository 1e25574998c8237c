/* clock: thin wrappers over clock_gettime. */
#include "clock.h"

#include <time.h>

static int64_t clock_read(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int64_t clock_mono_ns(void)
{
	return clock_read(CLOCK_MONOTONIC);
}

int64_t clock_real_ns(void)
{
	return clock_read(CLOCK_REALTIME);
}

void clock_anchor(int64_t *mono_ns, int64_t *real_ns)
{
	int64_t best_gap = -1;
	for (int i = 0; i < 5; i++) {
		int64_t a = clock_mono_ns(), r = clock_real_ns(), b = clock_mono_ns();
		if (best_gap < 0 || b - a < best_gap) {
			best_gap = b - a;
			*mono_ns = a + (b - a) / 2;
			*real_ns = r;
		}
	}
}
