/* python probe: CPython stacks of every thread of every Python process of the
 * target, read from outside at --rate Hz without pausing it (symbols/cpython).
 * Each sample records the thread's stack (kind "python", module = file),
 * whether it stands for CPU time (the thread's CPU clock, python_clock.c)
 * and whether the thread held the GIL, so wall, cpu and gil views all come
 * from one recording (docs/python.md). */
#define LOG_DOMAIN "python"
#include "probe.h"
#include "python_probe.h"
#include "pywake.h"
#include "../record/recorder.h"
#include "../record/stacks.h"
#include "../symbols/cpython.h"
#include "../target/procfs.h"
#include "../util/clock.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/nice.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static void read_exe(pid_t pid, char *out, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, out, cap - 1);
	out[n > 0 ? n : 0] = '\0';
}

/* The calling thread's CPU time: what sampling costs, whatever the machine's load. */
static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static int64_t jitter(struct py_state *ps)
{
	/* +-10% of the period, so sampling does not lock onto the target's own rhythm. */
	ps->rng ^= ps->rng << 13;
	ps->rng ^= ps->rng >> 7;
	ps->rng ^= ps->rng << 17;
	int64_t span = ps->period_ns / 5;
	return span ? (int64_t)(ps->rng % (uint64_t)span) - span / 2 : 0;
}

/* Writes the samples still queued for its threads' clocks (to sw; NULL:
 * drops them), then forgets the process. */
static void target_close(struct py_state *ps, struct stack_writer *sw, struct py_target *t)
{
	py_target_samples_flush(ps, sw, t, clock_mono_ns());
	py_threads_clocks_close(t);
	cpython_close(t->cp);
	t->cp = NULL;
	hashmap_release(&t->tids);
	hashmap_release(&t->frame_ids);
	free(t->threads);
	t->threads = NULL;
	t->nthreads = 0;
	t->state = PY_DONE;
}

/* Whether the process exec'd since last looked at (it keeps its pid; a
 * Python spawning a worker forks and execs the same exe), noting when. A
 * process that cannot be read any more has not. */
static int exec_seen(struct py_target *t, int64_t now)
{
	char exe[512];
	uint64_t id;
	read_exe(t->pid, exe, sizeof(exe));
	if (!exe[0] || procfs_read_exec_id(t->pid, &id))
		return 0;
	if (!strcmp(exe, t->exe) && id == t->exec_id)
		return 0;
	snprintf(t->exe, sizeof(t->exe), "%s", exe);
	t->exec_id = id;
	t->exe_since_ns = now;
	return 1;
}

