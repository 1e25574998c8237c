/* cpu_jit: "JIT-compiles" a counting loop into anonymous executable memory,
 * announces it in /tmp/perf-PID.map as jit_count_down, and runs it for about a
 * second. The generated code keeps a frame pointer, as JITs do, and main is
 * built with frame pointers (see CMakeLists.txt), so main is its caller with
 * either unwinder. The map file is left behind for the profiler (as JITs do);
 * the test removes it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 40;
	/* push %rbp; mov %rsp,%rbp; mov %rdi,%rax; 1: dec %rax; jnz 1b; pop %rbp; ret */
	static const unsigned char code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
					      0xff, 0xc8, 0x75, 0xfb, 0x5d, 0xc3 };
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (mem == MAP_FAILED) {
		perror("cpu_jit: mmap");
		return 1;
	}
	memcpy(mem, code, sizeof(code));
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_count_down\n", (unsigned long)(uintptr_t)mem, sizeof(code));
	fclose(f);
	uint64_t (*count_down)(uint64_t);
	memcpy(&count_down, &mem, sizeof(mem));
	uint64_t sum = 0;
	for (long r = 0; r < rounds; r++)
		sum += count_down(50000000ull);
	printf("cpu_jit: %llu\n", (unsigned long long)sum);
	return 0;
}
