/* cpu_short_threads [N [MS [AT_ONCE]]]: runs N threads (default 2000), AT_ONCE
 * at a time (default 4), each spinning about MS milliseconds (default 2) of
 * its own CPU time in short_work(), while main only creates and joins them: a
 * sampler must see threads however short they live. N 0 runs batches forever
 * (a thread-per-request server to attach to). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noipa)) static double short_work(double seconds)
{
	double x = 0, end = thread_cpu_s() + seconds;
	do {
		for (int i = 1; i <= 2000; i++)
			x += 1.0 / ((double)i + x);
	} while (thread_cpu_s() < end);
	return x;
}

static double thread_ms = 2;

static void *worker(void *arg)
{
	double *out = arg;
	*out = short_work(thread_ms / 1000.0);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	if (argc > 2)
		thread_ms = atof(argv[2]);
	int at_once = argc > 3 ? atoi(argv[3]) : 4;
	if (at_once < 1 || at_once > 64)
		at_once = 4;
	double sum = 0;
	for (int i = 0; n == 0 || i < n; i += at_once) {
		pthread_t t[64];
		double res[64] = { 0 };
		int k = n && n - i < at_once ? n - i : at_once;
		for (int j = 0; j < k; j++)
			if (pthread_create(&t[j], NULL, worker, &res[j]))
				return 1;
		for (int j = 0; j < k; j++) {
			pthread_join(t[j], NULL);
			sum += res[j];
		}
	}
	printf("cpu_short_threads: %d threads, %f\n", n, sum);
	return 0;
}
