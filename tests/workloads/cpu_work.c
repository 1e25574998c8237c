/* cpu_work: a fixed amount of CPU work (argv[1] million iterations, default
 * 400) spread over three functions, timing itself: its last line is
 * "elapsed_s=<seconds>". Benchmarks compare that time with and without a
 * profiler; fixed work (not fixed time) makes the slowdown visible. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

__attribute__((noinline)) static double work_a(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / (double)i;
	return x;
}

__attribute__((noinline)) static double work_b(long n)
{
	double x = 1;
	for (long i = 1; i <= n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

__attribute__((noinline)) static double work_c(long n)
{
	unsigned long h = 1469598103934665603UL;
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 1099511628211UL;
	return (double)h;
}

int main(int argc, char **argv)
{
	long m = argc > 1 ? atol(argv[1]) : 400;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long round = 0; round < m / 10; round++) {
		sink = work_a(5000000 + round);
		sink = work_b(3000000 + round);
		sink = work_c(2000000 + round);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("elapsed_s=%.6f\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
