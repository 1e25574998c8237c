/* proctree: descendant tracking by /proc parent links. */
#include "proctree.h"
#include "procfs.h"
#include "../record/process_key.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void proctree_init(struct proctree *t, pid_t root, int include_root)
{
	memset(t, 0, sizeof(*t));
	t->root = root;
	t->include_root = include_root;
}

void proctree_release(struct proctree *t)
{
	free(t->v);
	hashmap_release(&t->dropped_ids);
	hashmap_release(&t->uses);
	proctree_listing_release(&t->listing);
	if (t->proc_dir)
		closedir(t->proc_dir);
	memset(t, 0, sizeof(*t));
}

struct proc_entry *proctree_find(struct proctree *t, pid_t pid)
{
	/* Newest first: a reused pid's live entry is the later one. */
	for (size_t i = t->n; i-- > 0;)
		if (t->v[i].pid == pid)
			return &t->v[i];
	return NULL;
}

struct proc_entry *proctree_find_exited(struct proctree *t, pid_t pid, int64_t elapsed_ns,
					int64_t now_ns)
{
	for (size_t i = t->n; i-- > 0;) {
		const struct proc_entry *e = &t->v[i];
		if (e->pid == pid &&
		    (e->start_ns < 0 || e->start_ns + elapsed_ns <= now_ns + PROCTREE_START_SLACK_NS))
			return &t->v[i];
	}
	return NULL;
}

static struct proc_entry *find_live(struct proctree *t, pid_t pid)
{
	struct proc_entry *e = proctree_find(t, pid);
	return e && e->gone_ns < 0 ? e : NULL;
}

/* Past this many remembered ids, every refusal counts (a fork storm must not
 * make the memory of refusals grow without limit either). */
#define PROCTREE_DROPPED_IDS_MAX (16 * PROCTREE_MAX)
/* The pids whose uses are counted (for keys): 64 times the cap. */
#define PROCTREE_USES_MAX (64 * PROCTREE_MAX)

/* Counts a process refused for the cap. A scan sees it again and again (and
 * update loops until nothing changes), so it is counted by identity, once. */
static void note_dropped(struct proctree *t, pid_t pid, uint64_t start_ticks)
{
	int64_t key[2] = { pid, (int64_t)start_ticks };
	if (hashmap_get(&t->dropped_ids, key, sizeof(key)))
		return;
	t->dropped++;
	if (t->dropped_ids.len < PROCTREE_DROPPED_IDS_MAX)
		hashmap_put(&t->dropped_ids, key, sizeof(key), 1);
}

/* Processes gone for a while no longer count against the cap (a long build
 * starts far more than PROCTREE_MAX processes over its life). Recently gone
 * ones stay: their exit records may still be on the way. */
#define PROCTREE_FORGET_NS (10 * 1000000000LL)

void proctree_forget_gone(struct proctree *t, int64_t now_ns)
{
	size_t keep = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].gone_ns < 0 || now_ns - t->v[i].gone_ns < PROCTREE_FORGET_NS)
			t->v[keep++] = t->v[i];
	t->n = keep;
}

void proctree_set_start(struct proc_entry *e, uint64_t start_ticks)
{
	e->start_ticks = start_ticks;
	e->start_ns = start_ticks ? procfs_start_mono_ns(start_ticks) : -1;
}

struct proc_entry *proctree_add(struct proctree *t, pid_t pid, pid_t ppid, int64_t now_ns)
{
	struct proc_entry *e = find_live(t, pid);
	if (e)
		return e;
	if (t->n >= PROCTREE_MAX)
		proctree_forget_gone(t, now_ns);
	if (t->n >= PROCTREE_MAX) {
		struct procfs_stat st;
		note_dropped(t, pid, procfs_read_stat(pid, 0, &st) ? 0 : st.starttime_ticks);
		return NULL;
	}
	if (t->n == t->alloc) {
		t->alloc = t->alloc ? t->alloc * 2 : 16;
		t->v = xrealloc(t->v, t->alloc * sizeof(*t->v));
	}
	e = &t->v[t->n++];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->ppid = ppid;
	/* Counted for the tree's whole life: an entry gone for a while is
	 * forgotten, its key must not be given again. Past PROCTREE_USES_MAX
	 * pids, a new one is not counted (its later uses share its key). */
	int64_t *uses = hashmap_get(&t->uses, &pid, sizeof(pid));
	e->key = (pid_t)process_key_make(pid, uses ? *uses : 0);
	if (uses)
		(*uses)++;
	else if (t->uses.len < PROCTREE_USES_MAX)
		hashmap_put(&t->uses, &pid, sizeof(pid), 1);
	e->seen_ns = now_ns;
	e->gone_ns = -1;
	e->start_ns = -1;
	struct procfs_stat st;
	if (!procfs_read_stat(pid, 0, &st)) {
		proctree_set_start(e, st.starttime_ticks);
		memcpy(e->comm, st.comm, sizeof(e->comm));
	}
	return e;
}