static void try_attach(struct py_state *ps, struct probe_ctx *ctx, struct py_target *t, int64_t now)
{
	exec_seen(t, now);
	/* Before exec the process is still a copy of sonde: nothing to find yet. */
	if (!strcmp(t->exe, ps->self_exe) && t->exe[0]) {
		t->next_try_ns = now + PY_RETRY_NS;
		return;
	}
	if (now - t->exe_since_ns > PY_GIVE_UP_NS) {
		t->next_try_ns = now + PY_GIVE_UP_NS; /* only an exec changes the answer */
		return;
	}
	struct strbuf why = STRBUF_INIT;
	int64_t t0 = clock_mono_ns();
	enum cpython_open_result r = cpython_open(t->pid, &t->cp, &why);
	int64_t took_ns = clock_mono_ns() - t0;
	switch (r) {
	case CPYTHON_FOUND:
		t->state = PY_SAMPLING;
		t->next_try_ns = now + NS_PER_S; /* while sampling: when to look for an exec */
		log_info("pid %d: CPython %s at %s", (int)t->pid, cpython_version(t->cp),
			 cpython_where(t->cp));
		{
			struct strbuf msg = STRBUF_INIT;
			strbuf_addf(&msg, "pid %d: CPython %s found at %s", (int)t->pid,
				    cpython_version(t->cp), cpython_where(t->cp));
			record_note(ctx->rec, now - ctx->start_ns, "python", "found", msg.buf);
			strbuf_release(&msg);
		}
		break;
	case CPYTHON_UNSUPPORTED:
		log_warn("pid %d: %s", (int)t->pid, why.buf);
		record_note(ctx->rec, now - ctx->start_ns, "python", "unsupported", why.buf);
		target_close(ps, NULL, t); /* nothing sampled yet */
		break;
	case CPYTHON_DENIED:
		/* The whole machine holds processes sonde may not read (another
		 * container's init): the report's notes list them, quietly. */
		if (ctx->cfg->whole_machine)
			log_info("pid %d: %s", (int)t->pid, why.buf);
		else
			log_warn("pid %d: %s", (int)t->pid, why.buf);
		record_note(ctx->rec, now - ctx->start_ns, "python", "unreadable", why.buf);
		target_close(ps, NULL, t); /* nothing sampled yet */
		break;
	case CPYTHON_ERROR:
		target_close(ps, NULL, t); /* nothing sampled yet */
		break;
	case CPYTHON_NOT_PYTHON: {
		int64_t wait = now - t->exe_since_ns < PY_FAST_FOR_NS ? PY_RETRY_FAST_NS : PY_RETRY_NS;
		if (10 * took_ns > wait) /* a slow look (a memory scan for _PyRuntime) */
			wait = 10 * took_ns < PY_RETRY_SLOW_NS ? 10 * took_ns : PY_RETRY_SLOW_NS;
		t->next_try_ns = now + wait;
		break;
	}
	}
	strbuf_release(&why);
}

/* The thread's record, created (and its name recorded) on first sight. */
static struct py_thread *thread_get(struct py_state *ps, struct stack_writer *sw,
				    struct py_target *t, pid_t tid)
{
	int64_t *idx = hashmap_get(&t->tids, &tid, sizeof(tid));
	if (idx)
		return &t->threads[*idx];
	if (t->nthreads >= PY_MAX_THREADS) {
		py_target_samples_flush(ps, sw, t, clock_mono_ns());
		py_threads_clocks_close(t);
		hashmap_release(&t->tids);
		t->tids = (struct hashmap)HASHMAP_INIT;
		t->nthreads = 0;
	}
	if (!t->threads)
		t->threads = xcalloc(PY_MAX_THREADS, sizeof(*t->threads));
	struct py_thread *th = &t->threads[t->nthreads];
	th->oncpu_ns = -1;
	th->credit_ns = 0;
	th->nogil_samples = th->nogil_ran = 0;
	th->name_hash = 0;
	th->clock_fd = -1;
	th->state_fd = -1;
	th->seen_poll = 0;
	th->still_since_ns = 0;
	th->tid = tid;
	th->node = 0;
	th->gil = -1;
	th->npending = 0;
	th->clock_poll = 0; /* a slot used before holds another thread's clock */
	hashmap_put(&t->tids, &tid, sizeof(tid), (int64_t)t->nthreads++);
	struct procfs_stat st;
	if (!procfs_read_stat(t->pid, tid, &st))
		stack_thread_name(sw, t->pid, tid, st.comm);
	return th;
}

/* Records threading's name of the thread (it replaces the kernel's) when it
 * is new or changed: a program may name a thread after starting it. */
