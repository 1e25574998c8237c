/* python_clock: each sampled thread's CPU clock (its schedstat), behind a
 * python sample's on_cpu: a credit of CPU time each on-CPU sample takes one
 * period from, so on-CPU samples count CPU time even when a runnable thread
 * waits for a CPU. The schedstat files of up to PY_MAX_OPEN_CLOCKS threads
 * stay open (one pread per sample), closed when their thread is gone or was
 * not sampled for PY_CLOCK_IDLE_POLLS polls. */
#include "python_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

void py_thread_clock_close(struct py_target *t, struct py_thread *th)
{
	if (th->clock_fd < 0)
		return;
	close(th->clock_fd);
	th->clock_fd = -1;
	if (t->open_clocks)
		(*t->open_clocks)--;
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
	if (th->clock_fd < 0 && ps->open_clocks < PY_MAX_OPEN_CLOCKS) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)t->pid, (int)tid);
		th->clock_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (th->clock_fd >= 0)
			ps->open_clocks++;
	}
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
int py_thread_clock_read(struct py_state *ps, struct py_target *t, struct py_thread *th,
			 pid_t tid, struct procfs_schedstat *out)
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

/* on_cpu of the sample read now: 1 when it stands for one sampling period of
 * the thread's CPU time, 0 when not, -1 unknown. The thread's CPU clock
 * (schedstat) feeds a credit; an on-CPU sample takes one period from it. So
 * on-CPU samples count CPU time even when the machine is busy and a runnable
 * thread waits for a CPU (where state 'R' would count waiting as running).
 * One read is one sample at most: CPU time beyond a few periods that no read
 * saw (sonde was late) is dropped, not charged to the stack read after it.
 * Without schedstat, and at the thread's first sight: the task state. */
int py_thread_on_cpu(struct py_state *ps, struct py_target *t, struct py_thread *th, pid_t tid,
		     int64_t mono_ns)
{
	struct procfs_schedstat ss;
	th->seen_poll = ps->polls;
	if (!py_thread_clock_read(ps, t, th, tid, &ss)) {
		int64_t now = (int64_t)ss.oncpu_ns;
		if (now != th->oncpu_ns)
			th->still_since_ns = mono_ns;
		if (th->oncpu_ns >= 0) {
			th->credit_ns += now - th->oncpu_ns;
			th->oncpu_ns = now;
			/* A few periods are carried over (the kernel's clock of a
			 * running thread moves in scheduler ticks), a stall is not. */
			int64_t cap = 4 * ps->period_ns > 50 * NS_PER_MS ? 4 * ps->period_ns
									: 50 * NS_PER_MS;
			if (th->credit_ns > cap)
				th->credit_ns = cap;
			int on = th->credit_ns >= ps->period_ns / 2;
			if (on)
				th->credit_ns -= ps->period_ns;
			return on;
		}
		th->oncpu_ns = now;
	}
	struct procfs_stat st;
	return procfs_read_stat(t->pid, tid, &st) ? -1 : st.state == 'R';
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