void proctree_mark_gone(struct proctree *t, pid_t pid, int64_t now_ns)
{
	struct proc_entry *e = find_live(t, pid);
	if (e)
		e->gone_ns = now_ns;
}

static int in_tree(struct proctree *t, pid_t pid)
{
	if (pid == t->root)
		return 1;
	return find_live(t, pid) != NULL;
}

/* 1 when the listed pids[j] is a process the tree has seen gone: its exit
 * record came while it is still listed (a zombie its parent has not reaped
 * yet), same start time. Not a new process with the pid: it gets no new key. */
static int seen_gone(struct proctree *t, pid_t pid, const uint64_t *start_ticks, size_t j)
{
	const struct proc_entry *e = proctree_find(t, pid);
	return e && e->gone_ns >= 0 && start_ticks && e->start_ticks &&
	       e->start_ticks == start_ticks[j];
}

size_t proctree_update(struct proctree *t, const pid_t *pids, const pid_t *ppids,
		       const uint64_t *start_ticks, size_t n, int64_t now_ns, proctree_fn added,
		       proctree_fn gone, void *data)
{
	/* Gone: a live entry whose pid vanished, or came back with another start time. */
	for (size_t i = 0; i < t->n; i++) {
		struct proc_entry *e = &t->v[i];
		if (e->gone_ns >= 0)
			continue;
		int present = 0;
		for (size_t j = 0; j < n; j++) {
			if (pids[j] != e->pid)
				continue;
			present = !start_ticks || !e->start_ticks || start_ticks[j] == e->start_ticks;
			break;
		}
		if (!present) {
			e->gone_ns = now_ns;
			if (gone)
				gone(data, e);
		}
	}
	/* Added: repeat until no parent link brings in a new process (deep trees). */
	if (t->include_root && !find_live(t, t->root)) {
		for (size_t j = 0; j < n; j++) {
			if (pids[j] != t->root)
				continue;
			struct proc_entry *e = proctree_add(t, pids[j], ppids[j], now_ns);
			if (e && start_ticks)
				proctree_set_start(e, start_ticks[j]);
			if (e && added)
				added(data, e);
		}
	}
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t j = 0; j < n; j++) {
			if (pids[j] == t->root || pids[j] == t->skip || find_live(t, pids[j]) ||
			    !in_tree(t, ppids[j]) || seen_gone(t, pids[j], start_ticks, j))
				continue;
			if (t->no_descendants && (t->include_root || ppids[j] != t->root))
				continue;
			if (t->n >= PROCTREE_MAX) {
				note_dropped(t, pids[j], start_ticks ? start_ticks[j] : 0);
				continue;
			}
			struct proc_entry *e = proctree_add(t, pids[j], ppids[j], now_ns);
			if (!e)
				continue;
			if (start_ticks)
				proctree_set_start(e, start_ticks[j]);
			if (added)
				added(data, e);
			changed = 1;
		}
	}
	return proctree_live(t);
}

size_t proctree_live(const struct proctree *t)
{
	size_t live = 0;
	for (size_t i = 0; i < t->n; i++)
		live += t->v[i].gone_ns < 0;
	return live;
}

/* Every process of /proc at one moment, in parallel arrays. */
struct proc_snapshot {
	pid_t *pids, *ppids, *sids;
	uid_t *uids; /* the owner of /proc/PID: the process's effective uid */
	uint64_t *starts;
	const char **comms; /* into names */
	char (*names)[64];
	size_t n;
};

