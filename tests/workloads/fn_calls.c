/* fn_calls: calls fn_work exactly N times (argv[1]), from two callers
 * (from_loop: every call but each fifth, from_fifth: each fifth), each call
 * busy for about 200 us + 100 us * (i % 4), and times each call itself on
 * CLOCK_MONOTONIC. argv[2]: a file where it writes one line per call, the
 * nanoseconds it measured, so a test can compare sonde's latencies with the
 * program's own clock. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Busy for us microseconds: CPU work, so its time does not depend on sleeps. */
__attribute__((noinline, used)) double fn_work(int us)
{
	long long end = now_ns() + us * 1000LL;
	volatile double x = 1.0;
	while (now_ns() < end)
		for (int k = 0; k < 50; k++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

static long long *took;
static volatile int fifths;

__attribute__((noinline)) static void from_loop(int i)
{
	long long t0 = now_ns();
	fn_work(200 + 100 * (i % 4));
	took[i] = now_ns() - t0;
	__asm__ volatile("" ::: "memory"); /* keep the call out of a tail position */
}

__attribute__((noinline)) static void from_fifth(int i)
{
	fifths++; /* unlike from_loop, so that the two are not folded into one */
	long long t0 = now_ns();
	fn_work(200 + 100 * (i % 4));
	took[i] = now_ns() - t0;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	if (n < 1)
		return 2;
	took = calloc((size_t)n, sizeof(*took));
	if (!took)
		return 1;
	for (int i = 0; i < n; i++) {
		if (i % 5 == 4)
			from_fifth(i);
		else
			from_loop(i);
	}
	FILE *f = argc > 2 ? fopen(argv[2], "w") : NULL;
	for (int i = 0; f && i < n; i++)
		fprintf(f, "%lld\n", took[i]);
	if (f)
		fclose(f);
	printf("fn_work called %d times\n", n);
	free(took);
	return 0;
}