static void thread_name_given(struct stack_writer *sw, struct py_target *t, struct py_thread *th,
			      pid_t tid, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (const char *c = name; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	h |= 1;
	if (h == th->name_hash)
		return;
	th->name_hash = h;
	stack_thread_name_given(sw, t->pid, tid, name);
}

/* The frames row of f: one small hash lookup on (code object, line) instead
 * of hashing its strings every sample. */
static int64_t frame_id(struct stack_writer *sw, struct py_target *t, const struct cpython_frame *f)
{
	struct {
		uint32_t code_id;
		int32_t line;
	} key = { f->code_id, f->line };
	int64_t *cached = hashmap_get(&t->frame_ids, &key, sizeof(key));
	if (cached)
		return *cached;
	struct frame_info fi = { .function = f->function, .file = f->file, .line = f->line,
				 .module = f->file, .kind = "python" };
	int64_t id = stack_frame(sw, &fi);
	if (id)
		hashmap_put(&t->frame_ids, &key, sizeof(key), id);
	return id;
}

/* 1 when every thread of the last read was recorded and none of them has
 * run since its last sample, nor for PY_STILL_NS before it (their clocks
 * are read, not their memory): a thread that did not run has not changed its
 * stack, and a new Python thread is started by one that runs. An idle
 * program costs a clock read per thread per tick instead of a walk of its
 * stacks (its memory is read again once a second, PY_STILL_MAX_NS). The
 * threads that held the GIL are looked at first: in a busy process one of
 * them ran, and its clock, read once a poll, is the one its sample needs.
 * A thread found running now is sampled now, its clock moved: the process
 * cannot be still before PY_STILL_NS from now, and is not looked at until
 * then (t->unmoved_from_ns). */
static int target_unmoved(struct py_state *ps, struct py_target *t, int64_t now)
{
	if (!t->read_whole || !t->threads || now < t->unmoved_from_ns)
		return 0;
	int any = 0;
	for (int gil = 1; gil >= 0; gil--)
		for (size_t k = 0; k < t->nthreads; k++) {
			struct py_thread *th = &t->threads[k];
			if (th->seen_poll != t->sampled_poll || !th->node || (th->gil == 1) != gil)
				continue;
			struct procfs_schedstat ss;
			if (th->oncpu_ns < 0 || py_thread_clock_read(ps, t, th, th->tid, &ss))
				return 0;
			if ((int64_t)ss.oncpu_ns != th->oncpu_ns) {
				t->unmoved_from_ns = now + PY_STILL_NS;
				return 0;
			}
			if (now - th->still_since_ns < PY_STILL_NS) {
				t->unmoved_from_ns = th->still_since_ns + PY_STILL_NS;
				return 0;
			}
			any = 1;
		}
	return any;
}

/* Records again the last stacks of a process none of whose threads ran,
 * stamped at: at the tick read now, or (fill) at a tick a batch slept
 * through, which found the threads' clocks where the last sample left them:
 * off CPU, with the same stacks, all along. */
static void sample_still(struct py_state *ps, struct probe_ctx *ctx, struct py_target *t,
			 int64_t at, int fill)
{
	struct stack_writer *sw = recorder_stacks(ctx->rec);
	uint64_t last = t->sampled_poll;
	for (size_t k = 0; sw && k < t->nthreads; k++) {
		struct py_thread *th = &t->threads[k];
		if (th->seen_poll != last || !th->node)
			continue;
		struct sample_info si = { .t_ns = at - ctx->start_ns, .pid = t->pid, .tid = th->tid,
					  .node = th->node, .source = "python", .weight = 1,
					  .on_cpu = 0, .gil = th->gil };
		if (fill) { /* after the samples queued before the batch */
			py_thread_samples_flush(ps, sw, t, th, at);
			stack_sample(sw, &si);
		} else {
			py_thread_sample(ps, sw, t, th, &si, at);
		}
		t->samples++;
		ps->samples++;
		if (fill)
			ps->stacks_filled++;
		else
			ps->stacks_still++;
	}
	if (!fill)
		t->sampled_poll = ps->polls;
}

static int check_exec(struct py_state *ps, struct probe_ctx *ctx, struct py_target *t, int64_t now);

/* Records the stacks read now, one sample per thread stamped now: a late
 * read stands for its own moment only, never for the ticks it slept through. */
static void sample_target(struct py_state *ps, struct probe_ctx *ctx, struct py_target *t,
			  int64_t now)
{
	int unmoved = target_unmoved(ps, t, now);
	/* Read again once a second all the same (PY_STILL_MAX_NS): still. */
	if (!unmoved)
		t->still_from_ns = 0;
	else if (!t->still_from_ns)
		t->still_from_ns = now;
	if (unmoved && t->read_ns && now - t->read_ns < PY_STILL_MAX_NS) {
		sample_still(ps, ctx, t, now, 0);
		return;
	}
	struct cpython_sample s;
	if (cpython_sample(t->cp, &s)) { /* exited, or exec'd: its memory is another's */
		if (!check_exec(ps, ctx, t, now))
			target_close(ps, recorder_stacks(ctx->rec), t);
		return;
	}
	uint64_t rereads = cpython_rereads(t->cp), kept = cpython_kept(t->cp);
	ps->stacks_reread += rereads - t->rereads;
	t->rereads = rereads;
	ps->stacks_kept += kept - t->kept;
	t->kept = kept;
	if (!s.nthreads) /* finalised, not started, or exec'd: look for an exec now */
		t->next_try_ns = now;
	uint64_t last_poll = t->sampled_poll;
	t->read_ns = now;
	t->sampled_poll = ps->polls;
	t->read_whole = 0;
	size_t recorded = 0;
	struct stack_writer *sw = recorder_stacks(ctx->rec);
	if (!sw)
		return;
	if (cpython_code_generation(t->cp) != t->code_gen) {
		hashmap_release(&t->frame_ids);
		t->frame_ids = (struct hashmap)HASHMAP_INIT;
		t->code_gen = cpython_code_generation(t->cp);
	}
	int64_t ids[PY_MAX_FRAMES];
	t->gil_held = 0;
	for (size_t i = 0; i < s.nthreads; i++)
		t->gil_held |= s.threads[i].ok && s.threads[i].holds_gil;
	for (size_t i = 0; i < s.nthreads; i++) {
		const struct cpython_thread *th = &s.threads[i];
		/* Not read whole, or a thread state not bound to an OS thread yet
		 * (a thread starting: every supported version names its thread). */
		if (!th->ok || th->tid <= 0) {
			ps->stacks_dropped++;
			continue;
		}
		if (!th->n || th->n > PY_MAX_FRAMES)
			continue; /* no Python code on this thread right now */
		pid_t tid = th->tid;
		struct py_thread *pt = thread_get(ps, sw, t, tid);
		/* A stack kept from the last read was recorded then: its node. */
		int64_t node = !th->walked && pt->seen_poll == last_poll ? pt->node : 0;
		if (!node) {
			size_t n = 0;
			/* cpython gives innermost first; the recording wants outermost first. */
			for (size_t k = th->n; k-- > 0;) {
				const struct cpython_frame *f = &s.frames[th->first + k];
				int64_t id = frame_id(sw, t, f);
				if (!id)
					return;
				ids[n++] = id;
			}
			node = stack_intern(sw, ids, n);
			if (!node)
				return;
		}
		if (th->name)
			thread_name_given(sw, t, pt, tid, th->name);
		struct sample_info si = { .t_ns = now - ctx->start_ns, .pid = t->pid, .tid = tid,
					  .node = node, .source = "python", .weight = 1,
					  .on_cpu = -1, .gil = th->holds_gil };
		py_thread_sample(ps, sw, t, pt, &si, now);
		pt->node = node;
		pt->gil = th->holds_gil;
		t->samples++;
		ps->samples++;
		recorded++;
	}
	/* A thread without Python frames (or not read) has no clock here: one
	 * that starts running Python must not go unseen. */
	t->read_whole = recorded == s.nthreads;
	/* One not in this read (it exited, or has no Python frames now) gets
	 * its queued samples written. */
	for (size_t k = 0; k < t->nthreads; k++)
		if (t->threads[k].npending && t->threads[k].seen_poll != ps->polls)
			py_thread_samples_flush(ps, sw, t, &t->threads[k], now);
}

static int py_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	(void)ctx;
	if (access("/proc/self/maps", R_OK)) {
		strbuf_addstr(why, "/proc is not mounted or not readable");
		return -1;
	}
	return 0;
}