static void snapshot_take(struct proc_snapshot *ps)
{
	size_t alloc = 0;
	memset(ps, 0, sizeof(*ps));
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		struct procfs_stat st;
		struct stat sb;
		pid_t pid = (pid_t)atoi(de->d_name);
		if (procfs_read_stat(pid, 0, &st) || fstatat(dirfd(d), de->d_name, &sb, 0))
			continue;
		if (ps->n == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			ps->pids = xrealloc(ps->pids, alloc * sizeof(*ps->pids));
			ps->ppids = xrealloc(ps->ppids, alloc * sizeof(*ps->ppids));
			ps->sids = xrealloc(ps->sids, alloc * sizeof(*ps->sids));
			ps->uids = xrealloc(ps->uids, alloc * sizeof(*ps->uids));
			ps->starts = xrealloc(ps->starts, alloc * sizeof(*ps->starts));
			ps->names = xrealloc(ps->names, alloc * sizeof(*ps->names));
		}
		size_t i = ps->n++;
		ps->pids[i] = pid;
		ps->ppids[i] = st.ppid;
		ps->sids[i] = st.sid;
		ps->uids[i] = sb.st_uid;
		ps->starts[i] = st.starttime_ticks;
		memcpy(ps->names[i], st.comm, sizeof(ps->names[i]));
	}
	if (d)
		closedir(d);
	ps->comms = xcalloc(ps->n ? ps->n : 1, sizeof(*ps->comms));
	for (size_t i = 0; i < ps->n; i++)
		ps->comms[i] = ps->names[i];
}

static void snapshot_release(struct proc_snapshot *ps)
{
	free(ps->pids);
	free(ps->ppids);
	free(ps->sids);
	free(ps->uids);
	free(ps->starts);
	free(ps->comms);
	free(ps->names);
	memset(ps, 0, sizeof(*ps));
}

/* Every this many scans, every process's stat is read again, listed before
 * or not: a guard against an inode number coming back for another process. */
#define PROCTREE_FULL_EVERY 50

static int seen_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct proctree_seen *)a)->pid, y = ((const struct proctree_seen *)b)->pid;
	return (x > y) - (x < y);
}

size_t proctree_relist(struct proctree_listing *l, const pid_t *pids, const uint64_t *inos,
		       size_t n, int full, proctree_stat_fn stat_fn, void *ctx)
{
	struct proctree_seen *v = xmalloc((n ? n : 1) * sizeof(*v));
	size_t m = 0, reads = 0;
	for (size_t i = 0; i < n; i++) {
		struct proctree_seen key = { .pid = pids[i] };
		const struct proctree_seen *old =
			l->n && !full ? bsearch(&key, l->v, l->n, sizeof(*l->v), seen_cmp) : NULL;
		if (old && old->ino == inos[i]) {
			v[m++] = *old;
			continue;
		}
		key.ino = inos[i];
		reads++;
		if (!stat_fn(ctx, pids[i], &key.ppid, &key.start_ticks))
			v[m++] = key;
	}
	qsort(v, m, sizeof(*v), seen_cmp);
	free(l->v);
	l->v = v;
	l->n = l->alloc = m;
	return reads;
}

void proctree_listing_release(struct proctree_listing *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int stat_read(void *ctx, pid_t pid, pid_t *ppid, uint64_t *start_ticks)
{
	struct procfs_stat st;
	(void)ctx;
	if (procfs_read_stat(pid, 0, &st))
		return -1;
	*ppid = st.ppid;
	*start_ticks = st.starttime_ticks;
	return 0;
}

/* The pids /proc lists now, with their inode numbers, into *pids and *inos
 * (grown as needed, *alloc entries). Returns how many. */
static size_t list_proc(struct proctree *t, pid_t **pids, uint64_t **inos, size_t *alloc)
{
	if (!t->proc_dir) {
		int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		t->proc_dir = fd >= 0 ? fdopendir(fd) : NULL;
		if (!t->proc_dir) {
			if (fd >= 0)
				close(fd);
			return 0;
		}
	}
	DIR *d = t->proc_dir;
	rewinddir(d);
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == *alloc) {
			*alloc = *alloc ? 2 * *alloc : 256;
			*pids = xrealloc(*pids, *alloc * sizeof(**pids));
			*inos = xrealloc(*inos, *alloc * sizeof(**inos));
		}
		(*pids)[n] = (pid_t)atoi(de->d_name);
		(*inos)[n] = (uint64_t)de->d_ino;
		n++;
	}
	return n;
}

