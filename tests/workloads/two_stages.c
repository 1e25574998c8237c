/* two_stages: stage_alpha computes for argv[1] seconds (default 1) in the
 * launched process, which then sleeps 0.3 s and forks a child that computes
 * in stage_beta for as long while the parent waits: a window of the run, or
 * one process, holds only one of the two functions. Each stage is a phase
 * its output marks (`phase=alpha start` ... `phase=alpha done`). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Computes until `seconds` of wall time have passed. */
__attribute__((noipa)) static double stage_alpha(double seconds)
{
	double x = 0, end = now_s() + seconds;
	while (now_s() < end)
		for (long i = 1; i <= 20000; i++)
			x += 1.0 / ((double)i * (double)i + x);
	return x;
}

__attribute__((noipa)) static double stage_beta(double seconds)
{
	double x = 1, end = now_s() + seconds;
	while (now_s() < end)
		for (long i = 1; i <= 20000; i++)
			x = x * 0.999999 + 1.0 / ((double)i + x);
	return x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	printf("phase=alpha start\n");
	fflush(stdout);
	printf("two_stages: alpha %f\n", stage_alpha(seconds));
	printf("phase=alpha done\n");
	fflush(stdout);
	usleep(300000);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("phase=beta start\n");
		fflush(stdout);
		printf("two_stages: beta %f\n", stage_beta(seconds));
		printf("phase=beta done\n");
		return 0;
	}
	int status = 0;
	waitpid(pid, &status, 0);
	printf("two_stages: child exited %d\n", WEXITSTATUS(status));
	return 0;
}
