/* cpu_pid_reuse: two children with one pid, one after the other. The first
 * computes in first_child_spin and exits; the parent reaps it, asks the
 * kernel to hand out the same pid next (/proc/sys/kernel/ns_last_pid, root
 * only) and forks the second, which computes in second_child_spin. Prints
 * "reused PID" when the second got the first's pid, else "not reused: WHY"
 * (not root, another process took the pid first on every try); exits 0
 * either way. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRIES 20

__attribute__((noipa)) static double first_child_spin(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / ((double)i * (double)i + x);
	return x;
}

__attribute__((noipa)) static double second_child_spin(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / ((double)i * (double)i + x + 1.0);
	return x;
}

/* 0, or -errno: the next pid the kernel gives is last + 1. */
static int set_last_pid(pid_t last)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)last);
	int r = write(fd, buf, (size_t)n) == n ? 0 : -errno;
	close(fd);
	return r;
}

int main(void)
{
	fflush(stdout);
	pid_t first = fork();
	if (first < 0)
		return 1;
	if (first == 0) {
		printf("first child %d: %f\n", (int)getpid(), first_child_spin(60000000L));
		return 0;
	}
	waitpid(first, NULL, 0);
	for (int i = 0; i < TRIES; i++) {
		int r = set_last_pid(first - 1);
		if (r < 0) {
			printf("not reused: ns_last_pid: %s\n", strerror(-r));
			return 0;
		}
		fflush(stdout);
		pid_t second = fork();
		if (second < 0)
			return 1;
		if (second == 0) {
			if (getpid() != first)
				_exit(0);
			printf("second child %d: %f\n", (int)getpid(),
			       second_child_spin(60000000L));
			return 0;
		}
		waitpid(second, NULL, 0);
		if (second == first) {
			printf("reused %d\n", (int)first);
			return 0;
		}
	}
	printf("not reused: another process took pid %d on each of %d tries\n", (int)first, TRIES);
	return 0;
}
