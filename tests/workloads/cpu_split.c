/* cpu_split [SECONDS]: spends about SECONDS (default 2) of its own CPU time in
 * three functions, split_a 50%, split_b 30% and split_c 20%, in interleaved
 * slices of varying length (none lines up with a sampling period), and
 * prints the split it measured with the thread's CPU clock:
 * "split a=<pct> b=<pct> c=<pct>". The ground truth for attribution tests. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double cpu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Each spins until its thread has used `seconds` more CPU time; returns what it used. */
__attribute__((noipa)) static double split_a(double seconds)
{
	double t0 = cpu_now_s(), t, x = 0;
	do {
		for (int i = 1; i <= 500; i++)
			x += 1.0 / (double)i;
		t = cpu_now_s();
	} while (t - t0 < seconds);
	sink = x;
	return t - t0;
}

__attribute__((noipa)) static double split_b(double seconds)
{
	double t0 = cpu_now_s(), t, x = 1;
	do {
		for (int i = 1; i <= 500; i++)
			x = x * 1.0000001 + 1e-9;
		t = cpu_now_s();
	} while (t - t0 < seconds);
	sink = x;
	return t - t0;
}

__attribute__((noipa)) static double split_c(double seconds)
{
	double t0 = cpu_now_s(), t;
	unsigned long h = 1469598103934665603UL;
	do {
		for (int i = 0; i < 500; i++)
			h = (h ^ (unsigned long)i) * 1099511628211UL;
		t = cpu_now_s();
	} while (t - t0 < seconds);
	sink = (double)h;
	return t - t0;
}

int main(int argc, char **argv)
{
	double total = argc > 1 ? atof(argv[1]) : 2.0, used[3] = { 0, 0, 0 };
	unsigned long rnd = 12345;
	while (used[0] + used[1] + used[2] < total) {
		/* A round of 3 to 17 ms of CPU, split 5:3:2. */
		rnd = rnd * 6364136223846793005UL + 1442695040888963407UL;
		double round_s = 0.003 + (double)(rnd >> 33) / (double)(1UL << 31) * 0.014;
		used[0] += split_a(0.5 * round_s);
		used[1] += split_b(0.3 * round_s);
		used[2] += split_c(0.2 * round_s);
	}
	double sum = used[0] + used[1] + used[2];
	printf("split a=%.2f b=%.2f c=%.2f\n", 100 * used[0] / sum, 100 * used[1] / sum,
	       100 * used[2] / sum);
	return 0;
}
