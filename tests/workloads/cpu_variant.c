/* cpu_variant: the same program before and after an optimisation, for
 * `sonde compare`. "slow" runs hot_a then hot_b (about equal work); "fast"
 * runs hot_b alike and a twentieth of hot_a (still sampled, much smaller).
 * Fixed work, not fixed time, so a loaded machine changes only the duration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;

/* A chain of dependent divisions: slow per iteration, nothing to vectorise. */
__attribute__((noinline)) static double hot_a(long n)
{
	double acc = 3.0;
	for (long k = 0; k < n; k++)
		acc = 1.0 + 1.0 / (acc + (double)(k & 7));
	return acc;
}

/* A xorshift chain: dependent integer work. */
__attribute__((noinline)) static double hot_b(long n)
{
	unsigned long s = 88172645463325252UL;
	for (long k = 0; k < n; k++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
	}
	return (double)(s & 0xffff);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "slow") && strcmp(argv[1], "fast"))) {
		fprintf(stderr, "usage: cpu_variant slow|fast [million iterations, default 300]\n");
		return 2;
	}
	int slow = !strcmp(argv[1], "slow");
	long m = argc > 2 ? atol(argv[2]) : 300;
	for (long round = 0; round < m / 10; round++) {
		sink = hot_a((slow ? 5000000 : 250000) + round);
		sink = hot_b(10000000 + round);
	}
	return 0;
}
