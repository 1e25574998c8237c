/* cpu_vdso: spends its time reading the clock, which the kernel serves from
 * the vDSO without a system call: "[vdso]" frames must be named. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000L;
	struct timespec ts;
	long long sum = 0;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += ts.tv_nsec & 1;
	}
	printf("cpu_vdso: %lld\n", sum);
	return 0;
}
