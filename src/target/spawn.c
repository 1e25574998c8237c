/* spawn: fork, gate, exec, and the terminal hand-over. */
#define LOG_DOMAIN "target"
#include "spawn.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static int is_executable_file(const char *path, int *is_dir)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	*is_dir = S_ISDIR(st.st_mode);
	if (*is_dir)
		return -EISDIR;
	return access(path, X_OK) < 0 ? -errno : 0;
}

int spawn_check_command(const char *cmd, struct strbuf *err)
{
	int is_dir = 0, rc;
	if (strchr(cmd, '/')) {
		rc = is_executable_file(cmd, &is_dir);
		if (rc == -ENOENT) {
			strbuf_addf(err, "%s: no such file", cmd);
			return 127;
		}
		if (rc) {
			strbuf_addf(err, "%s: cannot execute: %s", cmd,
				    is_dir ? "is a directory" : strerror(-rc));
			return 126;
		}
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int found_unexec = 0;
	struct strbuf cand = STRBUF_INIT;
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		strbuf_reset(&cand);
		if (n)
			strbuf_add(&cand, p, n);
		else
			strbuf_addch(&cand, '.');
		strbuf_addf(&cand, "/%s", cmd);
		rc = is_executable_file(cand.buf, &is_dir);
		if (!rc) {
			strbuf_release(&cand);
			return 0;
		}
		if (rc != -ENOENT && rc != -ENOTDIR && !is_dir)
			found_unexec = 1;
		if (!colon)
			break;
		p = colon + 1;
	}
	strbuf_release(&cand);
	if (found_unexec) {
		strbuf_addf(err, "%s: found on PATH but not executable", cmd);
		return 126;
	}
	strbuf_addf(err, "%s: command not found", cmd);
	return 127;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

extern char **environ;

/* sonde's environment with extra_env laid over it, built before the fork so the
 * child does not allocate. The array is malloc'd; its strings are borrowed. */
static char **build_env(const char *const *extra_env)
{
	size_t n = 0, k = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	for (const char *const *x = extra_env; x && *x; x++)
		k++;
	char **env = xcalloc(n + k + 1, sizeof(*env));
	size_t m = 0;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
		int replaced = 0;
		for (const char *const *x = extra_env; x && *x && !replaced; x++)
			replaced = !strncmp(*x, *e, len) && (*x)[len] == '=';
		if (!replaced)
			env[m++] = *e;
	}
	for (const char *const *x = extra_env; x && *x; x++)
		env[m++] = (char *)*x;
	env[m] = NULL;
	return env;
}

/* In the child: everything here must be async-signal-safe. */
static void child_run(char *const argv[], char *const envp[], const int parent_ends[4],
		      int gate_rd, int err_wr, int out_wr, int errs_wr, int give_tty, int hold_tty)
{
	/* The parent's ends must go, or the gate never sees end-of-file. */
	for (int i = 0; i < 4; i++)
		if (parent_ends[i] >= 0)
			close(parent_ends[i]);
	setpgid(0, 0);
	if (give_tty) {
		signal(SIGTTOU, SIG_IGN);
		tcsetpgrp(STDIN_FILENO, getpid());
	}
	/* Signals sonde blocked or ignored must not leak into the command. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (hold_tty) {
		int null = open("/dev/null", O_RDONLY);
		if (null > STDIN_FILENO) {
			dup2(null, STDIN_FILENO);
			close(null);
		}
	}
	if (out_wr >= 0) {
		dup2(out_wr, STDOUT_FILENO);
		dup2(errs_wr, STDERR_FILENO);
		close(out_wr);
		close(errs_wr);
	}
	char c;
	while (read(gate_rd, &c, 1) < 0 && errno == EINTR)
		;
	close(gate_rd);
	if (envp)
		execvpe(argv[0], argv, envp);
	else
		execvp(argv[0], argv);
	int e = errno;
	ssize_t w = write(err_wr, &e, sizeof(e));
	(void)w;
	_exit(e == ENOENT ? 127 : 126);
}

int spawn_start(struct spawn *sp, char *const argv[], const char *const *extra_env,
		int capture_output, struct strbuf *err)
{
	int gate[2] = { -1, -1 }, execerr[2] = { -1, -1 }, out[2] = { -1, -1 },
	    errs[2] = { -1, -1 };
	int ret = 0;
	char **envp = NULL;
	if (pipe2(gate, O_CLOEXEC) < 0 || pipe2(execerr, O_CLOEXEC) < 0 ||
	    (capture_output && (pipe2(out, O_CLOEXEC) < 0 || pipe2(errs, O_CLOEXEC) < 0))) {
		ret = -errno;
		strbuf_addf(err, "cannot create pipes: %s", strerror(errno));
		goto out;
	}
	int hold_tty = capture_output == SPAWN_HOLD_TERMINAL;
	int give_tty = !hold_tty && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	envp = extra_env && *extra_env ? build_env(extra_env) : NULL;
	pid_t pid = fork();
	if (pid < 0) {
		ret = -errno;
		strbuf_addf(err, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		const int parent_ends[4] = { gate[1], execerr[0], out[0], errs[0] };
		child_run(argv, envp, parent_ends, gate[0], execerr[1], out[1], errs[1], give_tty,
			  hold_tty);
	}
	setpgid(pid, pid); /* also here, so the group exists before we signal it */
	sp->pid = pid;
	sp->gate_fd = gate[1];
	gate[1] = -1;
	sp->exec_err_fd = execerr[0];
	execerr[0] = -1;
	sp->stdout_fd = out[0];
	sp->stderr_fd = errs[0];
	out[0] = errs[0] = -1;
	if (give_tty) {
		sp->tty_fd = STDIN_FILENO;
		sp->tty_pgrp = getpgrp();
		tcsetpgrp(STDIN_FILENO, pid); /* SIGTTOU is blocked by the session */
	}
out:
	free(envp);
	close_fd(&gate[0]);
	close_fd(&gate[1]);
	close_fd(&execerr[0]);
	close_fd(&execerr[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&errs[0]);
	close_fd(&errs[1]);
	return ret;
}

int spawn_release(struct spawn *sp, struct strbuf *err)
{
	close_fd(&sp->gate_fd);
	int e = 0;
	ssize_t n;
	do {
		n = read(sp->exec_err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close_fd(&sp->exec_err_fd);
	if (n != (ssize_t)sizeof(e))
		return 0; /* EOF: the exec closed the pipe, the command runs */
	strbuf_addf(err, "cannot run the command: %s", strerror(e));
	return e == ENOENT ? 127 : 126;
}

void spawn_signal(const struct spawn *sp, int sig)
{
	if (sp->pid > 0 && kill(-sp->pid, sig) < 0 && errno == ESRCH)
		kill(sp->pid, sig); /* the leader may have left its group */
}

void spawn_finish(struct spawn *sp)
{
	if (sp->tty_fd >= 0) {
		tcsetpgrp(sp->tty_fd, sp->tty_pgrp);
		sp->tty_fd = -1;
	}
	close_fd(&sp->gate_fd);
	close_fd(&sp->exec_err_fd);
	close_fd(&sp->stdout_fd);
	close_fd(&sp->stderr_fd);
}

int spawn_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}
