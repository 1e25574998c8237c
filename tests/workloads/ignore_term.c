/* ignore_term: ignores SIGTERM and sleeps: sonde must escalate to SIGKILL. */
#include <signal.h>
#include <unistd.h>

int main(void)
{
	signal(SIGTERM, SIG_IGN);
	for (int i = 0; i < 600; i++)
		sleep(1);
	return 0;
}
