/* offcpu probe: where the target's threads wait. The sched:sched_switch
 * tracepoint (with call stacks and prev_state) marks each switch-out, and
 * PERF_RECORD_SWITCH records mark the switch-ins; each blocked interval becomes
 * an "offcpu" sample weighted by its nanoseconds. The probe registers its
 * switch events, its record handlers and its end with the run's perf layer
 * (perf_layer.h), whose stacks (the cpu probe's maps, unwinding and symbols)
 * give each switch-out its stack; this file holds the interval bookkeeping
 * and the probe (perf_choose.c chooses the event). */
#define LOG_DOMAIN "offcpu"
#include "offcpu.h"
#include "perf_choose.h"
#include "perf_layer.h"
#include "perf_record.h"
#include "probe.h"
#include "tracefs_mount.h"
#include "../record/recorder.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

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

void offcpu_tracker_exit(struct offcpu_tracker *t, pid_t pid, pid_t tid, int64_t t_ns)
{
	int64_t *idx = hashmap_get(&t->ids, &tid, sizeof(tid));
	if (!idx || t->v[*idx].pid != pid)
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

/* ---- the probe: its events are opened and read by the perf layer ---- */

struct offcpu_state {
	struct perf_layer *perf;
	const struct perf_stacks *stacks; /* the layer's */
	struct perf_event_attr attr;
	const char *event;
	int state_offset; /* of prev_state in the tracepoint's raw data; -1: none */
	int64_t start_ns;
	struct offcpu_tracker *trk;
	uint64_t samples, malformed, lost;
};

/* A switch-out: the thread's stack and state as it leaves the CPU. */
static void on_switch_sample(void *arg, const uint8_t *rec, size_t size)
{
	struct offcpu_state *os = arg;
	struct perf_sample ps;
	if (perf_decode_sample(rec, size, os->attr.sample_type, os->attr.sample_regs_user, &ps)) {
		os->malformed++;
		return;
	}
	uint32_t stack = os->stacks->stack_of(os->stacks->owner, &ps);
	offcpu_tracker_out(os->trk, (pid_t)ps.pid, (pid_t)ps.tid, (int64_t)ps.time - os->start_ns,
			   offcpu_state_from_raw(ps.raw, ps.raw_size, os->state_offset), stack);
}

static void interval_queue(struct offcpu_state *os, const struct offcpu_interval *iv)
{
	struct perf_weighted w = { iv->pid, iv->tid, iv->t_ns, iv->dur_ns, iv->state, iv->stack };
	os->stacks->weighted(os->stacks->owner, &w);
}

static void on_switch_record(void *arg, const uint8_t *rec, size_t size)
{
	struct offcpu_state *os = arg;
	struct perf_switch sw;
	struct offcpu_interval iv;
	if (perf_decode_switch(rec, size, os->attr.sample_type, &sw)) {
		os->malformed++;
		return;
	}
	if (offcpu_tracker_switch(os->trk, (pid_t)sw.pid, (pid_t)sw.tid,
				  (int64_t)sw.time - os->start_ns, sw.out, sw.preempt, &iv))
		interval_queue(os, &iv);
}

/* An exit record of the sampling set: the thread will not switch in again. */
static void on_exit_record(void *arg, const uint8_t *rec, size_t size)
{
	struct offcpu_state *os = arg;
	struct perf_fork f;
	if (!perf_decode_fork(rec, size, &f))
		offcpu_tracker_exit(os->trk, (pid_t)f.pid, (pid_t)f.tid,
				    (int64_t)f.time - os->start_ns);
}

/* Threads still waiting at the end (attach, -d). */
static void records_end(void *arg, int64_t end_ns)
{
	struct offcpu_state *os = arg;
	struct offcpu_interval iv;
	while (offcpu_tracker_finish(os->trk, end_ns, &iv))
		interval_queue(os, &iv);
}

static void interval_written(void *arg, const struct perf_weighted *w, int64_t node)
{
	struct offcpu_state *os = arg;
	struct offcpu_interval iv = { .pid = w->pid, .tid = w->tid, .t_ns = w->t_ns,
				      .dur_ns = w->weight, .state = w->state, .stack = w->stack };
	offcpu_tracker_account(os->trk, &iv, node);
	os->samples++;
}

static void intervals_done(void *arg, struct recorder *rec)
{
	struct offcpu_state *os = arg;
	offcpu_tracker_write(os->trk, rec);
	record_meta_int(rec, "offcpu_samples", (int64_t)os->samples);
	record_meta_int(rec, "offcpu_malformed_records", (int64_t)os->malformed);
	record_meta_int(rec, "offcpu_lost_records", (int64_t)os->lost);
}

static int offcpu_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct perf_event_attr a, like;
	const char *name;
	int off, mounted = 0;
	(void)ctx;
	memset(&like, 0, sizeof(like));
	like.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	int rc = perf_choose_switches(&a, &like, &name, &off, &mounted, why);
	if (mounted) /* the tracepoint's id is all sonde needed: the event stays valid */
		tracefs_unmount(); /* start mounts it again, and says so */
	return rc;
}

