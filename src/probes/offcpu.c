/* offcpu probe: where the target's threads wait. The sched:sched_switch
 * tracepoint (with call stacks and prev_state) marks each switch-out, and
 * PERF_RECORD_SWITCH records mark the switch-ins; each blocked interval becomes
 * an "offcpu" sample weighted by its nanoseconds. The events live in the cpu
 * probe (its rings, maps and symbolizer, see cpu.c); this file holds the
 * interval bookkeeping, the choice of event and the probe's entry. */
#define LOG_DOMAIN "offcpu"
#include "offcpu.h"
#include "perf_events.h"
#include "probe.h"
#include "../record/recorder.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- the event ---- */

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing", NULL };

/* The tracepoint's id and prev_state's offset from tracefs; 0 or -errno. */
static int read_tracepoint(int *id, int *state_offset)
{
	char path[128], buf[4096];
	for (size_t i = 0; tracefs_dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/events/sched/sched_switch/id", tracefs_dirs[i]);
		if (file_read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		*id = atoi(buf);
		*state_offset = -1;
		snprintf(path, sizeof(path), "%s/events/sched/sched_switch/format", tracefs_dirs[i]);
		ssize_t n = file_read_small(path, buf, sizeof(buf));
		const char *f = n > 0 ? strstr(buf, " prev_state;") : NULL;
		const char *off = f ? strstr(f, "offset:") : NULL;
		const char *size = f ? strstr(f, "size:") : NULL;
		/* prev_state is a long (8 bytes) on 64-bit kernels; anything else: no state. */
		if (off && size && atoi(size + 5) == 8)
			*state_offset = atoi(off + 7);
		return *id > 0 ? 0 : -EINVAL;
	}
	return -ENOENT;
}

/* tracefs is not mounted on some systems (it appears when something mounts
 * it, as perf does): as root, mount it where the kernel provides the mount
 * point. */
static int tracefs_mounted; /* by sonde, this run: said in the report */

static void mount_tracefs(void)
{
	struct stat st;
	if (geteuid() != 0 || stat("/sys/kernel/tracing", &st) || !S_ISDIR(st.st_mode) ||
	    !dir_is_empty("/sys/kernel/tracing"))
		return;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		log_debug("mount tracefs: %s", strerror(errno));
	else
		tracefs_mounted = 1;
}

static long perf_open_self(struct perf_event_attr *a)
{
	return perf_event_open_cloexec(a, 0, -1, -1);
}

int offcpu_choose_event(struct perf_event_attr *attr, const struct perf_event_attr *like,
			const char **event_name, int *state_offset, struct strbuf *why)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sample_period = 1;
	a.sample_type = like->sample_type;
	a.sample_regs_user = like->sample_regs_user;
	a.sample_stack_user = like->sample_stack_user;
	a.exclude_callchain_user = like->exclude_callchain_user;
	a.sample_max_stack = like->sample_max_stack;
	a.inherit = 1;
	a.context_switch = 1;
	a.sample_id_all = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.disabled = 1;
	int id = 0, off = -1, tp_err, tp_open_err = 0;
	tp_err = read_tracepoint(&id, &off);
	if (tp_err == -ENOENT) {
		mount_tracefs();
		tp_err = read_tracepoint(&id, &off);
	}
	int err = 0;
	if (!tp_err) {
		a.type = PERF_TYPE_TRACEPOINT;
		a.config = (uint64_t)id;
		if (off >= 0)
			a.sample_type |= PERF_SAMPLE_RAW;
		long fd = perf_open_self(&a);
		if (fd < 0 && (errno == EACCES || errno == EPERM) && off >= 0) {
			a.sample_type &= ~(uint64_t)PERF_SAMPLE_RAW; /* raw data wants CAP_PERFMON */
			off = -1;
			fd = perf_open_self(&a);
		}
		if (fd >= 0) {
			close((int)fd);
			*attr = a;
			*event_name = "sched:sched_switch";
			*state_offset = off;
			return 0;
		}
		err = tp_open_err = errno;
	}
	/* No tracefs (a container) or a refused tracepoint: the software event
	 * fires at the same place, without prev_state. */
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a.sample_type = like->sample_type;
	long fd = perf_open_self(&a);
	if (fd >= 0) {
		close((int)fd);
		*attr = a;
		*event_name = "context-switches";
		*state_offset = -1;
		return 0;
	}
	if (!err || err == EINVAL || err == ENOENT)
		err = errno;
	int paranoid = 99;
	char buf[32];
	if (file_read_small("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)) > 0)
		paranoid = atoi(buf);
	if ((err == EACCES || err == EPERM) && geteuid() != 0)
		strbuf_addf(why, "the sched_switch tracepoint was refused (%s): it fires in the "
				 "kernel, which kernel.perf_event_paranoid=%d keeps from non-root "
				 "users; run `sysctl kernel.perf_event_paranoid=1`, or run sonde as "
				 "root or with CAP_PERFMON",
			    err == EACCES ? "EACCES" : "EPERM", paranoid);
	else
		strbuf_addf(why, "neither the sched:sched_switch tracepoint (%s) nor the "
				 "context-switches event (%s) can be opened here",
			    tp_err ? "tracefs not found under /sys/kernel/tracing" : strerror(tp_open_err),
			    strerror(err));
	return -1;
}

char offcpu_state_from_raw(const uint8_t *raw, uint32_t raw_size, int state_offset)
{
	int64_t s;
	if (!raw || state_offset < 0 || (uint64_t)state_offset + 8 > raw_size)
		return '?';
	memcpy(&s, raw + state_offset, 8);
	/* TASK_REPORT_MAX (the bit above the reported states) marks a preemption. */
	if (s & 0x100)
		return 'R';
	static const char letters[] = "SDTtXZPI";
	for (int b = 0; b < 8; b++)
		if (s & (1 << b))
			return letters[b];
	return 'R'; /* 0: still runnable (it yielded, or was preempted) */
}

/* ---- intervals ---- */

struct offcpu_thread {
	pid_t pid, tid;
	int64_t first_ns, last_ns;
	int64_t in_ns;	/* switched in at; -1 when unknown or off */
	int64_t out_ns; /* switched out at; -1 when on the CPU */
	int64_t on_ns, off_ns;
	uint64_t intervals;
	uint32_t stack;
	char state;
	int dead;
};

struct offcpu_key {
	int32_t pid, tid;
	int64_t node;
	char state;
	char pad[7];
};

struct offcpu_agg {
	struct offcpu_key key;
	uint64_t intervals;
	int64_t ns;
};

struct offcpu_tracker {
	struct offcpu_thread *v;
	size_t n, alloc;
	struct hashmap ids; /* tid -> index in v */
	struct offcpu_agg *agg;
	size_t nagg, allocagg;
	struct hashmap agg_ids;
	size_t finish_at;
};

struct offcpu_tracker *offcpu_tracker_new(void)
{
	return xcalloc(1, sizeof(struct offcpu_tracker));
}

void offcpu_tracker_free(struct offcpu_tracker *t)
{
	if (!t)
		return;
	free(t->v);
	hashmap_release(&t->ids);
	free(t->agg);
	hashmap_release(&t->agg_ids);
	free(t);
}

static struct offcpu_thread *thread_get(struct offcpu_tracker *t, pid_t pid, pid_t tid,
					int64_t t_ns)
{
	int64_t *idx = hashmap_get(&t->ids, &tid, sizeof(tid));
	if (idx && t->v[*idx].pid == pid)
		return &t->v[*idx];
	/* New, or a recycled tid in another process: a new thread. */
	if (t->n == t->alloc) {
		t->alloc = t->alloc ? 2 * t->alloc : 64;
		t->v = xrealloc(t->v, t->alloc * sizeof(*t->v));
	}
	struct offcpu_thread *th = &t->v[t->n];
	*th = (struct offcpu_thread){ .pid = pid, .tid = tid, .first_ns = t_ns, .last_ns = t_ns,
				      .in_ns = -1, .out_ns = -1, .state = '?' };
	hashmap_put(&t->ids, &tid, sizeof(tid), (int64_t)t->n++);
	return th;
}

static void went_out(struct offcpu_thread *th, int64_t t_ns, char state, uint32_t stack)
{
	if (th->in_ns >= 0 && t_ns >= th->in_ns)
		th->on_ns += t_ns - th->in_ns;
	th->in_ns = -1;
	th->out_ns = t_ns;
	th->state = state;
	th->stack = stack;
	th->last_ns = t_ns;
}

void offcpu_tracker_out(struct offcpu_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, char state,
			uint32_t stack)
{
	went_out(thread_get(t, pid, tid, t_ns), t_ns, state, stack);
}

static int close_interval(struct offcpu_thread *th, int64_t t_ns, struct offcpu_interval *done)
{
	int64_t out = th->out_ns;
	th->out_ns = -1;
	th->last_ns = t_ns;
	/* An exiting thread's last switch (X, Z) has no way back. */
	if (out < 0 || t_ns < out || th->state == 'X' || th->state == 'Z')
		return 0;
	*done = (struct offcpu_interval){ .pid = th->pid, .tid = th->tid, .t_ns = out,
					  .dur_ns = t_ns - out, .state = th->state,
					  .stack = th->stack };
	th->off_ns += done->dur_ns;
	th->intervals++;
	return 1;
}

int offcpu_tracker_switch(struct offcpu_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, int out,
			  int preempt, struct offcpu_interval *done)
{
	struct offcpu_thread *th = thread_get(t, pid, tid, t_ns);
	if (out) {
		/* The switch-out sample comes first (the tracepoint fires before the
		 * switch record); without one (lost, or a kernel thread), no stack. */
		if (th->out_ns < 0)
			went_out(th, t_ns, preempt ? 'R' : '?', UINT32_MAX);
		else if (preempt && th->state == '?')
			th->state = 'R';
		return 0;
	}
	int got = close_interval(th, t_ns, done);
	th->in_ns = t_ns;
	th->dead = 0;
	return got;
}

void offcpu_tracker_exit(struct offcpu_tracker *t, pid_t tid, int64_t t_ns)
{
	int64_t *idx = hashmap_get(&t->ids, &tid, sizeof(tid));
	if (!idx)
		return;
	struct offcpu_thread *th = &t->v[*idx];
	if (th->in_ns >= 0 && t_ns >= th->in_ns)
		th->on_ns += t_ns - th->in_ns;
	th->in_ns = -1;
	th->out_ns = -1;
	th->dead = 1;
	if (t_ns > th->last_ns)
		th->last_ns = t_ns;
}

int offcpu_tracker_finish(struct offcpu_tracker *t, int64_t end_ns, struct offcpu_interval *done)
{
	while (t->finish_at < t->n) {
		struct offcpu_thread *th = &t->v[t->finish_at++];
		if (th->dead)
			continue;
		if (th->in_ns >= 0) { /* on the CPU at the end */
			if (end_ns > th->in_ns)
				th->on_ns += end_ns - th->in_ns;
			th->in_ns = -1;
			th->last_ns = end_ns > th->last_ns ? end_ns : th->last_ns;
			continue;
		}
		if (close_interval(th, end_ns, done))
			return 1;
	}
	return 0;
}

void offcpu_tracker_account(struct offcpu_tracker *t, const struct offcpu_interval *iv,
			    int64_t node)
{
	struct offcpu_key k;
	memset(&k, 0, sizeof(k));
	k.pid = iv->pid;
	k.tid = iv->tid;
	k.node = node;
	k.state = iv->state;
	int64_t *idx = hashmap_get(&t->agg_ids, &k, sizeof(k));
	if (!idx) {
		if (t->nagg == t->allocagg) {
			t->allocagg = t->allocagg ? 2 * t->allocagg : 256;
			t->agg = xrealloc(t->agg, t->allocagg * sizeof(*t->agg));
		}
		t->agg[t->nagg] = (struct offcpu_agg){ .key = k };
		idx = hashmap_put(&t->agg_ids, &k, sizeof(k), (int64_t)t->nagg++);
	}
	t->agg[*idx].intervals++;
	t->agg[*idx].ns += iv->dur_ns;
}

static const char offcpu_schema[] =
	"CREATE TABLE IF NOT EXISTS offcpu_threads(pid INTEGER, tid INTEGER, first_ns INTEGER,"
	" last_ns INTEGER, on_cpu_ns INTEGER, off_cpu_ns INTEGER, intervals INTEGER);"
	"CREATE TABLE IF NOT EXISTS offcpu_states(pid INTEGER, tid INTEGER, node INTEGER,"
	" state TEXT, intervals INTEGER, ns INTEGER);";

uint64_t offcpu_tracker_write(struct offcpu_tracker *t, struct recorder *rec)
{
	sqlite3 *db;
	sqlite3_stmt *th = NULL, *st = NULL;
	uint64_t total = 0;
	if (recorder_schema(rec, offcpu_schema) || !(db = recorder_db(rec)) ||
	    sqlite3_prepare_v2(db, "INSERT INTO offcpu_threads VALUES(?,?,?,?,?,?,?)", -1, &th,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO offcpu_states VALUES(?,?,?,?,?,?)", -1, &st,
			       NULL) != SQLITE_OK)
		goto out;
	for (size_t i = 0; i < t->n; i++) {
		const struct offcpu_thread *x = &t->v[i];
		sqlite3_bind_int64(th, 1, x->pid);
		sqlite3_bind_int64(th, 2, x->tid);
		sqlite3_bind_int64(th, 3, x->first_ns);
		sqlite3_bind_int64(th, 4, x->last_ns);
		sqlite3_bind_int64(th, 5, x->on_ns);
		sqlite3_bind_int64(th, 6, x->off_ns);
		sqlite3_bind_int64(th, 7, (int64_t)x->intervals);
		recorder_step(rec, th);
		total += x->intervals;
	}
	for (size_t i = 0; i < t->nagg; i++) {
		const struct offcpu_agg *a = &t->agg[i];
		char s[2] = { a->key.state, '\0' };
		sqlite3_bind_int64(st, 1, a->key.pid);
		sqlite3_bind_int64(st, 2, a->key.tid);
		sqlite3_bind_int64(st, 3, a->key.node);
		sqlite3_bind_text(st, 4, s, 1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 5, (int64_t)a->intervals);
		sqlite3_bind_int64(st, 6, a->ns);
		recorder_step(rec, st);
	}
out:
	sqlite3_finalize(th);
	sqlite3_finalize(st);
	return total;
}

/* ---- the probe: its events are opened by the cpu probe ---- */

static int offcpu_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct perf_event_attr a, like;
	const char *name;
	int off;
	(void)ctx;
	memset(&like, 0, sizeof(like));
	like.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	return offcpu_choose_event(&a, &like, &name, &off, why);
}

static int offcpu_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	(void)p;
	if (cpu_offcpu_enable(ctx, why))
		return -1;
	if (tracefs_mounted) {
		/* The tracepoint's id is all sonde needed: the event stays valid
		 * without the mount, so the system is left as it was found. */
		int undone = umount2("/sys/kernel/tracing", MNT_DETACH) == 0;
		record_note(ctx->rec, 0, "offcpu", "event",
			    undone ? "mounted tracefs at /sys/kernel/tracing to find the "
				     "sched_switch tracepoint, and unmounted it again"
				   : "mounted tracefs at /sys/kernel/tracing to find the "
				     "sched_switch tracepoint (it stays mounted; `umount "
				     "/sys/kernel/tracing` undoes it)");
		record_changelog(ctx->rec, "/sys/kernel/tracing",
				 undone ? "mounted, then unmounted" : "mounted",
				 "tracefs, to read the sched:sched_switch tracepoint's id", NULL);
		tracefs_mounted = 0;
	}
	return 0;
}

static void offcpu_stop(struct probe *p, struct probe_ctx *ctx)
{
	(void)p;
	(void)ctx; /* the cpu probe writes the intervals when it stops */
}

const struct probe_ops probe_offcpu = {
	.name = "offcpu",
	.summary = "off-CPU time: where threads block, with stacks (sched_switch)",
	.enabled_by_default = 1,
	.available = offcpu_available,
	.start = offcpu_start,
	.stop = offcpu_stop,
};