static void *py_thread_main(void *arg);
static void thread_kick(struct py_state *ps);

static int py_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct py_state *ps = xcalloc(1, sizeof(*ps));
	p->state = ps;
	int hz = ctx->cfg->rate_hz > 0 ? ctx->cfg->rate_hz : 99;
	ps->period_ns = NS_PER_S / hz;
	ps->clock_every = (size_t)(PY_CLOCK_SPAN_NS / ps->period_ns);
	if (ps->clock_every > PY_CLOCK_EVERY)
		ps->clock_every = PY_CLOCK_EVERY;
	if (ps->clock_every < 1)
		ps->clock_every = 1;
	ps->rng = (uint64_t)clock_mono_ns() | 1;
	read_exe(getpid(), ps->self_exe, sizeof(ps->self_exe));
	ps->t = xcalloc(PY_MAX_TARGETS, sizeof(*ps->t));
	record_meta_int(ctx->rec, "python_rate_hz", hz);
	ps->wake = pywake_open();
	p->next_poll_ns = INT64_MAX; /* the session loop never polls: the thread does */
	ps->ctx = ctx;
	ps->next_poll_ns = INT64_MAX;
	pthread_mutex_init(&ps->lock, NULL);
	ps->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ps->kick_fd < 0) {
		strbuf_addf(why, "cannot make its sampling thread's eventfd: %s", strerror(errno));
		return -1;
	}
	int err = pthread_create(&ps->thread, NULL, py_thread_main, ps);
	if (err) {
		strbuf_addf(why, "cannot start its sampling thread: %s", strerror(err));
		return -1;
	}
	ps->thread_running = 1;
	return 0;
}

