/* cpu_split: a native job whose CPU time splits between three functions
 * called in turn for each block of input (checksum_block, decode_block,
 * score_block, about 0.05-0.5 ms each, on blocks of varying length) for argv[1] seconds of CPU time
 * (default 3). It times its stages with the thread's CPU clock, the ground
 * truth: its last line is JSON {"shares": {"checksum_block": s, ...},
 * "cpu_s": ...} (shares of the CPU time spent in the three). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCK_BYTES 65536

/* Each stage stays one function of its own name: GCC would otherwise clone
 * them (checksum_block.constprop.0), and the tests look for these names. */
#if defined(__clang__)
#define STAGE __attribute__((noinline))
#else
#define STAGE __attribute__((noipa))
#endif

static volatile uint64_t sink;

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* FNV-1a over the block, twice (as a verifier would). */
STAGE static uint64_t checksum_block(const unsigned char *b, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

/* Varint-decodes the block into values. */
STAGE static size_t decode_block(const unsigned char *b, size_t n, uint32_t *out)
{
	size_t k = 0;
	uint32_t v = 0;
	int shift = 0;
	for (size_t i = 0; i < n; i++) {
		v |= (uint32_t)(b[i] & 0x7f) << shift;
		if (b[i] & 0x80 && shift < 28) {
			shift += 7;
			continue;
		}
		out[k++] = v;
		v = 0;
		shift = 0;
	}
	return k;
}

/* A running score over the decoded values (floating point). */
STAGE static double score_block(const uint32_t *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s = s * 0.999 + (double)(v[i] % 1000) / (1.0 + (double)(v[i] & 7));
	return s;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	unsigned char *block = malloc(BLOCK_BYTES);
	uint32_t *values = malloc(BLOCK_BYTES * sizeof(*values));
	if (!block || !values)
		return 1;
	uint64_t x = 88172645463325252ULL;
	for (size_t i = 0; i < BLOCK_BYTES; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		block[i] = (unsigned char)x;
	}
	double spent[3] = { 0, 0, 0 }, start = thread_cpu_s(), t0, t1, t2, t3;
	long blocks = 0;
	while (thread_cpu_s() - start < seconds) {
		/* Records vary in length, as real input does (blocks of one fixed
		 * length would make every round last the same and fall in step
		 * with a 1 kHz sampler). */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t len = BLOCK_BYTES / 4 + (size_t)(x % (3 * BLOCK_BYTES / 4));
		t0 = thread_cpu_s();
		sink += checksum_block(block, len);
		t1 = thread_cpu_s();
		size_t n = decode_block(block, len, values);
		t2 = thread_cpu_s();
		sink += (uint64_t)score_block(values, n);
		t3 = thread_cpu_s();
		spent[0] += t1 - t0, spent[1] += t2 - t1, spent[2] += t3 - t2;
		block[blocks++ % BLOCK_BYTES] ^= 1;
	}
	double total = spent[0] + spent[1] + spent[2];
	printf("%ld blocks\n", blocks);
	printf("{\"shares\": {\"checksum_block\": %.6f, \"decode_block\": %.6f, \"score_block\": %.6f},"
	       " \"cpu_s\": %.6f}\n", spent[0] / total, spent[1] / total, spent[2] / total, total);
	free(block);
	free(values);
	return 0;
}
