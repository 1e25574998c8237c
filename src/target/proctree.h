/* proctree: the set of processes that make up the target, found as they appear.
 *
 * The tree is every descendant of root (and root itself when include_root).
 * proctree_scan() walks /proc, adds processes whose parent is in the tree, and
 * marks those gone; callbacks tell the caller about each change. A pid is
 * identified with its start time, so a reused pid is a new process, with a
 * key of its own (record/process_key.h): the n-th process of the tree's life
 * with a pid has key process_key_make(pid, n).
 * A scan lists /proc (one directory kept open) and reads the stat of only the
 * processes not listed last time: the same pid with the same inode number is
 * the same process (a reused pid gets a new /proc inode), so an idle machine's
 * hundreds of processes cost one listing, not hundreds of files, per scan.
 * And a scan lists /proc only when a process of the tree ran since the last
 * listing (the sum of their CPU clocks moved: a process that did not run
 * cannot have forked or exited), or a process of it is gone, or
 * PROCTREE_LIST_EVERY_NS passed: an idle target costs a clock read per
 * process per scan.
 * At most PROCTREE_MAX processes are followed at once (processes gone for more
 * than 10 s are forgotten to make room); the rest are counted. Entries move when
 * the tree makes room: do not keep a struct proc_entry pointer across calls. */
#ifndef SONDE_PROCTREE_H
#define SONDE_PROCTREE_H

#include "../util/hashmap.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCTREE_MAX 4096

struct proc_entry {
	pid_t pid, ppid;
	pid_t key; /* the recording's name for it: process_key.h */
	uint64_t start_ticks;
	int64_t start_ns;	  /* the kernel's start time (CLOCK_MONOTONIC); -1 unknown */
	int64_t seen_ns, gone_ns; /* gone_ns < 0 while alive */
	char comm[64];
	/* Set by the caller: its command line is a shell's (or env's), so an exec
	 * of it may hand over to the program; exec_id is procfs_read_exec_id's
	 * last reading (0: none). */
	int runs_shell;
	uint64_t exec_id;
};

/* One process of a /proc listing: the inode number of its directory tells
 * a reused pid from the process that had it. */
struct proctree_seen {
	pid_t pid, ppid;
	uint64_t ino, start_ticks;
};

/* The last listing, sorted by pid. */
struct proctree_listing {
	struct proctree_seen *v;
	size_t n, alloc;
};

struct proctree {
	pid_t root;
	int include_root;
	struct proc_entry *v;
	size_t n, alloc;
	size_t dropped; /* processes past PROCTREE_MAX, each counted once */
	struct hashmap dropped_ids; /* (pid, start_ticks) of those, to count once */
	struct hashmap uses;	    /* pid -> processes added with it so far */
	int no_descendants; /* set by the caller: add children of root only, no deeper */
	pid_t skip; /* set by the caller: never added, nor what it starts (sonde itself
		     * when the tree it follows holds it: attach to init); 0: none */
	struct proctree_listing listing; /* the last scan's, see proctree_relist */
	void *proc_dir;			 /* /proc, kept open between scans (a DIR *) */
	uint64_t scans;
	uint64_t listings;  /* scans that listed /proc */
	int64_t listed_ns;  /* when the last listing was */
	uint64_t ran_ns;    /* the tree's CPU time then (sum of its processes' clocks) */
};

typedef void (*proctree_fn)(void *data, const struct proc_entry *e);

void proctree_init(struct proctree *t, pid_t root, int include_root);
void proctree_release(struct proctree *t);

/* Adds pid (known to be in the tree, e.g. just spawned). Returns its entry. */
struct proc_entry *proctree_add(struct proctree *t, pid_t pid, pid_t ppid, int64_t now_ns);
struct proc_entry *proctree_find(struct proctree *t, pid_t pid);
/* The process with pid that an exit record at now_ns, of a process that
 * lived elapsed_ns, is about: the newest one that had started by then (a
 * record may come after the pid was given again). Start times from stat
 * are ticks, up to PROCTREE_START_SLACK_NS early or late. NULL: none. */
#define PROCTREE_START_SLACK_NS 20000000LL
struct proc_entry *proctree_find_exited(struct proctree *t, pid_t pid, int64_t elapsed_ns,
					int64_t now_ns);
/* Sets e's start from stat's start time (ticks since boot; 0: unknown). */
void proctree_set_start(struct proc_entry *e, uint64_t start_ticks);
/* Forgets the processes gone for more than 10 s (proctree_add does it when
 * the tree is full). Their pids' uses still count for keys. */
void proctree_forget_gone(struct proctree *t, int64_t now_ns);
/* Marks pid gone at now_ns (it was reaped or vanished). */
void proctree_mark_gone(struct proctree *t, pid_t pid, int64_t now_ns);

#define PROCTREE_LIST_EVERY_NS 1000000000LL

/* One pass over /proc (see above). Returns the number of live processes in the tree. */
size_t proctree_scan(struct proctree *t, int64_t now_ns, proctree_fn added, proctree_fn gone,
		     void *data);

/* Reads a process's parent and start time (its /proc/PID/stat): 0, or -1
 * when it is gone. */
typedef int (*proctree_stat_fn)(void *ctx, pid_t pid, pid_t *ppid, uint64_t *start_ticks);

/* Makes l the listing of the n processes (pids[i], inos[i]) given: a process
 * l already holds with the same pid and inode number keeps its parent and
 * start; the others (or all, when full) are read with stat_fn, and left out
 * when it fails. Returns how many stat_fn calls it made. */
size_t proctree_relist(struct proctree_listing *l, const pid_t *pids, const uint64_t *inos,
		       size_t n, int full, proctree_stat_fn stat_fn, void *ctx);
void proctree_listing_release(struct proctree_listing *l);

/* One pass over (pid, ppid) pairs given by the caller: the testable core of scan.
 * start_ticks may be NULL. */
size_t proctree_update(struct proctree *t, const pid_t *pids, const pid_t *ppids,
		       const uint64_t *start_ticks, size_t n, int64_t now_ns, proctree_fn added,
		       proctree_fn gone, void *data);

size_t proctree_live(const struct proctree *t);

/* A process of someone else in a tree: another user (uid) in another session
 * (sid) than the tree's root. Attaching to root would profile it too. */
struct proctree_stranger {
	pid_t pid;
	uid_t uid;
	char comm[64];
};

/* The strangers among root's descendants now (one pass over /proc): the count,
 * and the first max of them in out. */
size_t proctree_strangers(pid_t root, struct proctree_stranger *out, size_t max);

/* The testable core: over n processes given as (pid, ppid, uid, sid, comm);
 * comms may be NULL. */
size_t proctree_strangers_of(pid_t root, const pid_t *pids, const pid_t *ppids,
			     const uid_t *uids, const pid_t *sids, const char *const *comms,
			     size_t n, struct proctree_stranger *out, size_t max);

#endif
