/* trace_events: the run as a stream of timeline events, the one source of
 * the timeline exports (trace.json in the Chrome trace event format,
 * trace.perfetto-trace in Perfetto's protobuf), so the two never disagree.
 *
 * trace_events_each() walks the recording (through ctx->db, a slice for a
 * filtered export) and hands each event to a sink, in this order:
 * - the names of processes and threads (the recording's processes and
 *   threads);
 * - the phases (report.phases) as slices on a "phases" track (tid 0) of the
 *   leader process;
 * - the program's NVTX ranges and marks as slices on the thread that opened
 *   them (a mark lasts 0);
 * - the GPU: one process per device (TRACE_GPU_PID + device), one thread per
 *   stream, kernels (demangled), copies and memsets as slices;
 * - counters: each process's RSS, each GPU's utilisation and memory;
 * - what each thread ran: its stack samples (the ones the flame graph
 *   counts, `--mode`) as a flame chart, one slice per frame for as long as
 *   consecutive samples keep it on the stack; samples further apart than
 *   TRACE_GAP_NS end every slice of that thread (the thread was not seen);
 * - the host's CUDA calls as slices on the calling thread, and a flow from
 *   each launch to the GPU work it started (CUPTI's correlation id);
 * - each process's CPU use (cores) and I/O (MB/s, calls per second), and the
 *   machine's (TRACE_MACHINE_PID, the system probe's readings): its CPUs'
 *   busy, iowait and steal shares, runnable and blocked tasks, pressure
 *   stalls and each disk's busy share and throughput.
 *
 * Times are nanoseconds since the run's start. At most TRACE_EVENTS_MAX
 * events are handed on, in the order above (so the stack slices and CUDA
 * calls of a long run are what is cut); the rest are counted as dropped.
 * Names are valid UTF-8 (a damaged one is repaired), never NULL. */
#ifndef SONDE_TRACE_EVENTS_H
#define SONDE_TRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

struct render_ctx;
struct strbuf;

#define TRACE_EVENTS_MAX 400000
#define TRACE_GPU_PID 1000000000LL    /* + device: the GPU "processes" */
#define TRACE_MACHINE_PID 999999999LL /* the machine's counters */

/* One value of a counter event, already rounded to `decimals` places (the
 * precision trace.json prints it with). */
struct trace_arg {
	const char *key;
	double value;
	int decimals;
};

struct trace_sink {
	void *arg;
	/* A name: of process pid (thread 0) or of thread tid of pid (thread
	 * 1; tid 0 is a track of the process, the phases'). */
	void (*name)(void *arg, int thread, int64_t pid, int64_t tid, const char *name);
	/* A slice from start_ns to end_ns (end_ns >= start_ns); args_json (may
	 * be NULL) is a JSON object's members, for the formats that keep them. */
	void (*slice)(void *arg, const char *cat, const char *name, int64_t pid, int64_t tid,
		      int64_t start_ns, int64_t end_ns, const char *args_json);
	/* Counter `name` of process pid at ts_ns: nargs values. */
	void (*counter)(void *arg, const char *name, int64_t pid, int64_t ts_ns,
			const struct trace_arg *args, size_t nargs);
	/* One end of arrow id: its start (end 0) or its end (end 1), on thread
	 * tid of pid at ts_ns. */
	void (*flow)(void *arg, uint64_t id, int end, int64_t pid, int64_t tid, int64_t ts_ns);
};

struct trace_counts {
	int64_t events, dropped;
};

/* Hands the run's events to sink; counts them in *n. 0, or -1 with err
 * filled when the stacks could not be read (the events before them were
 * handed on). */
int trace_events_each(const struct render_ctx *ctx, const struct trace_sink *sink,
		      struct trace_counts *n, struct strbuf *err);

#endif
