/* test_proctree: following a target's descendants from (pid, ppid) snapshots.
 * Pids here start at 5000000, above PID_MAX_LIMIT, so no real process (whose
 * /proc entry proctree_add reads) can be mistaken for them. */
#include "check.h"
#include "record/process_key.h"
#include "target/proctree.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define P(n) ((pid_t)(5000000 + (n)))

struct events {
	size_t added, gone;
	pid_t last_added, last_gone;
};

static void on_added(void *data, const struct proc_entry *e)
{
	struct events *ev = data;
	ev->added++;
	ev->last_added = e->pid;
}

static void on_gone(void *data, const struct proc_entry *e)
{
	struct events *ev = data;
	ev->gone++;
	ev->last_gone = e->pid;
	CHECK(e->gone_ns >= 0);
}

static size_t update(struct proctree *t, const pid_t *pids, const pid_t *ppids,
		     const uint64_t *starts, size_t n, int64_t now, struct events *ev)
{
	return proctree_update(t, pids, ppids, starts, n, now, on_added, on_gone, ev);
}

static int live(struct proctree *t, pid_t pid)
{
	struct proc_entry *e = proctree_find(t, pid);
	return e && e->gone_ns < 0;
}

TEST(children_only, "descendants of the root are followed and unrelated processes are not")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	pid_t pids[] = { P(0), P(1), P(2), P(3), P(9) };
	pid_t ppids[] = { 1, P(0), P(1), P(0), 1 };
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, 5, 10, &ev), 3);
	CHECK_INT_EQ(ev.added, 3);
	CHECK(!live(&t, P(0))); /* not included */
	CHECK(live(&t, P(1)) && live(&t, P(2)) && live(&t, P(3)));
	CHECK(proctree_find(&t, P(9)) == NULL);
	CHECK_INT_EQ(proctree_find(&t, P(2))->ppid, P(1));
	CHECK_INT_EQ(proctree_find(&t, P(2))->seen_ns, 10);
	proctree_release(&t);
}

TEST(include_root, "with include_root the root itself is followed once, and again only after it is gone")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 1);
	pid_t pids[] = { P(0), P(1) };
	pid_t ppids[] = { 1, P(0) };
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, 2, 1, &ev), 2);
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, 2, 2, &ev), 2);
	CHECK_INT_EQ(ev.added, 2);
	CHECK_INT_EQ(ev.gone, 0);
	proctree_release(&t);
}

TEST(deep_tree_one_pass, "a deep chain listed children-first is found whole in one update")
{
	enum { DEPTH = 200 };
	pid_t pids[DEPTH], ppids[DEPTH];
	for (int i = 0; i < DEPTH; i++) {
		/* listed deepest first: each parent comes after its child */
		pids[i] = P(DEPTH - i);
		ppids[i] = P(DEPTH - i - 1);
	}
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, DEPTH, 1, &ev), DEPTH);
	CHECK_INT_EQ(ev.added, DEPTH);
	CHECK(live(&t, P(DEPTH)));
	proctree_release(&t);
}

TEST(gone_reported_once, "a process that vanishes is reported gone once, with the time it was noticed")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	pid_t pids[] = { P(1), P(2) };
	pid_t ppids[] = { P(0), P(0) };
	update(&t, pids, ppids, NULL, 2, 1, &ev);
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, 1, 5, &ev), 1);
	CHECK_INT_EQ(ev.gone, 1);
	CHECK_INT_EQ(ev.last_gone, P(2));
	CHECK_INT_EQ(proctree_find(&t, P(2))->gone_ns, 5);
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, 1, 9, &ev), 1);
	CHECK_INT_EQ(ev.gone, 1);
	CHECK_INT_EQ(proctree_find(&t, P(2))->gone_ns, 5);
	CHECK_INT_EQ(proctree_live(&t), 1);
	proctree_release(&t);
}

TEST(reparented_stays, "a grandchild reparented to init after its parent exits is still followed")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	pid_t pids1[] = { P(1), P(2) };
	pid_t ppids1[] = { P(0), P(1) };
	update(&t, pids1, ppids1, NULL, 2, 1, &ev);
	pid_t pids2[] = { P(2) };
	pid_t ppids2[] = { 1 };
	CHECK_INT_EQ(update(&t, pids2, ppids2, NULL, 1, 2, &ev), 1);
	CHECK(live(&t, P(2)));
	CHECK(!live(&t, P(1)));
	/* and a child it forks after the reparenting is followed too */
	pid_t pids3[] = { P(2), P(3) };
	pid_t ppids3[] = { 1, P(2) };
	CHECK_INT_EQ(update(&t, pids3, ppids3, NULL, 2, 3, &ev), 2);
	CHECK(live(&t, P(3)));
	proctree_release(&t);
}

