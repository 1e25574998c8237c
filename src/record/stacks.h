/* stacks: the shared way every stack-producing probe (cpu, offcpu, python,
 * alloc) stores stacks in the recording, so analyses and renderers read one
 * shape whatever the source.
 *
 * Tables (see docs/recording.md):
 *   frames(id, function, file, line, module, kind)    one row per distinct frame
 *   stack_nodes(id, parent, frame, depth)              a prefix tree: a stack is
 *       its leaf node; parent 0 is the root; depth 1 is the outermost frame
 *   samples(t_ns, pid, tid, node, source, weight, on_cpu, gil)
 *       source: "cpu", "offcpu", "python", "alloc", ...; weight: 1 per sample,
 *       or nanoseconds (offcpu) or bytes (alloc); on_cpu 1 running, 0 blocked,
 *       2 queued for a CPU (python); on_cpu/gil NULL when unknown
 *   threads(pid, tid, name)
 * Frames and nodes are interned in memory, so the same stack costs one hash
 * lookup per frame and is written once. */
#ifndef SONDE_STACKS_H
#define SONDE_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct recorder;

struct frame_info {
	const char *function; /* "main", "Class.method", or "module+0x1234" when unknown */
	const char *file;     /* NULL when unknown */
	int line;	      /* 0 when unknown */
	const char *module;   /* binary or shared object path, or Python module; may be NULL */
	const char *kind;     /* "native", "inlined", "kernel", "python", "native-in-python" */
};

struct stack_writer;

/* The run's one stack writer, created (with its tables) on first use and freed
 * by recorder_close(). NULL when the recording failed. Every probe shares it,
 * so frame and node ids are unique across sources. */
struct stack_writer *recorder_stacks(struct recorder *rec);

/* For the recorder itself. */
struct stack_writer *stack_writer_new(struct recorder *rec);
void stack_writer_free(struct stack_writer *sw);

/* Interns one frame; returns its id (> 0), or 0 on a recording error. */
int64_t stack_frame(struct stack_writer *sw, const struct frame_info *f);
/* Interns a stack given outermost frame first; returns its leaf node id (0 for
 * an empty stack or an error). */
int64_t stack_intern(struct stack_writer *sw, const int64_t *frame_ids, size_t n);

struct sample_info {
	int64_t t_ns;
	pid_t pid, tid;
	int64_t node;
	const char *source;
	int64_t weight;
	int on_cpu; /* 1 running, 0 not (blocked), 2 runnable but queued for a CPU; -1 unknown */
	int gil;    /* -1 unknown */
};
void stack_sample(struct stack_writer *sw, const struct sample_info *s);
/* The same for n samples at once (one lock, and a statement of several rows:
 * a busy sampler's rows cost less each). */
void stack_samples(struct stack_writer *sw, const struct sample_info *v, size_t n);
/* The kernel's name of a thread (comm); ignored for a thread the program
 * named itself (stack_thread_name_given). */
/* Counts a sample as taken, for the live view (recorder_live_read()), when
 * the probe takes it: one written later (a queue, symbols still to find)
 * counts then, not when stack_sample() writes it. */
void stack_sample_taken(struct stack_writer *sw);
void stack_thread_name(struct stack_writer *sw, pid_t pid, pid_t tid, const char *name);
/* A name the program gave the thread (Python's threading): it replaces the
 * kernel's, which no later stack_thread_name() puts back. */
void stack_thread_name_given(struct stack_writer *sw, pid_t pid, pid_t tid, const char *name);

#endif