/* The CPU time of the tree's live processes (their process CPU clocks, which
 * anyone may read): 0, or -1 when one of them is gone. */
static int tree_ran_ns(const struct proctree *t, uint64_t *out)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].gone_ns >= 0)
			continue;
		struct timespec ts;
		clockid_t clock = (clockid_t)((~(unsigned)t->v[i].pid << 3) | 2); /* CPUCLOCK_SCHED */
		if (clock_gettime(clock, &ts))
			return -1;
		sum += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	*out = sum;
	return 0;
}

size_t proctree_scan(struct proctree *t, int64_t now_ns, proctree_fn added, proctree_fn gone,
		     void *data)
{
	uint64_t ran = 0;
	int ran_ok = !tree_ran_ns(t, &ran);
	if (t->ran_ns && ran_ok && ran == t->ran_ns && now_ns - t->listed_ns < PROCTREE_LIST_EVERY_NS &&
	    (t->include_root || proctree_live(t)))
		return proctree_live(t); /* nobody ran: nothing forked, nothing exited */
	pid_t *pids = NULL;
	uint64_t *inos = NULL;
	size_t alloc = 0, n = list_proc(t, &pids, &inos, &alloc);
	proctree_relist(&t->listing, pids, inos, n, t->scans++ % PROCTREE_FULL_EVERY == 0,
			stat_read, NULL);
	const struct proctree_listing *l = &t->listing;
	pid_t *ppids = xmalloc((l->n ? l->n : 1) * sizeof(*ppids));
	uint64_t *starts = xmalloc((l->n ? l->n : 1) * sizeof(*starts));
	for (size_t i = 0; i < l->n; i++) {
		pids[i] = l->v[i].pid; /* l->n <= n: pids has room */
		ppids[i] = l->v[i].ppid;
		starts[i] = l->v[i].start_ticks;
	}
	size_t live = proctree_update(t, pids, ppids, starts, l->n, now_ns, added, gone, data);
	t->listings++;
	t->listed_ns = now_ns;
	/* The clocks as read before the listing: a fork during it (or during
	 * the callbacks, which may take long) moves them, so the next scan
	 * lists again. Members added now move the sum too: one more listing. */
	t->ran_ns = ran_ok ? ran : 0; /* 0: not known, list next time */
	free(pids);
	free(inos);
	free(ppids);
	free(starts);
	return live;
}

size_t proctree_strangers_of(pid_t root, const pid_t *pids, const pid_t *ppids,
			     const uid_t *uids, const pid_t *sids, const char *const *comms,
			     size_t n, struct proctree_stranger *out, size_t max)
{
	size_t iroot = n;
	for (size_t i = 0; i < n && iroot == n; i++)
		if (pids[i] == root)
			iroot = i;
	if (iroot == n)
		return 0;
	/* in[i]: pid i descends from root; repeat until no parent link adds one. */
	char *in = xcalloc(n ? n : 1, 1);
	in[iroot] = 1;
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (in[i])
				continue;
			for (size_t j = 0; j < n; j++)
				if (in[j] && pids[j] == ppids[i] && pids[i] != ppids[i]) {
					in[i] = 1;
					changed = 1;
					break;
				}
		}
	}
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == iroot || !in[i] || uids[i] == uids[iroot] || sids[i] == sids[iroot])
			continue;
		if (count < max) {
			out[count] = (struct proctree_stranger){ .pid = pids[i], .uid = uids[i] };
			snprintf(out[count].comm, sizeof(out[count].comm), "%s",
				 comms && comms[i] ? comms[i] : "?");
		}
		count++;
	}
	free(in);
	return count;
}

size_t proctree_strangers(pid_t root, struct proctree_stranger *out, size_t max)
{
	struct proc_snapshot ps;
	snapshot_take(&ps);
	size_t count = proctree_strangers_of(root, ps.pids, ps.ppids, ps.uids, ps.sids, ps.comms,
					     ps.n, out, max);
	snapshot_release(&ps);
	return count;
}
