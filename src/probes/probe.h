/* probe: one source of measurements, behind one small interface.
 *
 * Lifecycle, driven by the session: available() -> start() (before the
 * command is spawned) -> (process_added,
 * process_exiting, poll)* -> stop() -> free(). A probe writes only to the
 * recording; it never decides what is a problem. available() and start() fill
 * `why` with one line a user can act on when they fail (which setting, what to
 * run); the run goes on without that probe.
 *
 * A new probe is a new file with a `const struct probe_ops` and one line in
 * probe_table (probes.c). The probes start in the order of what they need and
 * provide (probe_order), not of the table. */
#ifndef SONDE_PROBE_H
#define SONDE_PROBE_H

#include <stdint.h>
#include <sys/types.h>

struct recorder;
struct strbuf;
struct proctree;
struct perf_layer;
struct probe_option;

/* How native stacks are unwound (cpu probe, --call-graph). */
enum probe_call_graph {
	PROBE_CALL_GRAPH_AUTO, /* dwarf when the program has no frame pointers, else fp */
	PROBE_CALL_GRAPH_FP,
	PROBE_CALL_GRAPH_DWARF,
};

#define PROBE_FUNCTIONS_MAX 32 /* --function SPECs a run takes */
#define PROBE_GIVEN_MAX 64     /* probe options a command line may give */

/* What a probe may be told about the run: the knobs that concern probes only. */
struct probe_config {
	int64_t interval_ns; /* period of /proc style pollers */
	int rate_hz;	     /* sampling rate of stack samplers */
	int no_subprocesses; /* follow the launched (or attached) process only */
	int call_graph;	      /* enum probe_call_graph (cpu probe) */
	int stack_dump_bytes; /* user stack copied per sample with dwarf unwinding; 0: default */
	const char *event;    /* --event: the cpu probe samples on it; NULL: cycles, else cpu-clock */
	char *const *argv;    /* the command being run, for call_graph auto (NULL when attaching) */
	pid_t attach_pid;     /* > 0: the process attached to (call_graph auto reads its exe) */
	int memory_mode;     /* allocation tracking: PROBE_MEMORY_OFF, _SAMPLED or _FULL */
	int64_t memory_interval_bytes; /* sampled mode: mean bytes between two samples */
	const char *log_path; /* --log: a file the target writes, followed (logfile probe) */
	int no_agent;	      /* --no-agent: no in-process agent (asyncio, cuda) */
	int rate_set;	     /* -r was given: --focus cpu raises the rate only when not */
	const char *functions[PROBE_FUNCTIONS_MAX + 1]; /* --function SPECs, NULL-terminated */
	size_t nfunctions;
	int whole_machine; /* run -a: every process of the machine (attached to init) */
	int syscalls;	   /* --focus io: the syscalls probe, off by default, is wanted */
	/* Every probe option of the command line, in its order: the option and
	 * its argument (NULL: none); probe_option_value() reads them. */
	struct probe_given {
		const struct probe_option *opt;
		const char *arg;
	} given[PROBE_GIVEN_MAX];
	size_t ngiven;
};

enum { PROBE_ARG_NONE, PROBE_ARG_REQUIRED, PROBE_ARG_OPTIONAL }; /* getopt.h's values */

/* One command-line option of `sonde run` and `sonde attach` that a probe
 * owns. Their parser and their --help are built from the probes' lists
 * (cli/profile.c): an option is declared here, in its probe's file, only. */
struct probe_option {
	const char *name;     /* the long name, without "--" */
	char short_name;      /* -X as well; 0: none */
	int arg;	      /* PROBE_ARG_NONE, _REQUIRED or _OPTIONAL (--name[=ARG]) */
	const char *arg_name; /* --help's name of the argument: "HZ", "MODE" */
	const char *help;     /* --help's text, '\n' between its lines (about 50 columns) */
	/* Non-NULL: `sonde run` only; attach refuses it with this line and
	 * leaves it out of its --help. */
	const char *run_only;
	/* Checks arg (NULL when none was given) and sets cfg from it: 0, or -1
	 * with one line in err (the whole message, naming the option). NULL:
	 * any argument is taken, and the probe reads it (probe_option_value). */
	int (*parse)(const char *arg, struct probe_config *cfg, struct strbuf *err);
};

/* The argument of the last --NAME of the command line, "" for one without;
 * NULL when it was not given. */
const char *probe_option_value(const struct probe_config *cfg, const char *name);

enum { PROBE_MEMORY_OFF, PROBE_MEMORY_SAMPLED, PROBE_MEMORY_FULL };
#define PROBE_MEMORY_INTERVAL_DEFAULT (512 * 1024)

/* Environment variables ("NAME=value") that probes want the launched command
 * to start with: agents are loaded this way (LD_PRELOAD). Probes start before
 * the command is spawned, so start() may add to it. Strings are owned. */
