/* syscall_track: the system calls of the target's threads, from the
 * raw_syscalls tracepoints' entries and exits, summed as `strace -c` does but
 * per call site.
 *
 * Contract:
 * - Entries and exits come in time order per thread. An exit pairs with its
 *   thread's open entry of the same call: the call's time is exit - entry.
 *   An exit without one (the call began before sonde followed the thread, or
 *   its entry was lost) is counted, untimed.
 * - Per (pid, call number, stack, file): calls, errors (returns -4095..-1),
 *   time (total, slowest), and for the calls that move bytes (read, write
 *   and their vector, positional and socket forms) the bytes returned and
 *   the file; the calls that flush a file (syscall_syncs_fd) name it too
 *   (no file for the others, nor for a call whose entry was not seen).
 * - Per row and SYSCALL_STRETCH_NS stretch of the run (by the exit's time):
 *   calls, time and bytes, for at most SYSCALL_STRETCHES_MAX such cells (the
 *   calls past them are in the rows, not in time).
 * - Per (pid, call number, errno): the failed calls.
 * - Per (pid, fd) of the byte-moving calls: calls and bytes read and written;
 *   the caller names the fd (file_of) the first time it is seen, with its
 *   generation: how many times the process closed that fd number before
 *   (a close(2) that succeeded), so a reused number names its new file.
 * - Names by number: the x86_64 table (syscall_names.h) on x86_64, else
 *   "syscall_N". Nothing here reads /proc or the clock. */
#ifndef SONDE_SYSCALL_TRACK_H
#define SONDE_SYSCALL_TRACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct recorder;
struct syscall_tracker;

/* The path behind fd of pid in its generation gen, into buf (NUL-terminated);
 * 0, or -1 when unknown. */
typedef int (*syscall_file_fn)(void *arg, pid_t pid, int fd, int64_t gen, char *buf, size_t cap);

struct syscall_tracker *syscall_tracker_new(syscall_file_fn file_of, void *arg);
void syscall_tracker_free(struct syscall_tracker *t);

/* The call's name; buf (at least 24 bytes) is used for an unnamed number. */
const char *syscall_name(long nr, char *buf, size_t cap);
/* 1 when the call reads bytes, 2 when it writes them, 0 otherwise. */
int syscall_moves_bytes(const char *name);
/* 1 when the call flushes the file of its first argument to storage
 * (fsync, fdatasync, sync_file_range, syncfs). */
int syscall_syncs_fd(const char *name);

void syscall_tracker_enter(struct syscall_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, long nr,
			   int64_t arg0);
/* stack: the perf layer's stack index of the call site (UINT32_MAX: none). */
void syscall_tracker_exit(struct syscall_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, long nr,
			  int64_t ret, uint32_t stack);
/* The thread is gone: an open entry will not exit. */
void syscall_tracker_thread_exit(struct syscall_tracker *t, pid_t tid);

#define SYSCALL_STRETCH_NS 100000000LL /* 100 ms */
#define SYSCALL_STRETCHES_MAX 262144

/* One row per (pid, call, stack, file), in first-seen order. */
struct syscall_agg {
	int32_t pid;
	int32_t nr;
	uint32_t stack;
	int32_t file; /* a byte-moving call's file (index in the tracker's files), else -1 */
	int32_t tid;  /* the first thread that made it */
	uint64_t calls, errors, untimed;
	int64_t total_ns, max_ns, bytes;
	int64_t first_ns, last_ns; /* its first and last exit */
};
size_t syscall_tracker_aggs(const struct syscall_tracker *t, const struct syscall_agg **out);
/* The exits seen. */
uint64_t syscall_tracker_calls(const struct syscall_tracker *t);

/* Writes the tables syscalls (one row per syscall_agg, `id` its index),
 * syscall_timeline, syscall_errors and syscall_files (docs/recording.md); node_of
 * gives a stack index's node in the recording. Returns the rows of syscalls. */
size_t syscall_tracker_write(struct syscall_tracker *t, struct recorder *rec,
			     int64_t (*node_of)(void *arg, uint32_t stack), void *arg);

#endif