TEST(pid_reuse, "a pid that comes back with another start time is a new process: the old one is gone")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	pid_t pids[] = { P(1) };
	pid_t ppids[] = { P(0) };
	uint64_t start1[] = { 100 }, start2[] = { 200 };
	update(&t, pids, ppids, start1, 1, 1, &ev);
	struct proc_entry *first = proctree_find(&t, P(1));
	REQUIRE(first);
	CHECK_INT_EQ(first->start_ticks, 100);
	CHECK_INT_EQ(update(&t, pids, ppids, start1, 1, 2, &ev), 1);
	CHECK_INT_EQ(ev.added, 1);
	CHECK_INT_EQ(update(&t, pids, ppids, start2, 1, 3, &ev), 1);
	CHECK_INT_EQ(ev.gone, 1);
	CHECK_INT_EQ(ev.added, 2);
	struct proc_entry *second = proctree_find(&t, P(1));
	REQUIRE(second);
	CHECK_INT_EQ(second->start_ticks, 200);
	CHECK_INT_EQ(second->seen_ns, 3);
	CHECK(second->gone_ns < 0);
	CHECK_INT_EQ(t.n, 2);
	CHECK_INT_EQ(t.v[0].gone_ns, 3);
	proctree_release(&t);
}

TEST(pid_reuse_keys, "each later process with a pid gets a key of its own, also after the earlier ones were forgotten")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	pid_t pids[] = { P(1), P(2) };
	pid_t ppids[] = { P(0), P(0) };
	uint64_t start1[] = { 100, 100 }, start2[] = { 200, 100 }, start3[] = { 300, 100 };
	update(&t, pids, ppids, start1, 2, 1, &ev);
	CHECK_INT_EQ(proctree_find(&t, P(1))->key, P(1));
	CHECK_INT_EQ(proctree_find(&t, P(2))->key, P(2));
	update(&t, pids, ppids, start2, 2, 2, &ev);
	CHECK_INT_EQ(proctree_find(&t, P(1))->key, P(1) + PROCESS_KEY_STRIDE);
	CHECK_INT_EQ(proctree_find(&t, P(2))->key, P(2)); /* the same process */
	/* 20 s later the gone entry is forgotten when room is made; its use still counts. */
	update(&t, pids, ppids, start2, 1, 3, &ev); /* P(2) gone */
	proctree_forget_gone(&t, 30000000000LL);
	CHECK(!proctree_find(&t, P(2)));
	update(&t, pids, ppids, start3, 2, 30000000001LL, &ev);
	CHECK_INT_EQ(proctree_find(&t, P(1))->key, P(1) + 2 * PROCESS_KEY_STRIDE);
	CHECK_INT_EQ(proctree_find(&t, P(2))->key, P(2) + PROCESS_KEY_STRIDE);
	proctree_release(&t);
}

TEST(zombie_not_new, "a process its exit record marked gone, still listed as a zombie, is not added again")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	pid_t pids[] = { P(1) };
	pid_t ppids[] = { P(0) };
	uint64_t start[] = { 100 };
	update(&t, pids, ppids, start, 1, 1, &ev);
	proctree_mark_gone(&t, P(1), 2); /* its exit record */
	update(&t, pids, ppids, start, 1, 3, &ev); /* still listed: a zombie */
	CHECK_INT_EQ(ev.added, 1);
	CHECK_INT_EQ(t.n, 1);
	uint64_t later[] = { 200 }; /* the pid given again: a new process */
	update(&t, pids, ppids, later, 1, 4, &ev);
	CHECK_INT_EQ(ev.added, 2);
	CHECK_INT_EQ(proctree_find(&t, P(1))->key, P(1) + PROCESS_KEY_STRIDE);
	proctree_release(&t);
}

TEST(exit_record_finds_its_process, "an exit record that comes after its pid was given again is about the earlier process")
{
	struct proctree t;
	proctree_init(&t, P(0), 0);
	struct proc_entry *a = proctree_add(&t, P(1), P(0), 0);
	REQUIRE(a);
	a->start_ns = 1000000000; /* lived 1 s to 2 s */
	a->gone_ns = 2000000000;
	struct proc_entry *b = proctree_add(&t, P(1), P(0), 2100000000);
	REQUIRE(b);
	b->start_ns = 2050000000;
	/* At 2.2 s: a record of a process that lived 1 s started at 1.2 s at the
	 * latest, before b: it is a's; one of 0.1 s can be b's. */
	struct proc_entry *e = proctree_find_exited(&t, P(1), 1000000000, 2200000000);
	REQUIRE(e);
	CHECK_INT_EQ(e->key, P(1));
	e = proctree_find_exited(&t, P(1), 100000000, 2200000000);
	REQUIRE(e);
	CHECK_INT_EQ(e->key, P(1) + PROCESS_KEY_STRIDE);
	CHECK(!proctree_find_exited(&t, P(2), 1, 2200000000));
	proctree_release(&t);
}