/* From the session loop: the sampling thread looks at the process at once. */
static void py_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	struct py_state *ps = p->state;
	(void)ctx;
	pthread_mutex_lock(&ps->lock);
	struct py_target *t = NULL;
	for (size_t i = 0; i < ps->n && !t; i++) /* a finished process's slot */
		if (ps->t[i].state == PY_DONE)
			t = &ps->t[i];
	if (!t && ps->n < PY_MAX_TARGETS)
		t = &ps->t[ps->n++];
	if (!t) {
		log_debug("pid %d not followed: already %d live processes", (int)pid,
			  PY_MAX_TARGETS);
		goto out;
	}
	int64_t now = clock_mono_ns();
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->state = PY_PENDING;
	t->tids = (struct hashmap)HASHMAP_INIT;
	t->frame_ids = (struct hashmap)HASHMAP_INIT;
	t->open_clocks = &ps->open_clocks;
	t->exe_since_ns = now;
	t->next_try_ns = now;
	ps->next_poll_ns = now;
	thread_kick(ps);
out:
	pthread_mutex_unlock(&ps->lock);
}

static void py_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	struct py_state *ps = p->state;
	pthread_mutex_lock(&ps->lock);
	for (size_t i = 0; i < ps->n; i++)
		if (ps->t[i].pid == pid && ps->t[i].state != PY_DONE)
			target_close(ps, recorder_stacks(ctx->rec), &ps->t[i]);
	pthread_mutex_unlock(&ps->lock);
}

/* A Python that execs another program (or another Python, or itself: a
 * forked copy of a Python found before its exec) keeps its pid: look again
 * from scratch. Returns whether it did. */
static int check_exec(struct py_state *ps, struct probe_ctx *ctx, struct py_target *t, int64_t now)
{
	t->next_try_ns = now + NS_PER_S;
	if (!exec_seen(t, now))
		return 0;
	py_target_samples_flush(ps, recorder_stacks(ctx->rec), t, now);
	record_note(ctx->rec, now - ctx->start_ns, "python", "exec",
		    "a sampled Python process exec'd a program: looking for an interpreter again");
	cpython_close(t->cp);
	t->cp = NULL;
	t->rereads = 0;
	t->kept = 0;
	hashmap_release(&t->frame_ids);
	t->frame_ids = (struct hashmap)HASHMAP_INIT;
	t->code_gen = 0;
	t->state = PY_PENDING;
	t->next_try_ns = now;
	return 1;
}

