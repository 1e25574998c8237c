/* tsc: the x86 time-stamp counter as a cheap clock, and the map that turns its
 * ticks into CLOCK_MONOTONIC nanoseconds.
 *
 * A counter read costs a few nanoseconds against 20-30 for clock_gettime, which
 * matters to the allocation agent (two stamps per malloc/free pair). It is a
 * clock only when the kernel trusts it: constant rate (constant_tsc), running
 * in every C-state (nonstop_tsc) and the kernel's clocksource (so it is in step
 * on every CPU). tsc_read() and tsc_read_ordered() are header-only so that the
 * agent, which links nothing of sonde, can use them. */
#ifndef SONDE_TSC_H
#define SONDE_TSC_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#define TSC_SUPPORTED 1
#else
#define TSC_SUPPORTED 0
#endif

/* The counter now; 0 where there is none. May execute before earlier loads
 * complete: stamp with it before the work the time must precede. */
static inline uint64_t tsc_read(void)
{
#if TSC_SUPPORTED
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

/* The counter after every earlier instruction has executed and every earlier
 * load is globally visible (rdtscp): stamp with it after the work the time
 * must follow. */
static inline uint64_t tsc_read_ordered(void)
{
#if TSC_SUPPORTED
	uint32_t lo, hi, aux;
	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

/* 1 when the counter is a clock here (see above); 0 otherwise. Reads /proc
 * and /sys. */
int tsc_usable(void);

/* A (counter, CLOCK_MONOTONIC ns) pair read close together: the counter is
 * read on both sides of the clock and the tightest of a few tries is kept.
 * Returns 0, or -1 where there is no counter. */
int tsc_pair(uint64_t *tsc, int64_t *ns);

/* Counter ticks to nanoseconds, piecewise linear through knots (pairs from
 * tsc_pair()) and monotonic: a later tick never maps to an earlier time, so
 * events stamped on different CPUs keep their order. Past the last knot it
 * extrapolates at the mean rate of the knots it holds; a knot added later
 * never moves a time already handed out before it (the map goes on from the
 * furthest point it extrapolated to). It keeps the latest TSC_MAP_KNOTS knots,
 * at least TSC_MAP_SPACING_NS apart. */
#define TSC_MAP_KNOTS 4096
#define TSC_MAP_SPACING_NS 20000000LL

struct tsc_knot {
	uint64_t tsc;
	int64_t ns;
	double slope; /* ns per tick to the next knot */
};

struct tsc_map {
	struct tsc_knot *knots;
	size_t n;
	double rate; /* ns per tick, first knot to last (1 with fewer than two) */
	size_t hint; /* the segment of the last interpolated tick */
	uint64_t front_tsc; /* furthest tick converted past the last knot (0: none) */
	int64_t front_ns;
};

#define TSC_MAP_INIT { NULL, 0, 1.0, 0, 0, 0 }

void tsc_map_add(struct tsc_map *m, uint64_t tsc, int64_t ns);
/* With no knot, ticks are returned as they are. */
int64_t tsc_map_ns(struct tsc_map *m, uint64_t tsc);
void tsc_map_release(struct tsc_map *m);

#endif
