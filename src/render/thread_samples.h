/* thread_samples: the samples the flame graph counts (the run's `--mode`:
 * on-CPU "mixed", else "cpu", else on-CPU "python"; or the wall / GIL
 * "python" samples), one by one in time order, grouped by thread, for the
 * exporters that keep threads and time apart (pprof, speedscope).
 *
 * Contract:
 * - thread_samples_load() reads the recording (or a slice of it) once; every
 *   sample of the stack set lands in exactly one thread, so the threads'
 *   counts sum to set.total_samples.
 * - Threads are ordered by pid, then tid; each one's samples by time.
 * - Everything is owned by ts; thread_samples_release() frees it. */
#ifndef SONDE_THREAD_SAMPLES_H
#define SONDE_THREAD_SAMPLES_H

#include "../record/stackread.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct strbuf;

struct thread_sample {
	int64_t t_ns;	/* since the run's (or the slice's) start */
	size_t node;	/* index into set.nodes */
	int64_t weight; /* 1 per sample for every source read here */
};

struct sampled_thread {
	int64_t pid, tid;
	char *name; /* the threads table's name; NULL when it has none */
	struct thread_sample *v;
	size_t n, alloc;
};

struct thread_samples {
	struct stack_set set;
	const char *source;    /* "mixed", "cpu" or "python" (static) */
	enum stack_mode mode;  /* the recording's `--mode` */
	int64_t period_ns;     /* one sample's share of time (1e9 / rate); 0 unknown */
	int64_t start_unix_ns; /* wall-clock time of t_ns 0; 0 unknown */
	int64_t wall_ns;       /* the run's (slice's) length; 0 unknown */
	struct sampled_thread *threads;
	size_t nthreads;
};

#define THREAD_SAMPLES_INIT                                                                        \
	{                                                                                          \
		STACK_SET_INIT, NULL, STACK_MODE_CPU, 0, 0, 0, NULL, 0                             \
	}

/* 0 and *ts filled (no threads when nothing was sampled), or -1 with a
 * message in err (ts is then left empty, to release or not). */
int thread_samples_load(sqlite3 *db, struct thread_samples *ts, struct strbuf *err);
void thread_samples_release(struct thread_samples *ts);

#endif
