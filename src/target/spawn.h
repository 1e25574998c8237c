/* spawn: start the target command in its own process group, held at a gate.
 *
 * target_spawn() forks a child that puts itself in a new process group, wires
 * its stdout/stderr to pipes sonde reads, and waits at the gate; probes can
 * attach to its pid before it runs a single instruction of the command.
 * target_release() opens the gate: the child execs, and the call reports
 * whether the exec worked (127 for not found, 126 for not executable).
 */
#ifndef SONDE_SPAWN_H
#define SONDE_SPAWN_H

#include <sys/types.h>

struct strbuf;

struct spawn {
	pid_t pid;	   /* the leader; its pid is also its process-group id */
	int stdout_fd;	   /* read ends of the target's stdout and stderr, or -1 */
	int stderr_fd;
	int gate_fd;	   /* write end of the gate pipe until released */
	int exec_err_fd;   /* read end of the exec-error pipe until released */
	int tty_fd;	   /* terminal handed to the target's group, or -1 */
	pid_t tty_pgrp;	   /* sonde's own group, to take the terminal back */
};

#define SPAWN_INIT { 0, -1, -1, -1, -1, -1, 0 }
#define SPAWN_HOLD_TERMINAL 2

/* Resolves argv[0] on PATH as execvp would. Returns 0, or 127/126 with a
 * one-line message in err (nothing is spawned). */
int spawn_check_command(const char *cmd, struct strbuf *err);

/* capture_output: 1 to pipe stdout/stderr through sonde, 0 to leave them;
 * SPAWN_HOLD_TERMINAL to pipe them and keep the terminal from the command
 * (it is not made the terminal's foreground group, and its stdin is
 * /dev/null): sonde draws on the terminal and reads its keys.
 * extra_env: NULL, or a NULL-terminated list of "NAME=value" that the command
 * gets on top of sonde's environment (replacing a variable of the same name);
 * the strings are copied before the call returns.
 * Returns 0 or -errno with a message in err. */
int spawn_start(struct spawn *sp, char *const argv[], const char *const *extra_env,
		int capture_output, struct strbuf *err);

/* Returns 0 once the command runs; or the exit code sonde should use (126/127)
 * with a message in err when exec failed (the child has then exited). */
int spawn_release(struct spawn *sp, struct strbuf *err);

/* Sends sig to the target's whole process group. */
void spawn_signal(const struct spawn *sp, int sig);

/* Takes the terminal back (if it was handed over) and closes what is left. */
void spawn_finish(struct spawn *sp);

/* Converts a wait status to a shell-style exit code (128+N for signal N). */
int spawn_exit_code(int wait_status);

#endif
