/* pywake: tells the python probe when a thread it left unread runs again.
 * While every sampled Python process is still (no thread ran), the probe
 * stops waking at every tick and stands for the ticks it slept through with
 * the stacks it already has (exact: a thread that did not run kept its
 * stack). A watch is a task-clock perf event on the thread that overflows
 * after PYWAKE_CPU_NS of its CPU time; every watch reports through one epoll
 * fd, which the python probe's sampling thread polls, so a process that wakes up is read again
 * within about that much CPU time, not at the end of the batch. */
#ifndef SONDE_PYWAKE_H
#define SONDE_PYWAKE_H

#include <stddef.h>
#include <sys/types.h>

#define PYWAKE_CPU_NS 1000000 /* CPU time of a watched thread that wakes sonde */
#define PYWAKE_MAX 64	      /* threads watched at once */

struct pywake;

/* NULL when epoll is not available. */
struct pywake *pywake_open(void);
void pywake_close(struct pywake *w);
/* The fd to poll: readable once a watched thread ran PYWAKE_CPU_NS. */
int pywake_fd(const struct pywake *w);
/* Watches thread tid of process pid (already watched: nothing). 0, or -1
 * when it cannot be watched (perf_event_open refused, or PYWAKE_MAX). */
int pywake_watch(struct pywake *w, pid_t pid, pid_t tid);
/* Stops every watch. */
void pywake_clear(struct pywake *w);
/* Watches in place. */
size_t pywake_count(const struct pywake *w);
/* 1 when a watched thread ran its PYWAKE_CPU_NS since it was watched (it
 * stays 1 until pywake_clear). No system call. */
int pywake_fired(struct pywake *w);

#endif
