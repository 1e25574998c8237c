/* alloc_mmap: anonymous mappings with known answers for the allocation
 * tracker. leak_mapping maps 24 MiB, unmaps the middle 8 MiB and leaks the two
 * 8 MiB pieces (16 MiB leaked); peak_mapping maps 64 MiB, which with the leak
 * is the heap peak (80 MiB), unmaps its first 16 MiB, then the rest;
 * grow_mapping grows 8 MiB to 24 MiB with mremap and unmaps it; malloc_big
 * mallocs 32 MiB (glibc maps it itself: it must count once); shared_mapping
 * maps 4 MiB shared and anonymous, and unmaps it; a file mapping and a 256 MiB
 * PROT_NONE reservation are not heap. With "threads", four
 * threads map and unmap 2000 mappings of 64 KiB each (half of them in two
 * partial unmaps) at the same time and leak nothing; 16 MiB leak as before.
 * With "fork", the parent maps 4 MiB in parent_mapping and forks; the child
 * unmaps its copy (not its allocation), leaks 8 MiB in child_mapping and
 * exits; the parent unmaps its own after the child is done. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024UL * 1024UL)

static void touch(char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
}

static inline __attribute__((always_inline)) char *map_anon(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	touch(p, n);
	return p;
}

__attribute__((noinline)) static void leak_mapping(void)
{
	char *p = mmap(NULL, 24 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	touch(p, 24 * MIB);
	munmap(p + 8 * MIB, 8 * MIB);
}

__attribute__((noinline)) static char *peak_mapping(void)
{
	char *p = mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	touch(p, 64 * MIB);
	usleep(100000);
	munmap(p, 16 * MIB);
	return p + 16 * MIB;
}

__attribute__((noinline)) static void grow_mapping(void)
{
	char *p = map_anon(8 * MIB);
	char *q = mremap(p, 8 * MIB, 24 * MIB, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		exit(1);
	touch(q, 24 * MIB);
	munmap(q, 24 * MIB);
}

__attribute__((noinline)) static void malloc_big(void)
{
	char *p = malloc(32 * MIB);
	if (!p)
		exit(1);
	touch(p, 32 * MIB);
	free(p);
}

__attribute__((noinline)) static void shared_mapping(void)
{
	char *p = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	touch(p, 4 * MIB);
	munmap(p, 4 * MIB);
}

__attribute__((noinline)) static void not_heap(const char *self)
{
	void *r = mmap(NULL, 256 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int fd = open(self, O_RDONLY);
	if (fd >= 0) {
		void *f = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		if (f != MAP_FAILED)
			munmap(f, 4096);
		close(fd);
	}
	if (r != MAP_FAILED)
		munmap(r, 256 * MIB);
}

__attribute__((noinline)) static void *churn_mappings(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++) {
		char *p = map_anon(64 * 1024);
		if (i & 1) {
			munmap(p + 16 * 1024, 48 * 1024);
			munmap(p, 16 * 1024);
		} else {
			munmap(p, 64 * 1024);
		}
	}
	return NULL;
}

__attribute__((noinline)) static char *parent_mapping(void)
{
	return map_anon(4 * MIB);
}

__attribute__((noinline)) static void child_mapping(void)
{
	map_anon(8 * MIB);
}

static int forked(void)
{
	char *p = parent_mapping();
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		munmap(p, 4 * MIB);
		child_mapping();
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	munmap(p, 4 * MIB);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "fork"))
		return forked();
	if (argc > 1 && !strcmp(argv[1], "threads")) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, churn_mappings, NULL))
				return 1;
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		leak_mapping();
		return 0;
	}
	not_heap(argv[0]);
	leak_mapping();
	char *rest = peak_mapping();
	usleep(100000);
	munmap(rest, 48 * MIB);
	grow_mapping();
	malloc_big();
	shared_mapping();
	return 0;
}
