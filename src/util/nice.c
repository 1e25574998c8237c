/* nice: the calling thread's priority, raised when allowed. */
#include "nice.h"

#include <errno.h>
#include <sys/resource.h>

int nice_raise(int want, int *was)
{
	errno = 0;
	int before = getpriority(PRIO_PROCESS, 0); /* 0: the calling thread */
	if (errno)
		return -errno;
	if (was)
		*was = before;
	if (before <= want)
		return 0;
	if (setpriority(PRIO_PROCESS, 0, want))
		return -errno;
	return 1;
}