TEST(pid_reuse_outside, "a followed pid reused by an unrelated process is gone and the stranger is not followed")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	pid_t pids[] = { P(1) };
	pid_t ppids1[] = { P(0) }, ppids2[] = { P(50) };
	uint64_t start1[] = { 100 }, start2[] = { 200 };
	update(&t, pids, ppids1, start1, 1, 1, &ev);
	CHECK_INT_EQ(update(&t, pids, ppids2, start2, 1, 2, &ev), 0);
	CHECK_INT_EQ(ev.gone, 1);
	CHECK_INT_EQ(ev.added, 1);
	proctree_release(&t);
}

TEST(root_reuse, "with include_root a root pid reused by a new process (another start time) is noticed")
{
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 1);
	pid_t pids[] = { P(0) };
	pid_t ppids[] = { 1 };
	uint64_t start1[] = { 100 }, start2[] = { 200 };
	update(&t, pids, ppids, start1, 1, 1, &ev);
	struct proc_entry *e = proctree_find(&t, P(0));
	REQUIRE(e);
	CHECK_INT_EQ(e->start_ticks, 100);
	update(&t, pids, ppids, start2, 1, 2, &ev);
	CHECK_INT_EQ(ev.gone, 1);
	proctree_release(&t);
}

TEST(cap, "past PROCTREE_MAX processes the rest are counted as dropped, each once however many scans see it")
{
	enum { EXTRA = 10, N = PROCTREE_MAX + EXTRA };
	pid_t *pids = malloc(N * sizeof(*pids)), *ppids = malloc(N * sizeof(*ppids));
	REQUIRE(pids && ppids);
	for (int i = 0; i < N; i++) {
		pids[i] = P(i + 1);
		ppids[i] = P(0);
	}
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, P(0), 0);
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, N, 1, &ev), PROCTREE_MAX);
	CHECK_INT_EQ(ev.added, PROCTREE_MAX);
	CHECK(proctree_find(&t, P(N)) == NULL);
	CHECK_INT_EQ(t.dropped, EXTRA);
	CHECK_INT_EQ(update(&t, pids, ppids, NULL, N, 2, &ev), PROCTREE_MAX);
	CHECK_INT_EQ(ev.added, PROCTREE_MAX);
	CHECK_INT_EQ(t.dropped, EXTRA);
	proctree_release(&t);
	free(pids);
	free(ppids);
}

TEST(add_and_mark_gone, "a process added directly is found, and marking it gone makes it not live")
{
	struct proctree t;
	proctree_init(&t, getpid(), 0);
	struct proc_entry *e = proctree_add(&t, getpid(), getppid(), 7);
	REQUIRE(e);
	CHECK_STR_EQ(e->comm, "test_proctree");
	CHECK(e->start_ticks > 0);
	CHECK(proctree_add(&t, getpid(), getppid(), 8) == e);
	CHECK_INT_EQ(proctree_live(&t), 1);
	proctree_mark_gone(&t, getpid(), 9);
	CHECK_INT_EQ(proctree_live(&t), 0);
	CHECK_INT_EQ(e->gone_ns, 9);
	proctree_release(&t);
}

TEST(scan_finds_child, "a scan of /proc finds a forked child of the root and sees it go after it is reaped")
{
	int gate[2];
	REQUIRE(pipe(gate) == 0);
	pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		char c;
		close(gate[1]);
		ssize_t r = read(gate[0], &c, 1);
		_exit(r < 0);
	}
	close(gate[0]);
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, getpid(), 0);
	proctree_scan(&t, 1, on_added, on_gone, &ev);
	CHECK(live(&t, child));
	close(gate[1]);
	int status;
	waitpid(child, &status, 0);
	proctree_scan(&t, 2, on_added, on_gone, &ev);
	CHECK(!live(&t, child));
	proctree_release(&t);
}

