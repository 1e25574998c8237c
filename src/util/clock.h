/* clock: the two clocks sonde uses. All recorded times are CLOCK_MONOTONIC
 * nanoseconds relative to the run's start; wall-clock time is kept only to
 * label the run. */
#ifndef SONDE_CLOCK_H
#define SONDE_CLOCK_H

#include <stdint.h>

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL

int64_t clock_mono_ns(void);
int64_t clock_real_ns(void);
/* A CLOCK_MONOTONIC time and the CLOCK_REALTIME time of the same moment (the
 * wall-clock read between two monotonic reads, of the closest of a few tries):
 * what maps a recording's times to dates and lines up runs of other hosts. */
void clock_anchor(int64_t *mono_ns, int64_t *real_ns);

static inline double ns_to_s(int64_t ns)
{
	return (double)ns / 1e9;
}

#endif
