/* session: one profiling run from spawn to the last flush.
 *
 * session_run() starts the probes, spawns the command, then loops: signals
 * (forwarded to the target's process group), child exits (reaped with their
 * resource usage), the target's output (passed through and recorded), probe
 * polls and recording flushes, until the launched process has exited; then it
 * stops every probe and runs the derive passes (derive.h) over what they
 * wrote. It never exits the program; the caller renders the report and
 * chooses the exit code. */
#ifndef SONDE_SESSION_H
#define SONDE_SESSION_H

#include "../probes/probe.h"

#include <stdint.h>
#include <sys/types.h>

struct recorder;
struct strbuf;

/* What a caller may add to the loop, on the session's thread. */
struct session_hooks {
	void *arg;
	/* Each line of the command's output as it is stored (t_ns since the start). */
	void (*line)(void *arg, int64_t t_ns, int stream, const char *line, size_t len);
	/* Each turn of the loop in which the command's stdout and stderr, as passed
	 * through, stand at the start of a line, so whole lines written to stderr
	 * now are not mixed into one of the command's; last is 1 once more after
	 * the command's output ended. */
	void (*turn)(void *arg, int64_t t_ns, int last);
	/* Just before the command's output is passed through to sonde's stdout
	 * or stderr (NULL: not wanted). */
	void (*output)(void *arg);
};

struct session_options {
	char *const *argv;     /* the command, NULL-terminated; NULL when attaching */
	pid_t attach_pid;      /* > 0: follow this running process instead of spawning */
	int64_t duration_ns;   /* 0: until the command exits */
	int64_t grace_ns;      /* after SIGTERM, before SIGKILL */
	int capture_output;    /* 1: pipe stdout/stderr through sonde and record them */
	int hold_output;       /* with capture_output: record them, pass nothing through
				* (a live view holds the terminal) */
	const char *only_probes; /* NULL: defaults; else a comma list of probe names */
	const char *const *extra_env; /* NULL, or "NAME=value"s added to the command's
				       * environment (probes may add more, see probe_env_set) */
	int64_t max_output_bytes; /* what the output table (and so output.log) may hold:
				   * 0 the default, SESSION_OUTPUT_NONE to store none.
				   * Each line costs its bytes plus SESSION_LINE_COST_BYTES
				   * (its prefix in output.log); past the cap, output is
				   * still passed through, counted, and a note says so. */
	struct probe_config probe_cfg;
	const struct session_hooks *hooks; /* NULL: none */
};

#define SESSION_GRACE_NS_DEFAULT (3 * 1000000000LL)
#define SESSION_MAX_OUTPUT_DEFAULT (64LL << 20)
#define SESSION_OUTPUT_NONE (-1LL)
#define SESSION_LINE_COST_BYTES 20

struct session_result {
	int exit_code;	   /* the target's, shell style (128+N when killed by signal N);
			    * -1 when attached (sonde cannot learn a non-child's status) */
	int target_exited; /* attach: the process ended while followed */
	int interrupted;   /* sonde got SIGINT/SIGTERM/SIGHUP and forwarded it */
	int stopped_by_duration;
	int escalated;	   /* SIGKILL was needed */
	int64_t wall_ns;
};

/* Returns 0 when the command ran (whatever its exit status); or, when it could
 * not be started, 126/127 (exec failures) or -1, with a one-line message in err.
 * Attached (attach_pid > 0): the process is never signalled; Ctrl-C, SIGTERM or
 * -d end the session and leave it running; -1 with err when it cannot be
 * followed (no such process, no permission). */
int session_run(const struct session_options *opt, struct recorder *rec,
		struct session_result *res, struct strbuf *err);

#endif
