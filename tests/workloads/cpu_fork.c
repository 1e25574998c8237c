/* cpu_fork: the parent forks a child that computes in child_spin while the
 * parent waits: the child's samples must be recorded, under its own pid. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noipa)) static double child_spin(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / ((double)i * (double)i + x);
	return x;
}

int main(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("cpu_fork child %d: %f\n", (int)getpid(), child_spin(150000000L));
		return 0;
	}
	int status = 0;
	waitpid(pid, &status, 0);
	printf("cpu_fork parent: child exited %d\n", WEXITSTATUS(status));
	return 0;
}
