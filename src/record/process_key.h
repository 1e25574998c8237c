/* process_key: how a recording names a process, so that a pid the kernel
 * hands out twice in one run names two processes.
 *
 * Every pid column of the recording holds a process key. The first process
 * of a run with a given pid has the pid itself as its key (so a run without
 * reuse, nearly all of them, reads as before, and recordings made before keys
 * existed read the same); the n-th later one with the same pid has
 * pid + n * PROCESS_KEY_STRIDE. No pid reaches the stride (the kernel's
 * PID_MAX_LIMIT), so process_key_pid() gives the pid back, and a key fits a
 * pid_t for PROCESS_KEY_USES_MAX uses of one pid (later ones share the last
 * key).
 *
 * The session gives the keys (proctree.h, as processes appear) and writes
 * its own rows (processes, rusage, execs) with them; the probes write the
 * pid they saw, and the derive pass process_keys moves the rows of a later
 * process to its key by time after the run (docs/recording.md). */
#ifndef SONDE_PROCESS_KEY_H
#define SONDE_PROCESS_KEY_H

#include <stdint.h>

#define PROCESS_KEY_STRIDE 4194304
#define PROCESS_KEY_USES_MAX 511

/* The pid of a key. */
static inline int64_t process_key_pid(int64_t key)
{
	return key >= 0 ? key % PROCESS_KEY_STRIDE : key;
}

/* How many processes of the run had the key's pid before it (0: the first). */
static inline int64_t process_key_use(int64_t key)
{
	return key >= 0 ? key / PROCESS_KEY_STRIDE : 0;
}

/* The key of the use-th later process with pid (use 0: pid itself). */
static inline int64_t process_key_make(int64_t pid, int64_t use)
{
	if (use > PROCESS_KEY_USES_MAX)
		use = PROCESS_KEY_USES_MAX;
	return pid + use * PROCESS_KEY_STRIDE;
}

#endif
