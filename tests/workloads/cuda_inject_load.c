/* cuda_inject_load: does what the CUDA driver does with CUDA_INJECTION64_PATH
 * (dlopen the library, call its InitializeInjection), on a machine that may
 * have no driver: argv[1] is the agent. Prints "returned N" and exits 0, 1
 * when the library or its entry point is missing. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cuda_inject_load AGENT.so\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "no InitializeInjection in %s\n", argv[1]);
		return 1;
	}
	printf("returned %d\n", init());
	return 0;
}
