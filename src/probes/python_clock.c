/* python_clock: each sampled thread's CPU clock (its schedstat), behind a
 * python sample's on_cpu: a credit of CPU time each on-CPU sample takes one
 * period from, so on-CPU samples count CPU time even when a runnable thread
 * waits for a CPU. A thread's samples wait in a short queue until its clock
 * is read, for all of them at once (PY_CLOCK_EVERY): one read per sample
 * was most of a busy run's system calls. The schedstat files (and the stat
 * files, for a thread's state) of up to PY_MAX_OPEN_CLOCKS threads stay open
 * (one pread per read), closed when their thread is gone or was not sampled
 * for PY_CLOCK_IDLE_POLLS polls. */
#include "python_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void kept_close(struct py_target *t, int *fd)
{
	if (*fd < 0)
		return;
	close(*fd);
	*fd = -1;
	if (t->open_clocks)
		(*t->open_clocks)--;
}

void py_thread_clock_close(struct py_target *t, struct py_thread *th)
{
	kept_close(t, &th->clock_fd);
	kept_close(t, &th->state_fd);
}

/* Opens the thread's /proc file name into *fd when there is room for one
 * more kept open (a pread then costs one system call; opening the path
 * three, and a lookup of the path). */
static void kept_open(struct py_state *ps, struct py_target *t, pid_t tid, const char *name,
		      int *fd)
{
	if (*fd >= 0 || ps->open_clocks >= PY_MAX_OPEN_CLOCKS)
		return;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)t->pid, (int)tid, name);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd >= 0)
		ps->open_clocks++;
}

/* The thread's state letter ('R' running or runnable, 'S', 'D', ...) from
 * its stat file; -1 when it cannot be read (the thread is gone). */
static int thread_state_read(struct py_state *ps, struct py_target *t, struct py_thread *th)
{
	kept_open(ps, t, th->tid, "stat", &th->state_fd);
	if (th->state_fd < 0) {
		struct procfs_stat st;
		return procfs_read_stat(t->pid, th->tid, &st) ? -1 : st.state;
	}
	char buf[1024];
	ssize_t n = pread(th->state_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		kept_close(t, &th->state_fd); /* the thread is gone */
		return -1;
	}
	buf[n] = '\0';
	/* "tid (comm) S ...": the name may hold ')' and spaces; the last ')' ends it. */
	const char *end = strrchr(buf, ')');
	return end && end[1] == ' ' && end[2] ? (unsigned char)end[2] : -1;
}

void py_threads_clocks_close(struct py_target *t)
{
	for (size_t i = 0; t->threads && i < t->nthreads; i++)
		py_thread_clock_close(t, &t->threads[i]);
}

/* The thread's schedstat, through its file kept open when there is room
 * for one more (a pread costs one system call; opening the path three). */
static int thread_clock_read_now(struct py_state *ps, struct py_target *t, struct py_thread *th,
				 pid_t tid, struct procfs_schedstat *out)
{
	kept_open(ps, t, tid, "schedstat", &th->clock_fd);
	if (th->clock_fd < 0)
		return procfs_read_schedstat(t->pid, tid, out);
	char buf[128];
	ssize_t n = pread(th->clock_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		py_thread_clock_close(t, th); /* the thread is gone */
		return n < 0 ? -errno : -ESRCH;
	}
	buf[n] = '\0';
	return procfs_parse_schedstat(buf, out);
}

/* The same, read once per poll: a second look in the same poll (the still
 * check, then the sample) costs nothing. */
int py_thread_clock_read(struct py_state *ps, struct py_target *t, struct py_thread *th, pid_t tid,
			 struct procfs_schedstat *out)
{
	if (th->clock_poll == ps->polls) { /* read already in this poll */
		*out = th->clock;
		return 0;
	}
	int r = thread_clock_read_now(ps, t, th, tid, out);
	if (!r) {
		th->clock = *out;
		th->clock_poll = ps->polls;
	}
	return r;
}

/* Counts the samples without the GIL of a batch whose on-CPU ones are
 * decided; 1 when the thread's recent ones ran often enough to say it
 * computes without the GIL (PY_NOGIL_RUNS_ONE_IN). */
static int nogil_count(struct py_thread *th, const struct sample_info *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i].gil == 1)
			continue;
		th->nogil_samples++;
		th->nogil_ran += s[i].on_cpu == 1;
		if (th->nogil_samples >= PY_NOGIL_WINDOW) {
			th->nogil_samples /= 2;
			th->nogil_ran /= 2;
		}
	}
	return th->nogil_ran && th->nogil_ran * PY_NOGIL_RUNS_ONE_IN >= th->nogil_samples;
}

/* on_cpu of samples, from the thread's CPU clock (schedstat): a credit of
 * CPU time that each on-CPU sample (1) takes one period from, so on-CPU
 * samples count CPU time even when the machine is busy and a runnable thread
 * waits for a CPU (where state 'R' would count waiting as running). The clock
 * is read once for the samples queued since its last read and the one taken
 * now (n in all, oldest first): the CPU time it moved by is theirs, and those
 * that held the GIL take it first (a thread holding it runs, one waiting for
 * it does not). CPU time beyond a few periods more than the samples stand for
 * (sonde was late) is dropped, not charged to them. The rest are blocked (0),
 * except when the thread is runnable now: queued for a CPU (2). For a GIL
 * holder that is sure (Python code blocks only after letting the GIL go, so
 * a holder that did not run waited for a CPU: on a busy machine a computing
 * line is not a wait); a thread without the GIL may be in native code that
 * computes without it (zlib, hashlib, numpy) and then waits for a CPU just
 * the same, or one that blocked earlier in the batch and woke since (at most
 * clock_every samples of a batch; a thread that blocks is rarely found
 * runnable, one that computes often), but only when no thread held the GIL
 * at that sample (held[i] 0), or when the thread's recent samples without
 * the GIL ran (nogil_count: it computes without it, beside a GIL holder): a
 * thread waiting for the GIL wakes at each of its waits' timeouts and is
 * then runnable, yet waits for the GIL (counted blocked, as GIL contention
 * wants), and hardly ever runs. The kernel's run-queue wait would not
 * do: it moves when the wait ends, after the samples of the wait were
 * written. Without schedstat, and at the thread's first sight: the task
 * state. */
