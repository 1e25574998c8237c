/* cpython_gil: the threads that may have run between two reads of a GIL
 * (see cpython_gil.h). */
#include "cpython_gil.h"

int cpython_gil_ran(const struct cpython_gil_seen *before, const struct cpython_gil_seen *now,
		    uint64_t ran[2])
{
	if (!before->gil || before->gil != now->gil)
		return -1;
	uint64_t moved = now->switches - before->switches; /* it wraps like the counter */
	if (moved > 1 || (moved == 1 && now->holder == before->holder))
		return -1;
	ran[0] = before->holder;
	if (now->holder == before->holder)
		return 1;
	ran[1] = now->holder;
	return 2;
}
