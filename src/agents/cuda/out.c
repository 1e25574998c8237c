/* out: the process's cuda-PID.txt (cuda_agent.h). One file per process: a
 * forked child's first write opens its own, with its own V line. */
#include "cuda_agent.h"
#include "../../probes/gpu_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static pid_t out_pid;		/* whose file out_fd is */
static char out_dir[PATH_MAX];	/* "" until out_open() */
static uint32_t out_version;
static int64_t out_errors;

/* With out_lock held. */
static int file_create(void)
{
	char path[PATH_MAX + 32], head[96];
	pid_t pid = getpid();
	if (snprintf(path, sizeof(path), "%s/cuda-%d.txt", out_dir, (int)pid) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int n = snprintf(head, sizeof(head), "V\t%d\t%d\t%u\n", GPU_WIRE_VERSION, (int)pid,
			 out_version);
	if (write(fd, head, (size_t)n) != n)
		out_errors++;
	out_fd = fd;
	out_pid = pid;
	return 0;
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&out_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&out_lock);
}

/* The child holds the lock its parent took: reset it, and forget the
 * parent's file (written again at the child's first line). */
static void fork_child(void)
{
	pthread_mutex_init(&out_lock, NULL);
	if (out_fd >= 0)
		close(out_fd);
	out_fd = -1;
	out_errors = 0;
}

int out_open(const char *dir, uint32_t cupti_version)
{
	if (strlen(dir) >= sizeof(out_dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	pthread_mutex_lock(&out_lock);
	int rc = 0, first = !out_dir[0];
	if (first) {
		strcpy(out_dir, dir);
		out_version = cupti_version;
		rc = file_create();
		if (rc)
			out_dir[0] = '\0';
	} else if (cupti_version && cupti_version != out_version) {
		char head[96]; /* CUPTI came after NVTX's first call: its version */
		out_version = cupti_version;
		int n = snprintf(head, sizeof(head), "V\t%d\t%d\t%u\n", GPU_WIRE_VERSION,
				 (int)getpid(), out_version);
		if (out_fd < 0 || write(out_fd, head, (size_t)n) != n)
			out_errors++;
	}
	pthread_mutex_unlock(&out_lock);
	if (!rc && first)
		pthread_atfork(fork_prepare, fork_parent, fork_child);
	return rc;
}

void out_write(const char *buf, size_t len)
{
	pthread_mutex_lock(&out_lock);
	if (out_dir[0] && (out_fd < 0 || out_pid != getpid()) && file_create())
		out_errors++;
	while (out_fd >= 0 && len) {
		ssize_t n = write(out_fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			out_errors++;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	pthread_mutex_unlock(&out_lock);
}

void out_line_str(char kind, const char *text)
{
	char line[GPU_LINE_MAX + 1];
	size_t n = 0;
	line[n++] = kind;
	line[n++] = '\t';
	for (const char *p = text; *p && n < GPU_LINE_MAX; p++)
		line[n++] = *p == '\t' || *p == '\n' ? ' ' : *p;
	line[n++] = '\n';
	out_write(line, n);
}

void out_counter(const char *name, int64_t count)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "X\t%s\t%lld\n", name, (long long)count);
	if (n > 0 && (size_t)n < sizeof(line))
		out_write(line, (size_t)n);
}

int64_t out_write_errors(void)
{
	pthread_mutex_lock(&out_lock);
	int64_t n = out_errors;
	pthread_mutex_unlock(&out_lock);
	return n;
}
