/* alloc_rss: allocates and touches the given MiB (default 200), holds them for
 * half a second, frees them, and idles a little: peak RSS has a known answer. */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 200;
	size_t n = mib << 20;
	volatile char *p = malloc(n);
	if (!p)
		return 1;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	usleep(500000);
	free((void *)p);
	usleep(200000);
	return 0;
}
