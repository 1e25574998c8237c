/* gpu_host: what the host's threads were running while something happened
 * on the GPU side (a synchronisation, a copy's API call, the GPU idle), from
 * the Python stack samples (or the native on-CPU samples of a program that
 * has none).
 *
 * A span is one thread's time window on the run's clock. The answer is the
 * program's own frame (frames.h: frame_own_index; for a frame of an
 * installed package's Python code, torch's, the program's Python frame that
 * called it) with most samples of
 * those threads inside the spans, as a finding's location
 * ("train.py:train_step:41"). Spans too short for any sample to land in
 * (kernel launches of a few microseconds) are widened by slack_ns, once, when
 * none did. */
#ifndef SONDE_GPU_HOST_H
#define SONDE_GPU_HOST_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct strbuf;

struct gpu_span {
	int64_t tid;
	int64_t start_ns, end_ns; /* since the run's start */
};

struct gpu_host {
	int64_t samples;    /* inside the spans (widened or not) */
	int64_t at_samples; /* of them, charged to the location */
	int widened;	    /* 1 when slack_ns was needed */
};

/* Appends the location to loc ("file:function:line") and fills *h. 0, or
 * -1 when no sample fell in (or near) the spans: loc untouched. Sorts
 * spans. */
int gpu_host_where(sqlite3 *db, struct gpu_span *spans, size_t n, int64_t slack_ns,
		   struct strbuf *loc, struct gpu_host *h);

#endif
