/* alloc_churn: pure allocation churn that times itself, for bench/memory_overhead.py.
 *
 * argv[1] millions of iterations (default 2, fractions allowed); each frees one of 64 live
 * blocks and allocates a new one of 16 to 527 bytes. Prints elapsed_s=. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 64

static void *volatile sink;

__attribute__((noinline)) static void *make_block(size_t n)
{
	char *p = malloc(n);
	if (p)
		p[0] = (char)n;
	return p;
}

__attribute__((noinline)) static void churn(long iterations)
{
	void *slot[SLOTS] = { 0 };
	uint32_t x = 2463534242u;
	for (long i = 0; i < iterations; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		size_t k = x % SLOTS;
		free(slot[k]);
		slot[k] = make_block(16 + (x >> 8) % 512);
	}
	for (size_t k = 0; k < SLOTS; k++) {
		sink = slot[k];
		free(slot[k]);
	}
}

int main(int argc, char **argv)
{
	double m = argc > 1 ? atof(argv[1]) : 2;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	churn((long)(m * 1e6));
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("elapsed_s=%.6f\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