struct probe_env {
	char **v; /* NULL-terminated once anything was set */
	size_t n, alloc;
};
#define PROBE_ENV_INIT { NULL, 0, 0 }

struct probe_ctx {
	struct recorder *rec;
	const struct probe_config *cfg;
	struct proctree *tree; /* the processes of the target, live and gone */
	int64_t start_ns;      /* CLOCK_MONOTONIC at the run's start; recorded t = now - start */
	struct probe_env *env; /* NULL when the target is not launched by sonde */
	/* The run's perf_event layer (perf_layer.h), shared by the probes that
	 * sample with perf events; NULL where none was made (unit tests). */
	struct perf_layer *perf;
	/* A probe that stores lines of the target's own (the logfile probe) hands
	 * each to this too (NULL: nobody asked), on the session's thread. */
	void (*line_seen)(void *arg, int64_t t_ns, int stream, const char *line, size_t len);
	void *line_arg;
};

/* Sets NAME=value for the command (replacing an earlier setting of NAME).
 * Returns 0, or -1 when the target's environment cannot be set (attach). */
int probe_env_set(struct probe_ctx *ctx, const char *name, const char *value);
/* The value NAME will have for the command: set by a probe, else sonde's own;
 * NULL when unset. Valid until the next probe_env_set(). */
const char *probe_env_get(const struct probe_ctx *ctx, const char *name);
void probe_env_release(struct probe_env *env);

struct probe;

struct probe_ops {
	const char *name;
	const char *summary; /* one line for --help and the report */
	/* What it needs started before it (NULL-terminated names; NULL: none),
	 * and what it provides to those that need it: e.g. "perf.samples", the
	 * run's sampling set and its stacks (perf_layer.h), which the cpu probe
	 * provides. A need no probe of the table provides orders nothing. */
	const char *const *needs, *const *provides;
	/* The tables of the recording it writes: "table", or "samples:SOURCE"
	 * for its rows of the shared samples table (NULL-terminated). The
	 * recorder's own tables (meta, processes, notes, frames, stack_nodes,
	 * threads, ...) are everybody's. docs/recording.md describes them. */
	const char *const *writes;
	/* Its command-line options, ending with one whose name is NULL; NULL: none. */
	const struct probe_option *options;
	int enabled_by_default;
	/* 1: when unavailable, say so in the report and summary only, not as a
	 * warning on every run (what the machine lacks, like hardware counters in a
	 * VM, is no news); 0: warn, the user can usually fix it (permissions). */
	int quiet_when_unavailable;
	/* Optional: 1 when the configuration asks for this probe although it is
	 * not on by default (alloc with --memory). */
	int (*wanted)(const struct probe_config *cfg);
	/* 0 when the probe can run here; else -1 and one line in why. */
	int (*available)(const struct probe_ctx *ctx, struct strbuf *why);
	/* Allocates p->state. 0, or -1 with one line in why. */
	int (*start)(struct probe *p, struct probe_ctx *ctx, struct strbuf *why);
	/* A process joined the tree (may be NULL). */
	void (*process_added)(struct probe *p, struct probe_ctx *ctx, pid_t pid);
	/* A child of sonde exited and is not reaped yet: /proc still holds its totals. */
	void (*process_exiting)(struct probe *p, struct probe_ctx *ctx, pid_t pid);
	/* Called once now >= p->next_poll_ns; the probe sets the next deadline.
	 * NULL for a probe that samples on a thread of its own (started in
	 * start(), joined in stop(); it writes through the recorder, whose calls
	 * take its lock, and holds a lock of its own against the calls above). */
	void (*poll)(struct probe *p, struct probe_ctx *ctx, int64_t now_ns);
	/* Last reading and flush; state stays until free. */
	void (*stop)(struct probe *p, struct probe_ctx *ctx);
	void (*free)(struct probe *p);
};

struct probe {
	const struct probe_ops *ops;
	void *state;
	int64_t next_poll_ns; /* INT64_MAX: never polled */
	int running;
};

/* NULL-terminated; their start order is probe_order()'s. */
extern const struct probe_ops *const probe_table[];
const struct probe_ops *probe_find(const char *name);
#define PROBES_MAX 32
/* Puts table's probes (NULL-terminated, at most PROBES_MAX) into out in
 * start order: each after the probes that provide what it needs. Returns
 * their count, or -1 with one line in why (probes that wait on each other). */
int probe_order(const struct probe_ops *const *table, const struct probe_ops **out,
		struct strbuf *why);
/* Puts dir first in the command's path-like variable name (PYTHONPATH),
 * once: a second probe with the same directory leaves it as it is. */
void probe_env_path_prepend(struct probe_ctx *ctx, const char *name, const char *dir);

#endif
