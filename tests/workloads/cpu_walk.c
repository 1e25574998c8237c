/* cpu_walk: two functions do the same work, summing a large array through an
 * index; ordered_walk's index is 0,1,2,..., shuffled_walk's is a random
 * permutation. The shuffled walk misses the caches and must get the most
 * samples. Built with frame pointers (see CMakeLists.txt). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N (8u << 20)

/* A call keeps walk from being a leaf: gcc 12 drops the frame pointer of leaf
 * functions even with -mno-omit-leaf-frame-pointer. */
__attribute__((noipa)) uint64_t finish(uint64_t sum)
{
	return sum ^ 1;
}

__attribute__((noipa)) uint64_t walk(const uint32_t *data, const uint32_t *idx)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < N; i++)
		sum += data[idx[i]];
	return finish(sum) + 3;
}

__attribute__((noipa)) uint64_t ordered_walk(const uint32_t *data, const uint32_t *idx)
{
	return walk(data, idx) + 1;
}

__attribute__((noipa)) uint64_t shuffled_walk(const uint32_t *data, const uint32_t *idx)
{
	return walk(data, idx) + 2;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 4;
	uint32_t *data = malloc(N * sizeof(*data));
	uint32_t *ordered = malloc(N * sizeof(*ordered));
	uint32_t *shuffled = malloc(N * sizeof(*shuffled));
	if (!data || !ordered || !shuffled)
		return 1;
	uint64_t seed = 88172645463325252ull;
	for (uint32_t i = 0; i < N; i++) {
		data[i] = i * 2654435761u;
		ordered[i] = shuffled[i] = i;
	}
	for (uint32_t i = N - 1; i > 0; i--) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		uint32_t j = (uint32_t)(seed % (i + 1));
		uint32_t t = shuffled[i];
		shuffled[i] = shuffled[j];
		shuffled[j] = t;
	}
	uint64_t total = 0;
	for (int r = 0; r < rounds; r++) {
		total += ordered_walk(data, ordered);
		total += shuffled_walk(data, shuffled);
	}
	printf("cpu_walk: %llu\n", (unsigned long long)total);
	free(data);
	free(ordered);
	free(shuffled);
	return 0;
}
