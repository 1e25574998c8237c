/* exits: exact figures for every process of the target as it exits, from the
 * kernel's taskstats records, joined to the process tree.
 *
 * Processes that lived less than one /proc interval are found here (their
 * parent is in the tree) and added to it, already gone. Records are written to
 * the table task_exits, one row per exiting thread (sum by pid for a process).
 * Without CAP_NET_ADMIN exits_open() fails with one line and the run goes on
 * with /proc readings alone. */
#ifndef SONDE_EXITS_H
#define SONDE_EXITS_H

#include <stdint.h>
#include <sys/types.h>

struct recorder;
struct proctree;
struct strbuf;
struct exits;

struct task_exit;
/* Called for each exit of a whole process of the tree (the record of its main
 * thread); found_by_exit when the process was never seen alive. */
typedef void (*exits_added_fn)(void *data, const struct task_exit *e, int found_by_exit);

int exits_open(struct exits **out, struct recorder *rec, struct proctree *tree,
	       int64_t start_ns, struct strbuf *why);
/* Reads waiting records; now_ns is CLOCK_MONOTONIC. */
void exits_drain(struct exits *ex, int64_t now_ns, exits_added_fn added, void *data);
/* Records lost by the kernel (socket overflow), 0 normally. */
int64_t exits_lost(const struct exits *ex);
void exits_close(struct exits *ex);

#endif