TEST(strangers_other_users, "another user's process in another session below the root is a stranger; the root user's own and a same-session one are not")
{
	/* root P(1) (uid 1000, sid P(1)) -> P(2) same user -> P(3) uid 0, same session
	 * (sudo in a terminal); P(1) -> P(4) uid 1001, own session -> P(5) likewise;
	 * P(6), another user's, is not below the root. */
	pid_t pids[] = { P(5), P(1), P(2), P(3), P(4), P(6) };
	pid_t ppids[] = { P(4), 1, P(1), P(2), P(1), 1 };
	uid_t uids[] = { 1001, 1000, 1000, 0, 1001, 1002 };
	pid_t sids[] = { P(4), P(1), P(1), P(1), P(4), P(6) };
	const char *comms[] = { "bash", "server", "worker", "sudo", "sshd", "other" };
	struct proctree_stranger out[1];
	size_t n = proctree_strangers_of(P(1), pids, ppids, uids, sids, comms, 6, out, 1);
	CHECK_INT_EQ(n, 2);
	CHECK(out[0].pid == P(5) || out[0].pid == P(4));
	CHECK_INT_EQ(out[0].uid, 1001);
	CHECK_INT_EQ(proctree_strangers_of(P(2), pids, ppids, uids, sids, comms, 6, out, 1), 0);
	CHECK_INT_EQ(proctree_strangers_of(P(9), pids, ppids, uids, sids, comms, 6, out, 1), 0);
}

TEST(strangers_of_self, "this test's own tree holds no stranger")
{
	struct proctree_stranger out[4];
	CHECK_INT_EQ(proctree_strangers(getpid(), out, 4), 0);
}

TEST(start_from_kernel, "a process added to the tree carries the kernel's start time, not when it was seen")
{
	struct proctree t;
	proctree_init(&t, getppid(), 0);
	struct proc_entry *e = proctree_add(&t, getpid(), getppid(), INT64_MAX / 2);
	REQUIRE(e);
	CHECK(e->start_ns > 0 && e->start_ns < INT64_MAX / 2);
	proctree_release(&t);
}

/* A stat reader over a table of (pid, ppid), counting its calls. */
struct fake_stats {
	pid_t pids[8], ppids[8];
	size_t n, calls;
};

static int fake_stat(void *ctx, pid_t pid, pid_t *ppid, uint64_t *start_ticks)
{
	struct fake_stats *fs = ctx;
	fs->calls++;
	for (size_t i = 0; i < fs->n; i++)
		if (fs->pids[i] == pid) {
			*ppid = fs->ppids[i];
			*start_ticks = 100 + (uint64_t)i;
			return 0;
		}
	return -1;
}

TEST(relist_reads_only_new, "a listing again reads the stat of only the processes not listed before with the same inode number")
{
	struct fake_stats fs = { .pids = { P(1), P(2), P(3) }, .ppids = { 1, P(1), P(2) }, .n = 3 };
	struct proctree_listing l = { 0 };
	pid_t pids[] = { P(3), P(1), P(2) };
	uint64_t inos[] = { 30, 10, 20 };
	CHECK_INT_EQ(proctree_relist(&l, pids, inos, 3, 0, fake_stat, &fs), 3);
	REQUIRE(l.n == 3);
	CHECK(l.v[0].pid == P(1) && l.v[1].pid == P(2) && l.v[2].pid == P(3));
	CHECK(l.v[2].ppid == P(2));
	/* The same processes: no stat read; their parents kept. */
	CHECK_INT_EQ(proctree_relist(&l, pids, inos, 3, 0, fake_stat, &fs), 0);
	REQUIRE(l.n == 3);
	CHECK(l.v[2].ppid == P(2) && l.v[2].ino == 30);
	/* P(3) exited and its pid went to a child of P(1): a new inode number. */
	fs.ppids[2] = P(1);
	inos[0] = 31;
	CHECK_INT_EQ(proctree_relist(&l, pids, inos, 3, 0, fake_stat, &fs), 1);
	REQUIRE(l.n == 3);
	CHECK(l.v[2].ppid == P(1) && l.v[2].ino == 31);
	/* A full pass reads every one. */
	CHECK_INT_EQ(proctree_relist(&l, pids, inos, 3, 1, fake_stat, &fs), 3);
	proctree_listing_release(&l);
}

TEST(relist_drops_vanished, "a process gone from the listing, or gone before its stat was read, is left out")
{
	struct fake_stats fs = { .pids = { P(1), P(2) }, .ppids = { 1, P(1) }, .n = 2 };
	struct proctree_listing l = { 0 };
	pid_t pids[] = { P(1), P(2), P(7) };
	uint64_t inos[] = { 10, 20, 70 };
	proctree_relist(&l, pids, inos, 3, 0, fake_stat, &fs);
	CHECK_INT_EQ(l.n, 2); /* P(7) has no stat */
	proctree_relist(&l, pids, inos, 1, 0, fake_stat, &fs);
	REQUIRE(l.n == 1);
	CHECK(l.v[0].pid == P(1));
	proctree_listing_release(&l);
}

