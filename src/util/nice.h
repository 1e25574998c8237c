/* nice: raising the calling thread's scheduling priority, for sonde's
 * threads that must keep up with the target (samplers, ring pumps) on a busy
 * machine. On Linux a nice value is per thread: the rest of sonde keeps its own.
 *
 * Contract: never lowers a priority; where sonde may not raise it (not root,
 * no CAP_SYS_NICE, RLIMIT_NICE) the thread stays as it was. */
#ifndef SONDE_NICE_H
#define SONDE_NICE_H

/* Sets the calling thread's nice value to want when that is below its own.
 * Returns 1 when raised, 0 when it already ran at want or higher, or -errno
 * when refused. *was (may be NULL) gets the nice value it had. */
int nice_raise(int want, int *was);

#endif
