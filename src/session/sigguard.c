/* sigguard: signal handlers for the report phase; async-signal-safe (counts,
 * write(2) of messages prepared when armed, _exit). */
#include "sigguard.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NGUARDED 4
static const int guarded[NGUARDED] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static struct sigaction saved[NGUARDED];
static int armed;
static volatile sig_atomic_t received;
static char msg_ignored[160], msg_abort[4400];
static size_t len_ignored, len_abort;

static void on_signal(int sig)
{
	if (!received++) {
		ssize_t w = write(STDERR_FILENO, msg_ignored, len_ignored);
		(void)w;
		return;
	}
	ssize_t w = write(STDERR_FILENO, msg_abort, len_abort);
	(void)w;
	_exit(128 + sig);
}

void sigguard_arm(const char *dir)
{
	int n = snprintf(msg_ignored, sizeof(msg_ignored),
			 "sonde: still writing the report; one more signal aborts it\n");
	len_ignored = n > 0 ? (size_t)n : 0;
	n = snprintf(msg_abort, sizeof(msg_abort),
		     "sonde: aborted before the report was complete; what was measured is in "
		     "%.4000s/profile.db: 'sonde report %.4000s' writes the report from it\n",
		     dir, dir);
	len_abort = n < 0 ? 0 : (size_t)n < sizeof(msg_abort) ? (size_t)n : sizeof(msg_abort) - 1;
	received = 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++)
		sigaddset(&sa.sa_mask, guarded[i]);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < NGUARDED; i++) {
		sigaction(guarded[i], NULL, &saved[i]);
		if (saved[i].sa_handler != SIG_IGN) /* nohup's SIGHUP stays ignored */
			sigaction(guarded[i], &sa, NULL);
	}
	armed = 1;
}

void sigguard_disarm(void)
{
	if (!armed)
		return;
	for (size_t i = 0; i < NGUARDED; i++)
		sigaction(guarded[i], &saved[i], NULL);
	armed = 0;
}
