/* sonde_regions: a program that names its regions with include/sonde.h (no
 * NVTX), with its own clock around each, for test_regions. Writes to
 * argv[1] one line per region: "name a b c d", the region's opening call
 * ran between a and b (CLOCK_MONOTONIC) and its closing call between c and
 * d. Regions, all on the main thread: "load" (60 ms busy) holding "parse"
 * (20 ms), then "train" (120 ms busy). With no argument it only runs them
 * (the cost of sonde.h without sonde). */
#include "../../include/sonde.h"

#include <stdio.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile double sink;

/* Busy for ms: the region's samples fall in this function. */
static __attribute__((noinline)) void spin_ms(int ms)
{
	long long until = now_ns() + (long long)ms * 1000000LL;
	double x = 1;
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
}

int main(int argc, char **argv)
{
	FILE *out = argc > 1 ? fopen(argv[1], "w") : NULL;
	long long load[4], parse[4], train[4];
	if (argc > 1 && !out)
		return 2;
	load[0] = now_ns();
	SONDE_REGION_BEGIN("load");
	load[1] = now_ns();
	spin_ms(40);
	parse[0] = now_ns();
	sonde_region_push("parse");
	parse[1] = now_ns();
	spin_ms(20);
	parse[2] = now_ns();
	sonde_region_pop();
	parse[3] = now_ns();
	load[2] = now_ns();
	SONDE_REGION_END();
	load[3] = now_ns();
	train[0] = now_ns();
	SONDE_REGION_BEGIN("train");
	train[1] = now_ns();
	spin_ms(120);
	train[2] = now_ns();
	SONDE_REGION_END();
	train[3] = now_ns();
	if (out) {
		fprintf(out, "load %lld %lld %lld %lld\n", load[0], load[1], load[2], load[3]);
		fprintf(out, "parse %lld %lld %lld %lld\n", parse[0], parse[1], parse[2], parse[3]);
		fprintf(out, "train %lld %lld %lld %lld\n", train[0], train[1], train[2], train[3]);
		fclose(out);
	}
	return 0;
}
