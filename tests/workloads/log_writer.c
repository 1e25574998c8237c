/* log_writer: a request handler that logs the way quick code does: each
 * request's access-log line goes out with its own write(2), unbuffered, to
 * DIR/access.log, and the log is fsync'd every FSYNC_EVERY lines; before
 * each batch it looks for an override file that is not there (open fails
 * with ENOENT). Its last line is JSON: {"writes": N, "fsyncs": K,
 * "missing_opens": M, "write_bytes": B, "elapsed_s": S}, what it did, for
 * the tests to check the counts against (and its own wall time, for
 * bench/syscall_cost.py).
 *
 * usage: log_writer DIR [REQUESTS] (default 100000) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FSYNC_EVERY 20000
#define BATCH 250

/* Kept whole, as the tests look for these names. */
#if defined(__clang__)
#define STAGE __attribute__((noinline))
#else
#define STAGE __attribute__((noipa))
#endif

static long writes, fsyncs, missing_opens, write_bytes;

STAGE static void log_line(int fd, const char *line, size_t len)
{
	ssize_t n = write(fd, line, len);
	if (n < 0) {
		perror("write");
		exit(1);
	}
	writes++;
	write_bytes += n;
}

STAGE static unsigned handle_request(unsigned id)
{
	unsigned h = id * 2654435761u;
	for (int i = 0; i < 50; i++)
		h = (h ^ (h >> 13)) * 0x5bd1e995u;
	return h % 1000;
}

STAGE static int override_present(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/override.conf", dir);
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		missing_opens += errno == ENOENT;
		return 0;
	}
	close(fd);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: log_writer DIR [REQUESTS]\n");
		return 2;
	}
	long requests = argc > 2 ? atol(argv[2]) : 100000;
	char path[4096];
	snprintf(path, sizeof(path), "%s/access.log", argv[1]);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < requests; i++) {
		if (i % BATCH == 0)
			override_present(argv[1]);
		char line[128];
		int n = snprintf(line, sizeof(line), "GET /item/%ld 200 %u\n", i,
				 handle_request((unsigned)i));
		log_line(fd, line, (size_t)n);
		if ((i + 1) % FSYNC_EVERY == 0) {
			fsync(fd);
			fsyncs++;
		}
	}
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("{\"writes\": %ld, \"fsyncs\": %ld, \"missing_opens\": %ld, \"write_bytes\": %ld, "
	       "\"elapsed_s\": %.6f}\n",
	       writes, fsyncs, missing_opens, write_bytes,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
