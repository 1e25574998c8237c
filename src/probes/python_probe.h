/* python_probe: what the python probe's files share (python.c: the probe
 * and its sampling thread; python_clock.c: the threads' CPU clocks behind
 * on_cpu). Private: only python*.c include it. */
#ifndef SONDE_PYTHON_PROBE_H
#define SONDE_PYTHON_PROBE_H

#include "probe.h"
#include "../record/stacks.h"
#include "../target/procfs.h"
#include "../util/clock.h"
#include "../util/hashmap.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

struct cpython_proc;
struct pywake;

/* A process not yet Python is looked at this often, for this long after
 * each exec; after that it is taken for not Python until it execs again.
 * Right after an exec it is looked at more often: the loader maps libpython
 * within milliseconds, and the interpreter runs its first Python code soon
 * after; every sample before that is a sample lost. A slow look (a memory
 * scan) waits 10 times what it took, up to PY_RETRY_SLOW_NS. */
#define PY_RETRY_NS (20 * NS_PER_MS)
#define PY_RETRY_FAST_NS (2 * NS_PER_MS)
#define PY_FAST_FOR_NS (300 * NS_PER_MS)
#define PY_RETRY_SLOW_NS (100 * NS_PER_MS)
#define PY_GIVE_UP_NS (2 * NS_PER_S)
#define PY_MAX_TARGETS 256
#define PY_MAX_FRAMES 4096 /* = CPY_MAX_DEPTH: deeper stacks are dropped */
#define PY_MAX_THREADS 4096 /* per process; the table starts over beyond */
/* Threads whose schedstat file stays open (one pread per sample instead of
 * open, read, close), over all processes; others open it each time. */
#define PY_MAX_OPEN_CLOCKS 256
/* A thread not sampled for this many polls closes its schedstat file (it
 * has probably exited). */
#define PY_CLOCK_IDLE_POLLS 256
/* A thread whose CPU clock has not moved for this long is not running (a
 * running thread's clock moves at every scheduler tick, 1 to 10 ms): its
 * stack is the one read last. A process whose sampled threads are all so is
 * not read again, for up to PY_STILL_MAX_NS, but its last stacks recorded. */
#define PY_STILL_NS (25 * NS_PER_MS)
#define PY_STILL_MAX_NS NS_PER_S
/* When every sampled process has been still this long, sonde stops waking
 * at every tick: it wakes once per PY_BATCH_NS (or when a watched thread
 * runs, pywake.h) and stands for the ticks in between with the stacks it
 * has, when no thread ran meanwhile (each wake-up costs more than the
 * sample it takes: a 99 Hz timer alone is 0.7% of a core on a VM). */
#define PY_BATCH_AFTER_NS (500 * NS_PER_MS)
#define PY_BATCH_NS (250 * NS_PER_MS)
/* A thread's CPU clock is read at least once per this many of its samples,
 * and per PY_CLOCK_SPAN_NS of them (and whenever it takes or gives up the
 * GIL): the samples in between are queued, and their on_cpu decided by that
 * read (python_clock.c). At the default rate every sample reads it; at 1 kHz
 * one in 8 (a clock read was most of such a run's system calls). A thread
 * that exits leaves its queued samples' on_cpu unknown. */
#define PY_CLOCK_EVERY 8
#define PY_CLOCK_SPAN_NS (10 * NS_PER_MS)
/* sonde's nice value while it samples Python, when it may raise its
 * priority: reads on a busy machine then come on time (docs/python.md). */
#define PY_NICE (-10)

/* The window of a thread's samples without the GIL (py_thread.nogil_*), and
 * the share of them on the CPU, one in PY_NOGIL_RUNS_ONE_IN, from which its
 * runnable samples without the GIL count as queued for a CPU although
 * another thread holds the GIL: a GIL waiter runs microseconds per wake-up
 * (well under 1%), a thread computing in native code without the GIL gets
 * its share of a CPU (a tenth with two busy threads beside it on one core). */
#define PY_NOGIL_WINDOW 64
#define PY_NOGIL_RUNS_ONE_IN 32

/* Per thread: the CPU-time clock behind on_cpu (see sample_target). */
struct py_thread {
	int64_t oncpu_ns; /* schedstat at the previous sample */
	int64_t credit_ns; /* CPU time not yet stood for by an on-CPU sample */
	/* Its recent samples without the GIL, and those of them on the CPU
	 * (both halved once nogil_samples reaches PY_NOGIL_WINDOW): a thread
	 * that runs without it computes in native code, one that hardly ever
	 * does waits for it (py_thread_samples_write). */
	uint32_t nogil_samples, nogil_ran;
	uint64_t name_hash; /* of threading's name as last recorded; 0 none */
	int clock_fd;	    /* its schedstat file kept open, or -1 */
	int state_fd;	    /* its stat file (the task's state) kept open, or -1 */
	uint64_t seen_poll; /* py_state.polls when last sampled */
	int64_t still_since_ns; /* when its CPU clock last moved (CLOCK_MONOTONIC) */
	pid_t tid;
	int64_t node; /* its stack at its last sample */
	int gil;      /* and whether it held the GIL then */
	uint64_t clock_poll; /* the poll clock was read at (one read per poll) */
	struct procfs_schedstat clock;
	/* Samples taken since the clock's last read, written (their on_cpu
	 * decided) at its next: py_thread_sample. */
	struct sample_info pending[PY_CLOCK_EVERY - 1];
	uint8_t pending_held[PY_CLOCK_EVERY - 1]; /* py_target.gil_held at each */
	size_t npending;
};

