/* offcpu_wait: a thread that alternates SPIN_MS of computing with SLEEP_MS
 * asleep in nap_ms (nanosleep), CYCLES times, and prints how long it slept
 * and lived by its own clock: the known answer for off-CPU accounting.
 * usage: offcpu_wait SPIN_MS SLEEP_MS CYCLES [thread]; with "thread" the loop
 * runs in a second thread while main waits for it in pthread_join. The last
 * line is elapsed_s=SECONDS, for bench/overhead.py. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long spin_ms, sleep_ms, cycles;
static volatile double sink;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noipa)) static void spin_for(long ms)
{
	long long end = now_ns() + ms * 1000000LL;
	double x = 0;
	while (now_ns() < end)
		for (int i = 1; i < 1000; i++)
			x += 1.0 / (i + x);
	sink = x;
}

__attribute__((noipa)) static long long nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	long long t0 = now_ns();
	nanosleep(&ts, NULL);
	return now_ns() - t0;
}

static void *work_loop(void *arg)
{
	(void)arg;
	long long t0 = now_ns(), slept = 0;
	for (long i = 0; i < cycles; i++) {
		spin_for(spin_ms);
		slept += nap_ms(sleep_ms);
	}
	printf("worker tid=%ld sleep_ns=%lld wall_ns=%lld\n", (long)syscall(SYS_gettid), slept,
	       now_ns() - t0);
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long long t0 = now_ns();
	spin_ms = atol(argv[1]);
	sleep_ms = atol(argv[2]);
	cycles = atol(argv[3]);
	if (argc > 4 && !strcmp(argv[4], "thread")) {
		pthread_t t;
		if (pthread_create(&t, NULL, work_loop, NULL))
			return 1;
		pthread_join(t, NULL);
	} else {
		work_loop(NULL);
	}
	printf("elapsed_s=%.6f\n", (double)(now_ns() - t0) / 1e9); /* for bench/overhead.py */
	return 0;
}
