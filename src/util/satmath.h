/* satmath: int64 arithmetic that saturates instead of overflowing, for sums
 * and differences of numbers read from a recording (which may hold anything). */
#ifndef SONDE_SATMATH_H
#define SONDE_SATMATH_H

#include <stdint.h>

static inline int64_t sat_add_i64(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t sat_sub_i64(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

#endif