static void tracefs_note(struct probe_ctx *ctx)
{
	int undone = tracefs_unmount();
	record_note(ctx->rec, 0, "offcpu", "event",
		    undone ? "mounted tracefs at /sys/kernel/tracing to find the "
			     "sched_switch tracepoint, and unmounted it again"
			   : "mounted tracefs at /sys/kernel/tracing to find the "
			     "sched_switch tracepoint (it stays mounted; `umount "
			     "/sys/kernel/tracing` undoes it)");
	record_changelog(ctx->rec, "/sys/kernel/tracing",
			 undone ? "mounted, then unmounted" : "mounted",
			 "tracefs, to read the sched:sched_switch tracepoint's id", NULL);
}

/* Registers the switch set, its handlers and the end with the layer. */
static void layer_join(struct offcpu_state *os)
{
	struct perf_layer *l = os->perf;
	static const struct perf_layer_handler switches[] = {
		{ PERF_RECORD_SAMPLE, on_switch_sample },
		{ PERF_RECORD_SWITCH, on_switch_record },
	};
	perf_layer_set_add(l, PERF_LAYER_SWITCHES, &os->attr, NULL);
	perf_layer_on_each(l, PERF_LAYER_SWITCHES, switches, sizeof(switches) / sizeof(switches[0]),
			   os);
	perf_layer_on_lost(l, PERF_LAYER_SWITCHES, &os->lost);
	perf_layer_on(l, PERF_LAYER_SAMPLES, PERF_RECORD_EXIT, on_exit_record, os);
	struct perf_user u = { records_end, interval_written, intervals_done, os };
	perf_layer_user_add(l, &u);
}

static int offcpu_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct offcpu_state *os = xcalloc(1, sizeof(*os));
	p->state = os;
	const struct perf_event_attr *samples =
		ctx->perf ? perf_layer_set_attr(ctx->perf, PERF_LAYER_SAMPLES) : NULL;
	os->stacks = ctx->perf ? perf_layer_stacks(ctx->perf) : NULL;
	if (!samples || !os->stacks) {
		strbuf_addstr(why, "needs the cpu probe, whose rings and symbols it shares "
				   "(it is off or unavailable)");
		return -1;
	}
	/* The same stacks as the cpu samples (fp or dwarf); no counters read. */
	struct perf_event_attr like = *samples;
	like.sample_type &= ~(uint64_t)PERF_SAMPLE_READ;
	like.read_format = 0;
	int mounted = 0;
	int rc = perf_choose_switches(&os->attr, &like, &os->event, &os->state_offset, &mounted,
				     why);
	if (mounted)
		tracefs_note(ctx);
	if (rc)
		return -1;
	os->perf = ctx->perf;
	os->start_ns = ctx->start_ns;
	os->trk = offcpu_tracker_new();
	layer_join(os);
	record_meta(ctx->rec, "offcpu_event", os->event);
	record_meta_int(ctx->rec, "offcpu_state_known", os->state_offset >= 0);
	if (os->state_offset < 0)
		record_note(ctx->rec, 0, "offcpu", "info",
			    strcmp(os->event, "context-switches")
				? "blocked states (sleeping S, I/O D) are not recorded: the "
				  "sched_switch tracepoint's raw data needs root or CAP_PERFMON"
				: "blocked states (sleeping S, I/O D) are not recorded: the "
				  "sched:sched_switch tracepoint is not available (no tracefs), so "
				  "the context-switches event is used");
	log_info("off-CPU time from %s", os->event);
	return 0;
}

/* The intervals are written in the cpu probe's stop, through the layer's end. */
static void offcpu_stop(struct probe *p, struct probe_ctx *ctx)
{
	(void)p;
	(void)ctx;
}

static void offcpu_free(struct probe *p)
{
	struct offcpu_state *os = p->state;
	if (!os)
		return;
	offcpu_tracker_free(os->trk);
	free(os);
	p->state = NULL;
}

static const char *const probe_offcpu_needs[] = { "perf.samples", NULL };

static const char *const offcpu_writes[] = {
	"samples:offcpu",
	"offcpu_threads",
	"offcpu_states",
	NULL,
};

const struct probe_ops probe_offcpu = {
	.name = "offcpu",
	.writes = offcpu_writes,
	.needs = probe_offcpu_needs,
	.summary = "off-CPU time: where threads block, with stacks (sched_switch)",
	.enabled_by_default = 1,
	.available = offcpu_available,
	.start = offcpu_start,
	.stop = offcpu_stop,
	.free = offcpu_free,
};
