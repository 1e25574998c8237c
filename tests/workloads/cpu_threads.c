/* cpu_threads: three threads spin in thread_spin while main waits for them:
 * a sampler must see every thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3

__attribute__((noipa)) static double thread_spin(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / ((double)i + x);
	return x;
}

static void *worker(void *arg)
{
	double *out = arg;
	*out = thread_spin(60000000L);
	return NULL;
}

int main(void)
{
	pthread_t t[NTHREADS];
	double res[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, &res[i]))
			return 1;
	double sum = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		sum += res[i];
	}
	printf("cpu_threads: %f\n", sum);
	return 0;
}