/* Raises the sampling thread's priority the first time it samples a Python
 * (it stays unchanged where sonde may not: not root, no CAP_SYS_NICE). A
 * sampler that waits for a CPU behind the busy processes of the machine reads
 * late or not at all; its own CPU use is the same either way. On Linux a nice
 * value is per thread: the rest of sonde keeps its own. */
static void sampler_nice_raise(struct py_state *ps, struct probe_ctx *ctx)
{
	if (ps->nice_raised)
		return;
	ps->nice_raised = -1;
	int before = 0, rc = nice_raise(PY_NICE, &before);
	if (rc < 0)
		log_debug("nice %d not permitted (%s): sampling at nice %d", PY_NICE,
			  strerror(-rc), before);
	if (rc <= 0)
		return;
	ps->nice_raised = 1;
	record_meta_int(ctx->rec, "python_nice", PY_NICE);
}

/* Whether the next poll may leave ticks unread: every sampled process has
 * been still for PY_BATCH_AFTER_NS and each of its threads is watched
 * (pywake.h). Watches are set here; a refusal ends the batches. */
static int batch_allowed(struct py_state *ps, int64_t now)
{
	int any = 0;
	for (size_t i = 0; ps->wake && i < ps->n; i++) {
		struct py_target *t = &ps->t[i];
		if (t->state == PY_PENDING)
			return 0; /* looked at again soon: polls on time */
		if (t->state != PY_SAMPLING)
			continue;
		if (!t->still_from_ns || now - t->still_from_ns < PY_BATCH_AFTER_NS)
			return 0;
		for (size_t k = 0; k < t->nthreads; k++) {
			const struct py_thread *th = &t->threads[k];
			if (th->seen_poll == t->sampled_poll && th->node &&
			    pywake_watch(ps->wake, t->pid, th->tid))
				return 0;
		}
		any = 1;
	}
	return any;
}

/* The ticks from the batch's first up to (not including) until: when no
 * thread ran meanwhile (and no watch fired), each is a sample of the stacks
 * the process had all along; otherwise they are missed. */
static void batch_fill(struct py_state *ps, struct probe_ctx *ctx, struct py_target *t,
		       int64_t until, int woken, int64_t now)
{
	int64_t first = ps->batch_first_ns;
	/* The grid's ticks up to half a period before until: the tick at until
	 * (jittered) is the poll's own sample. */
	if (!first || until - first <= ps->period_ns / 2)
		return;
	int64_t ticks = (until - first - ps->period_ns / 2) / ps->period_ns + 1;
	if (woken || !target_unmoved(ps, t, now)) {
		ps->ticks_missed += ticks;
		return;
	}
	for (int64_t k = 0; k < ticks; k++)
		sample_still(ps, ctx, t, first + k * ps->period_ns, 1);
}

/* One sampling tick (and the looks for new interpreters due by now), on the
 * sampling thread with ps->lock held. */
