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
