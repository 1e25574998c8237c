/* demo: the bundled example `make demo` profiles. It computes for a while,
 * holds 64 MiB for a moment, then waits on a sleep: a report shows all three. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double spin(long iters)
{
	double x = 0;
	for (long i = 1; i <= iters; i++)
		x += 1.0 / ((double)i * (double)i);
	return x;
}

int main(void)
{
	printf("demo: computing\n");
	fflush(stdout);
	double x = spin(150000000L);
	printf("demo: sum = %.6f\n", x);
	size_t n = 64u << 20;
	char *buf = malloc(n);
	if (!buf)
		return 1;
	volatile char *touch = buf; /* volatile: the compiler may not skip the pages */
	for (size_t i = 0; i < n; i += 4096)
		touch[i] = 1;
	printf("demo: holding 64 MiB\n");
	fflush(stdout);
	usleep(300000);
	free(buf);
	printf("demo: waiting\n");
	fflush(stdout);
	usleep(1200000);
	printf("demo: done\n");
	return 0;
}