enum py_target_state { PY_PENDING, PY_SAMPLING, PY_DONE };

struct py_target {
	pid_t pid;
	enum py_target_state state;
	struct cpython_proc *cp;
	char exe[512];	      /* /proc/PID/exe when last looked at */
	uint64_t exec_id;     /* procfs_read_exec_id then: an exec of the same exe changes it */
	int64_t exe_since_ns; /* when either last changed: the last exec seen */
	int64_t next_try_ns;
	struct hashmap tids; /* tid -> index in threads; its name is recorded */
	struct py_thread *threads;
	size_t nthreads;
	struct hashmap frame_ids; /* (code_id, line) -> frames.id, for one code generation */
	uint64_t code_gen;
	uint64_t samples;
	uint64_t rereads; /* cpython_rereads() when last looked */
	uint64_t kept;	  /* cpython_kept() when last looked */
	uint64_t sampled_poll; /* the poll of its last samples; its threads have that seen_poll */
	int64_t read_ns;       /* when its stacks were last read from its memory */
	int read_whole;	       /* every thread of that read was recorded (all have a clock) */
	int gil_held;	       /* a thread of it held the GIL at that read */
	int64_t still_from_ns; /* since when every poll found it still; 0: not still */
	int64_t unmoved_from_ns; /* it cannot be found still before (target_unmoved) */
	int *open_clocks;      /* py_state.open_clocks, which its threads' clock files count in */
};

struct py_state {
	struct py_target *t;
	size_t n;
	int64_t period_ns;
	size_t clock_every; /* samples per clock read, 1 to PY_CLOCK_EVERY */
	uint64_t rng;
	char self_exe[512];
	uint64_t samples, stacks_dropped, stacks_reread;
	uint64_t stacks_kept; /* samples of a thread that did not run Python since: not walked */
	uint64_t stacks_still; /* samples of a process not read again: no thread ran */
	uint64_t stacks_filled; /* samples of ticks a batch slept through (PY_BATCH_NS) */
	struct pywake *wake;	/* watches on the threads of batched processes; NULL: no batches */
	int64_t batch_first_ns; /* the first tick the current batch leaves unread; 0: none */
	uint64_t batches;	/* batches begun */
	int64_t sampling_ns; /* the sampling thread's CPU time, less attach_ns (at its end) */
	int64_t attach_ns;   /* its CPU time spent looking for interpreters (try_attach) */
	int64_t tick_due_ns; /* when the next sampling tick is due; 0: none scheduled */
	int64_t ticks_late;  /* polls that came a period or more after their tick */
	int64_t ticks_missed; /* ticks no read stood for: the periods a late poll slept through */
	uint64_t polls;
	int open_clocks; /* py_thread.clock_fd open, over all targets */
	int nice_raised; /* the sampling thread's nice was looked at (1: raised) */
	/* The sampling thread: it polls at next_poll_ns, or at once when kicked
	 * (kick_fd, an eventfd: a process added) or when a watch fires (wake).
	 * lock guards everything above against the session loop's calls (a
	 * process added or exiting), and is dropped only while the thread waits. */
	struct probe_ctx *ctx;
	pthread_t thread;
	pthread_mutex_t lock;
	int kick_fd;
	int64_t next_poll_ns;
	int thread_running, thread_stop;
};

/* python_clock.c */
void py_thread_clock_close(struct py_target *t, struct py_thread *th);
void py_threads_clocks_close(struct py_target *t);
int py_thread_clock_read(struct py_state *ps, struct py_target *t, struct py_thread *th,
			 pid_t tid, struct procfs_schedstat *out);
/* Records si, a sample of th (its on_cpu decided here), now or, queued, at
 * the thread's next clock read; marks th seen in this poll. */
void py_thread_sample(struct py_state *ps, struct stack_writer *sw, struct py_target *t,
		      struct py_thread *th, const struct sample_info *si, int64_t mono_ns);
/* Writes the samples queued for th, or for every thread of t, reading the
 * clocks they need; before anything closes them, and at the end. A NULL sw
 * (no recording) drops them. */
void py_thread_samples_flush(struct py_state *ps, struct stack_writer *sw, struct py_target *t,
			     struct py_thread *th, int64_t mono_ns);
void py_target_samples_flush(struct py_state *ps, struct stack_writer *sw, struct py_target *t,
			     int64_t mono_ns);
void py_clocks_sweep(struct py_state *ps);

#endif
