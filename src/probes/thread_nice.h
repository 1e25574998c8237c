/* thread_nice: a sampling thread's raised priority. A sampler that waits for
 * a CPU behind the machine's busy processes (the target's own threads among
 * them) reads late or not at all, and its rings overflow; its own CPU use is
 * the same either way. On Linux a nice value is per thread: the rest of
 * sonde keeps its own. */
#ifndef SONDE_THREAD_NICE_H
#define SONDE_THREAD_NICE_H

/* sonde's sampling threads' nice value, where it may set it (root or
 * CAP_SYS_NICE). */
#define THREAD_NICE_SAMPLING (-10)

/* Lowers the calling thread's nice value to nice when it is above it: 1 when
 * lowered, 0 when it was not above, -1 when not permitted (errno says why). */
int thread_nice_raise(int nice);

#endif
