/* thread_nice: a sampling thread's raised priority (thread_nice.h). */
#include "thread_nice.h"

#include <errno.h>
#include <sys/resource.h>

int thread_nice_raise(int nice)
{
	errno = 0;
	int before = getpriority(PRIO_PROCESS, 0); /* 0: the calling thread */
	if (errno)
		return -1;
	if (before <= nice)
		return 0;
	return setpriority(PRIO_PROCESS, 0, nice) ? -1 : 1;
}
