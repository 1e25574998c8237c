/* cpython_tids: a process's thread ids as its own PID namespace numbers them
 * (what CPython and glibc store: PyThreadState.native_thread_id, struct
 * pthread's tid) mapped to the ids of sonde's namespace (what /proc, perf and
 * the recording use). A process in no nested namespace maps every id to itself. */
#ifndef SONDE_CPYTHON_TIDS_H
#define SONDE_CPYTHON_TIDS_H

#include <stddef.h>
#include <sys/types.h>

#include "../util/hashmap.h"

struct cpython_tids {
	pid_t pid;
	int nested;	     /* 1: the process lives in a PID namespace below sonde's */
	struct hashmap map;  /* namespace tid -> host tid (nested only) */
	pid_t *ns_tids;	     /* the namespace ids of the last listing, nns of them */
	size_t nns;
};

#define CPYTHON_TIDS_MAX 4096 /* threads listed per process */

/* The ids of a /proc/.../status text's NSpid line: *host the first (sonde's
 * namespace), *inner the last (the process's own). 0, or -1 without one. */
int cpython_tids_parse_nspid(const char *status, pid_t *host, pid_t *inner);

/* Tells whether pid lives in a nested PID namespace (its /proc status NSpid
 * has more than one id). 0, or -errno when the process is gone. */
int cpython_tids_init(struct cpython_tids *m, pid_t pid);
void cpython_tids_release(struct cpython_tids *m);

/* Lists /proc/PID/task again (and, nested, each task's NSpid). */
void cpython_tids_refresh(struct cpython_tids *m);

/* The host id of the thread the process calls ns_tid, or 0 when no thread of
 * the last listing has it (the caller refreshes and asks again). */
pid_t cpython_tids_host(const struct cpython_tids *m, pid_t ns_tid);

/* The process's threads as its own namespace numbers them (the last
 * listing; refresh first). Valid until the next refresh. */
const pid_t *cpython_tids_ns(const struct cpython_tids *m, size_t *n);

#endif