/* Forks a child that waits for gate (closed by the caller) and exits. */
static pid_t fork_waiting(int gate[2])
{
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(gate[1]);
		ssize_t r = read(gate[0], &c, 1);
		_exit(r < 0);
	}
	return child;
}

TEST(scan_sees_reused_pid, "a pid reused by a new child between two scans is seen as the old process gone and a new one added")
{
	/* The kernel hands out pid last+1: writing last makes the next fork
	 * take the pid just freed (root only; other forks on the machine may
	 * take it first, so a few tries). */
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
	if (fd < 0)
		SKIP("/proc/sys/kernel/ns_last_pid cannot be written (not root)");
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, getpid(), 0);
	int reused = 0;
	for (int attempt = 0; attempt < 20 && !reused; attempt++) {
		int gate[2];
		REQUIRE(pipe(gate) == 0);
		pid_t a = fork_waiting(gate);
		REQUIRE(a > 0);
		proctree_scan(&t, 1, on_added, on_gone, &ev);
		CHECK(live(&t, a));
		close(gate[1]);
		waitpid(a, NULL, 0);
		close(gate[0]);
		/* A process is its pid and start time, in clock ticks: b starts
		 * a few ticks after a. */
		usleep(30000);
		char last[32];
		int len = snprintf(last, sizeof(last), "%d", (int)a - 1);
		REQUIRE(pipe(gate) == 0);
		pid_t b = -1;
		if (pwrite(fd, last, (size_t)len, 0) == len)
			b = fork_waiting(gate);
		close(gate[0]);
		if (b < 0) {
			close(gate[1]);
			break;
		}
		if (b == a) {
			size_t added = ev.added, gone = ev.gone;
			proctree_scan(&t, 2, on_added, on_gone, &ev);
			CHECK_INT_EQ(ev.gone, gone + 1);
			CHECK_INT_EQ(ev.added, added + 1);
			CHECK(live(&t, b));
			reused = 1;
		}
		close(gate[1]);
		waitpid(b, NULL, 0);
		proctree_scan(&t, 3, on_added, on_gone, &ev);
	}
	close(fd);
	proctree_release(&t);
	if (!reused)
		SKIP("no pid came back within 20 forks (a busy machine)");
}

TEST(scan_lists_when_tree_ran, "a scan lists /proc again only once a process of the tree ran, and then finds what it forked")
{
	int gate[2], ready[2];
	REQUIRE(pipe(gate) == 0 && pipe(ready) == 0);
	pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		char c = 'r';
		close(gate[1]);
		close(ready[0]);
		if (write(ready[1], &c, 1) != 1 || read(gate[0], &c, 1) != 1)
			_exit(1);
		pid_t grandchild = fork(); /* it waits on the gate too, then exits */
		if (grandchild == 0) {
			ssize_t r = read(gate[0], &c, 1);
			_exit(r < 0);
		}
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		ssize_t r = read(gate[0], &c, 1);
		waitpid(grandchild, NULL, 0);
		_exit(r < 0);
	}
	close(gate[0]);
	close(ready[1]);
	char c;
	REQUIRE(read(ready[0], &c, 1) == 1);
	usleep(50000); /* the child blocks in read, its clock still */
	struct proctree t;
	struct events ev = { 0 };
	proctree_init(&t, getpid(), 0);
	proctree_scan(&t, 1, on_added, on_gone, &ev);
	CHECK(live(&t, child));
	proctree_scan(&t, 2, on_added, on_gone, &ev); /* lists again: the tree grew */
	uint64_t listings = t.listings;
	proctree_scan(&t, 2, on_added, on_gone, &ev);
	CHECK_INT_EQ(t.listings, listings);
	CHECK_INT_EQ(ev.added, 1);
	REQUIRE(write(gate[1], "g", 1) == 1); /* the child runs: it forks */
	REQUIRE(read(ready[0], &c, 1) == 1);
	proctree_scan(&t, 3, on_added, on_gone, &ev);
	CHECK(t.listings > listings);
	CHECK_INT_EQ(ev.added, 2);
	CHECK(ev.last_added != child && live(&t, ev.last_added));
	close(gate[1]);
	close(ready[0]);
	waitpid(child, NULL, 0);
	proctree_release(&t);
}

CHECK_MAIN()
