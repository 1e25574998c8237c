/* alloc_step: one function makes a large allocation step while another burns
 * the CPU, so what allocates and what runs differ. spin_worker spins on its own
 * thread the whole time; after 0.4 s load_table mallocs the given MiB (default
 * 192) and touches it in 8 MiB steps 25 ms apart (little CPU of its own),
 * holds it 0.4 s and frees it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024UL * 1024UL)

static atomic_int stop;
static volatile unsigned long sink;

__attribute__((noinline)) static void *spin_worker(void *arg)
{
	(void)arg;
	unsigned long x = 1;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
	return NULL;
}

__attribute__((noinline)) static char *load_table(size_t mib)
{
	char *p = malloc(mib * MIB);
	if (!p)
		exit(1);
	for (size_t off = 0; off < mib * MIB; off += 8 * MIB) {
		for (size_t i = off; i < off + 8 * MIB && i < mib * MIB; i += 4096)
			p[i] = 1;
		usleep(25000);
	}
	return p;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 192;
	pthread_t t;
	if (pthread_create(&t, NULL, spin_worker, NULL))
		return 1;
	usleep(400000);
	char *table = load_table(mib);
	usleep(400000);
	free(table);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	return 0;
}
