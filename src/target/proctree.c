/* proctree: descendant tracking by /proc parent links. */
#include "proctree.h"
#include "procfs.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

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

static struct proc_entry *find_live(struct proctree *t, pid_t pid)
{
	struct proc_entry *e = proctree_find(t, pid);
	return e && e->gone_ns < 0 ? e : NULL;
}

/* Past this many remembered ids, every refusal counts (a fork storm must not
 * make the memory of refusals grow without limit either). */
#define PROCTREE_DROPPED_IDS_MAX (16 * PROCTREE_MAX)

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

static void proctree_forget_gone(struct proctree *t, int64_t now_ns)
{
	size_t keep = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].gone_ns < 0 || now_ns - t->v[i].gone_ns < PROCTREE_FORGET_NS)
			t->v[keep++] = t->v[i];
	t->n = keep;
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
	e->seen_ns = now_ns;
	e->gone_ns = -1;
	struct procfs_stat st;
	if (!procfs_read_stat(pid, 0, &st)) {
		e->start_ticks = st.starttime_ticks;
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
				e->start_ticks = start_ticks[j];
			if (e && added)
				added(data, e);
		}
	}
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t j = 0; j < n; j++) {
			if (pids[j] == t->root || find_live(t, pids[j]) || !in_tree(t, ppids[j]))
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
				e->start_ticks = start_ticks[j];
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

size_t proctree_scan(struct proctree *t, int64_t now_ns, proctree_fn added, proctree_fn gone,
		     void *data)
{
	size_t n = 0, alloc = 256;
	pid_t *pids = xmalloc(alloc * sizeof(*pids));
	pid_t *ppids = xmalloc(alloc * sizeof(*ppids));
	uint64_t *starts = xmalloc(alloc * sizeof(*starts));
	DIR *d = opendir("/proc");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			struct procfs_stat st;
			pid_t pid = (pid_t)atoi(de->d_name);
			if (procfs_read_stat(pid, 0, &st))
				continue;
			if (n == alloc) {
				alloc *= 2;
				pids = xrealloc(pids, alloc * sizeof(*pids));
				ppids = xrealloc(ppids, alloc * sizeof(*ppids));
				starts = xrealloc(starts, alloc * sizeof(*starts));
			}
			pids[n] = pid;
			ppids[n] = st.ppid;
			starts[n] = st.starttime_ticks;
			n++;
		}
		closedir(d);
	}
	size_t live = proctree_update(t, pids, ppids, starts, n, now_ns, added, gone, data);
	free(pids);
	free(ppids);
	free(starts);
	return live;
}
