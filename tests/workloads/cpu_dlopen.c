/* cpu_dlopen: loads zlib with dlopen after start-up (it is not linked in) and
 * spends its time in zlib's crc32: the library's mapping is only known from
 * the mmap record sent at dlopen time. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long (*crc32_fn)(unsigned long crc, const unsigned char *buf, unsigned len);

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!z) {
		fprintf(stderr, "cpu_dlopen: %s\n", dlerror());
		return 77;
	}
	crc32_fn crc32;
	void *sym = dlsym(z, "crc32");
	memcpy(&crc32, &sym, sizeof(crc32));
	if (!crc32)
		return 77;
	size_t n = 4u << 20;
	unsigned char *buf = malloc(n);
	if (!buf)
		return 1;
	memset(buf, 0x5a, n);
	unsigned long crc = 0;
	for (int r = 0; r < rounds; r++)
		crc = crc32(crc, buf, (unsigned)n);
	printf("cpu_dlopen: %lx\n", crc);
	free(buf);
	dlclose(z);
	return 0;
}