static void py_poll(struct py_state *ps, struct probe_ctx *ctx, int64_t now)
{
	int64_t next = INT64_MAX;
	if (++ps->polls % PY_CLOCK_IDLE_POLLS == 0 && ps->open_clocks)
		py_clocks_sweep(ps);
	/* A poll a period or more after its tick slept through the ticks since:
	 * they are counted as missed, not filled in with what it reads now. A
	 * poll before its tick was woken by a watch (pywake.h). */
	int64_t due = ps->tick_due_ns;
	int64_t behind = due && now > due ? (now - due) / ps->period_ns : 0;
	int woken = ps->wake && pywake_fired(ps->wake);
	ps->tick_due_ns = 0;
	int sampled = 0;
	for (size_t i = 0; i < ps->n; i++) {
		struct py_target *t = &ps->t[i];
		if (t->state == PY_PENDING && now >= t->next_try_ns) {
			int64_t t0 = cpu_ns();
			try_attach(ps, ctx, t, now);
			ps->attach_ns += cpu_ns() - t0;
		}
		if (t->state == PY_SAMPLING && now >= t->next_try_ns)
			check_exec(ps, ctx, t, now);
		if (t->state == PY_SAMPLING) {
			sampler_nice_raise(ps, ctx);
			batch_fill(ps, ctx, t, due && now > due ? due : now, woken, now);
			sample_target(ps, ctx, t, now);
			sampled = 1;
		}
		if (t->state == PY_PENDING && t->next_try_ns < next)
			next = t->next_try_ns;
		if (t->state == PY_SAMPLING)
			next = 0;
	}
	if (sampled && behind > 0) {
		ps->ticks_late++;
		ps->ticks_missed += behind;
	}
	int was_batching = ps->batch_first_ns != 0;
	ps->batch_first_ns = 0;
	if (next == 0) {
		/* The schedule keeps its grid: the next tick is one period after
		 * the last one this poll read or slept through (less than a period
		 * from now), so each tick is either read or counted as missed. */
		int64_t last = due && now >= due ? due + behind * ps->period_ns : now;
		int64_t ticks = 1;
		if (PY_BATCH_NS / ps->period_ns > 1 && !woken && batch_allowed(ps, now)) {
			ticks = PY_BATCH_NS / ps->period_ns;
			ps->batch_first_ns = last + ps->period_ns;
			ps->batches += !was_batching;
		}
		next = last + ticks * ps->period_ns + jitter(ps);
		if (next <= now)
			next = now + ps->period_ns / 2;
		ps->tick_due_ns = next;
	}
	if (!ps->batch_first_ns && ps->wake && pywake_count(ps->wake))
		pywake_clear(ps->wake);
	ps->next_poll_ns = next;
}

/* The sampling thread: Python stacks are read on time whatever the session
 * loop is doing (symbolizing, scanning /proc, committing). It sleeps until
 * the next tick, a kick or a watch. */
static void *py_thread_main(void *arg)
{
	struct py_state *ps = arg;
	pthread_mutex_lock(&ps->lock);
	while (!ps->thread_stop) {
		int64_t now = clock_mono_ns();
		if (now >= ps->next_poll_ns) {
			py_poll(ps, ps->ctx, now);
			continue;
		}
		int64_t wait_ns = ps->next_poll_ns - now;
		if (wait_ns > NS_PER_S)
			wait_ns = NS_PER_S;
		struct pollfd pfd[2] = { { .fd = ps->kick_fd, .events = POLLIN },
					 { .fd = ps->wake ? pywake_fd(ps->wake) : -1,
					   .events = POLLIN } };
		struct timespec ts = { (time_t)(wait_ns / NS_PER_S), (long)(wait_ns % NS_PER_S) };
		pthread_mutex_unlock(&ps->lock);
		int n = ppoll(pfd, 2, &ts, NULL);
		pthread_mutex_lock(&ps->lock);
		uint64_t kicks;
		if (n > 0 && (pfd[0].revents & POLLIN) &&
		    read(ps->kick_fd, &kicks, sizeof(kicks)) < 0)
			log_debug("python probe: kick read: %s", strerror(errno));
		if (n > 0 && (pfd[1].revents & POLLIN) && !ps->thread_stop)
			py_poll(ps, ps->ctx, clock_mono_ns()); /* a watched thread ran */
	}
	/* Its CPU time, wake-ups included, less the looks for interpreters: two
	 * clock reads a tick cost more than a tenth of a busy run's sampling. */
	ps->sampling_ns = cpu_ns() - ps->attach_ns;
	pthread_mutex_unlock(&ps->lock);
	return NULL;
}

