/* cpu_nofp: main -> nofp_caller -> nofp_leaf, built -O2 -fomit-frame-pointer
 * (see CMakeLists.txt): frame-pointer stacks break here, DWARF unwinding must
 * still find all three. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noipa)) double nofp_leaf(long n, double seed)
{
	double x = seed;
	for (long i = 1; i <= n; i++)
		x = x * 0.999999 + 1.0 / (double)i;
	return x;
}

__attribute__((noipa)) double nofp_caller(long rounds)
{
	double acc = 0;
	for (long r = 0; r < rounds; r++)
		acc += nofp_leaf(2000000, acc) * 0.5; /* used after the call: no tail call */
	return acc;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 150;
	printf("cpu_nofp: %f\n", nofp_caller(rounds));
	return 0;
}