static void samples_on_cpu(struct py_state *ps, struct py_target *t, struct py_thread *th,
			   struct sample_info *s, const uint8_t *held, size_t n, int64_t mono_ns)
{
	struct procfs_schedstat ss;
	if (!py_thread_clock_read(ps, t, th, th->tid, &ss)) {
		int64_t now = (int64_t)ss.oncpu_ns;
		if (now != th->oncpu_ns)
			th->still_since_ns = mono_ns;
		if (th->oncpu_ns >= 0) {
			th->credit_ns += now - th->oncpu_ns;
			th->oncpu_ns = now;
			/* A few periods are carried over (the kernel's clock of a
			 * running thread moves in scheduler ticks), a stall is not. */
			int64_t cap = (int64_t)(n + 3) * ps->period_ns;
			if (cap < 50 * NS_PER_MS)
				cap = 50 * NS_PER_MS;
			if (th->credit_ns > cap)
				th->credit_ns = cap;
			for (int gil = 1; gil >= 0; gil--)
				for (size_t i = 0; i < n; i++) {
					if ((s[i].gil == 1) != gil)
						continue;
					s[i].on_cpu = th->credit_ns >= ps->period_ns / 2;
					if (s[i].on_cpu)
						th->credit_ns -= ps->period_ns;
				}
			int computes = nogil_count(th, s, n);
			int queued = -1; /* read once, when a sample did not run */
			for (size_t i = 0; i < n; i++) {
				/* Without the GIL while another thread held it:
				 * waiting for it (its waits time out and wake it,
				 * runnable, often), not for a CPU; unless the
				 * thread runs without the GIL (computes). */
				if (s[i].on_cpu || (s[i].gil != 1 && held[i] && !computes))
					continue;
				if (queued < 0)
					queued = thread_state_read(ps, t, th) == 'R';
				if (queued)
					s[i].on_cpu = 2;
			}
			return;
		}
		th->oncpu_ns = now;
	}
	int state = thread_state_read(ps, t, th);
	int on = state < 0 ? -1 : state == 'R';
	for (size_t i = 0; i < n; i++)
		s[i].on_cpu = on;
}

/* Writes the thread's queued samples (and si, when not NULL, after them)
 * with their on_cpu, reading its clock. */
static void thread_samples_write(struct py_state *ps, struct stack_writer *sw, struct py_target *t,
				 struct py_thread *th, const struct sample_info *si,
				 int64_t mono_ns)
{
	struct sample_info s[PY_CLOCK_EVERY];
	uint8_t held[PY_CLOCK_EVERY];
	size_t n = th->npending;
	memcpy(s, th->pending, n * sizeof(*s));
	memcpy(held, th->pending_held, n);
	if (si) {
		held[n] = (uint8_t)t->gil_held;
		s[n++] = *si;
	}
	th->npending = 0;
	if (!n)
		return;
	samples_on_cpu(ps, t, th, s, held, n, mono_ns);
	stack_samples(sw, s, n);
}

void py_thread_sample(struct py_state *ps, struct stack_writer *sw, struct py_target *t,
		      struct py_thread *th, const struct sample_info *si, int64_t mono_ns)
{
	th->seen_poll = ps->polls;
	if (sw)
		stack_sample_taken(sw);
	/* Read now: at first sight, when read already in this poll (free), when
	 * the queue is full, when the thread took or gave up the GIL (what it
	 * did since changed), or at its turn (tid staggers the threads' turns,
	 * so a tick reads a few clocks, not all of them every clock_every). */
	int now = th->oncpu_ns < 0 || th->clock_poll == ps->polls ||
		  th->npending + 1 >= ps->clock_every || si->gil != th->gil ||
		  (ps->polls + (uint64_t)th->tid) % ps->clock_every == 0;
	if (!now) {
		th->pending_held[th->npending] = (uint8_t)t->gil_held;
		th->pending[th->npending++] = *si;
		return;
	}
	thread_samples_write(ps, sw, t, th, si, mono_ns);
}

void py_thread_samples_flush(struct py_state *ps, struct stack_writer *sw, struct py_target *t,
			     struct py_thread *th, int64_t mono_ns)
{
	if (th->npending && sw)
		thread_samples_write(ps, sw, t, th, NULL, mono_ns);
	th->npending = 0;
}

void py_target_samples_flush(struct py_state *ps, struct stack_writer *sw, struct py_target *t,
			     int64_t mono_ns)
{
	for (size_t k = 0; t->threads && k < t->nthreads; k++)
		py_thread_samples_flush(ps, sw, t, &t->threads[k], mono_ns);
}

/* Closes the schedstat files of threads not sampled for a while. */
void py_clocks_sweep(struct py_state *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct py_target *t = &ps->t[i];
		for (size_t k = 0; t->threads && k < t->nthreads; k++)
			if (t->threads[k].seen_poll + PY_CLOCK_IDLE_POLLS < ps->polls)
				py_thread_clock_close(t, &t->threads[k]);
	}
}