static void thread_kick(struct py_state *ps)
{
	uint64_t one = 1;
	if (write(ps->kick_fd, &one, sizeof(one)) < 0)
		log_debug("python probe: kick: %s", strerror(errno));
}

/* Stops and joins the sampling thread (its nice value goes with it). */
static void thread_stop(struct py_state *ps)
{
	if (!ps->thread_running)
		return;
	pthread_mutex_lock(&ps->lock);
	ps->thread_stop = 1;
	thread_kick(ps);
	pthread_mutex_unlock(&ps->lock);
	pthread_join(ps->thread, NULL);
	ps->thread_running = 0;
}

static void py_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct py_state *ps = p->state;
	thread_stop(ps);
	if (ps->batch_first_ns) { /* the ticks the last batch slept through, to now */
		int64_t now = clock_mono_ns();
		int woken = ps->wake && pywake_fired(ps->wake);
		ps->polls++;
		for (size_t i = 0; i < ps->n; i++)
			if (ps->t[i].state == PY_SAMPLING)
				batch_fill(ps, ctx, &ps->t[i], now, woken, now);
		ps->batch_first_ns = 0;
	}
	for (size_t i = 0; i < ps->n; i++) /* the samples queued for a clock read */
		if (ps->t[i].state == PY_SAMPLING)
			py_target_samples_flush(ps, recorder_stacks(ctx->rec), &ps->t[i],
						clock_mono_ns());
	uint64_t errors = 0;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->t[i].cp)
			errors += cpython_errors(ps->t[i].cp);
	record_meta_int(ctx->rec, "python_samples", (int64_t)ps->samples);
	record_meta_int(ctx->rec, "python_stacks_dropped", (int64_t)ps->stacks_dropped);
	record_meta_int(ctx->rec, "python_stacks_reread", (int64_t)ps->stacks_reread);
	record_meta_int(ctx->rec, "python_stacks_still", (int64_t)ps->stacks_still);
	record_meta_int(ctx->rec, "python_stacks_kept", (int64_t)ps->stacks_kept);
	record_meta_int(ctx->rec, "python_stacks_filled", (int64_t)ps->stacks_filled);
	record_meta_int(ctx->rec, "python_batches", (int64_t)ps->batches);
	record_meta_int(ctx->rec, "python_sampling_ns", ps->sampling_ns);
	record_meta_int(ctx->rec, "python_ticks_late", ps->ticks_late);
	record_meta_int(ctx->rec, "python_ticks_missed", ps->ticks_missed);
	log_info("%llu samples, %llu stacks dropped (torn reads: %llu), %.1f us of CPU per sample",
		 (unsigned long long)ps->samples, (unsigned long long)ps->stacks_dropped,
		 (unsigned long long)errors,
		 ps->samples ? (double)ps->sampling_ns / 1e3 / (double)ps->samples : 0.0);
}

static void py_free(struct probe *p)
{
	struct py_state *ps = p->state;
	if (!ps)
		return;
	thread_stop(ps);
	if (ps->ctx) { /* started: the lock and the eventfd were made */
		pthread_mutex_destroy(&ps->lock);
		if (ps->kick_fd >= 0)
			close(ps->kick_fd);
	}
	for (size_t i = 0; i < ps->n; i++)
		if (ps->t[i].state != PY_DONE)
			target_close(ps, NULL, &ps->t[i]); /* py_stop wrote them */
	free(ps->t);
	pywake_close(ps->wake);
	free(ps);
	p->state = NULL;
}

static const char *const python_writes[] = { "samples:python", NULL };

const struct probe_ops probe_python = {
	.name = "python",
	.writes = python_writes,
	.summary = "CPython 3.8-3.13 stacks of every thread, read from outside at --rate Hz",
	.enabled_by_default = 1,
	.available = py_available,
	.start = py_start,
	.process_added = py_process_added,
	.process_exiting = py_process_exiting,
	.stop = py_stop,
	.free = py_free,
};
