/* sonde attach: profile a process that is already running, then leave it be. */
#include "cli.h"
#include "attach.h"
#include "profile.h"
#include "../target/procfs.h"
#include "../target/procmatch.h"
#include "../target/proctree.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Strangers named in the refusal; the rest are counted. */
#define ATTACH_STRANGERS_SHOWN 4
/* Processes a name matched that are listed; the rest are counted. */
#define ATTACH_MATCHES_SHOWN 20
/* Command line characters shown per listed process. */
#define ATTACH_CMDLINE_SHOWN 72

static void attach_usage(FILE *out)
{
	fputs("usage: sonde attach [options] PID|NAME [options]\n"
	      "       sonde attach [options] --pid PID\n\n"
	      "NAME finds the process: first by its exact name (comm, or argv[0]'s\n"
	      "base name), else by a part of its command line; sonde and the shell\n"
	      "that started it never match. When several match, sonde lists them and\n"
	      "asks which (or, when stdin is not a terminal, stops: give a PID).\n\n"
	      "Follows a running process and every process it starts, until it exits,\n"
	      "-d expires, or Ctrl-C. The process is never stopped or signalled: sonde\n"
	      "detaches and it keeps running. Its output is not captured (it already\n"
	      "goes elsewhere). Figures of the process count from the moment sonde\n"
	      "attached; -d counts from when sampling starts.\n\n"
	      "options:\n"
	      "  --all                 attach even to init (PID 1) or to a process whose\n"
	      "                        tree holds other users' sessions (they are profiled too)\n",
	      out);
	profile_args_help(out, 1);
}

/* Options may come before or after the PID: the PID is taken out of the
 * arguments and they are parsed again without it. --all, attach's own, is
 * taken out first. Returns -1 to go on, or the exit code. */
static int parse_attach_args(int argc, char **argv, void (*usage)(FILE *out),
			     struct profile_args *a, int *all, const char **name)
{
	char **args = xcalloc((size_t)argc + 1, sizeof(*args));
	int n = 0, ret = CLI_USAGE, dashdash = 0;
	const char *cmd = usage == attach_usage ? "attach" : argv[0];
	for (int i = 0; i < argc; i++) {
		dashdash |= !strcmp(argv[i], "--");
		if (i > 0 && !dashdash && !strcmp(argv[i], "--all"))
			*all = 1;
		else
			args[n++] = argv[i];
	}
	int rc = profile_args_parse(n, args, 1, usage, a);
	if (rc >= 0) {
		ret = rc;
		goto out;
	}
	if (optind < n) {
		const char *operand = args[optind];
		long pid;
		if (a->pid) {
			cli_error("'%s': one process only (--pid %d is given)", operand,
				  (int)a->pid);
			goto out;
		}
		/* Digits are a PID; anything else names the process. */
		if (operand[strspn(operand, "0123456789")]) {
			*name = operand;
			pid = 0;
		} else if (parse_long_range(operand, 1, 1L << 22, &pid)) {
			cli_error(
			    "'%s' is not a process id (usage: sonde %s [options] PID|NAME)",
			    operand, cmd);
			goto out;
		}
		memmove(&args[optind], &args[optind + 1], (size_t)(n - optind) * sizeof(*args));
		n--;
		rc = profile_args_parse(n, args, 1, usage, a);
		if (rc >= 0) {
			ret = rc;
			goto out;
		}
		if (optind < n) {
			cli_error("'%s': one process only (usage: sonde %s [options] PID|NAME)",
				  args[optind], cmd);
			goto out;
		}
		a->pid = (pid_t)pid;
	}
	ret = -1;
out:
	free(args);
	return ret;
}

static const char *user_name(uid_t uid, char *buf, size_t cap)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];
	if (!getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) && res)
		snprintf(buf, cap, "%s", pw.pw_name);
	else
		snprintf(buf, cap, "uid %u", (unsigned)uid);
	return buf;
}

/* 0 when pid may be followed as asked; otherwise prints why and returns CLI_USAGE. */
static int check_target(pid_t pid, int all)
{
	if (pid == getpid()) {
		cli_error("sonde cannot attach to itself");
		return CLI_USAGE;
	}
	if (pid == 1 && !all) {
		cli_error("process 1 is init, the parent of every process on this machine: "
			  "attaching would profile them all, other users' included; add --all if "
			  "that is what you want");
		return CLI_USAGE;
	}
	if (kill(pid, 0) < 0 && errno == EPERM) {
		struct strbuf why = STRBUF_INIT;
		procfs_explain_denied(pid, &why);
		cli_error("not permitted to follow process %d: %s", (int)pid, why.buf);
		strbuf_release(&why);
		return CLI_USAGE;
	}
	if (all)
		return 0;
	struct proctree_stranger s[ATTACH_STRANGERS_SHOWN];
	size_t n = proctree_strangers(pid, s, ATTACH_STRANGERS_SHOWN);
	if (!n)
		return 0;
	struct strbuf list = STRBUF_INIT;
	for (size_t i = 0; i < n && i < ATTACH_STRANGERS_SHOWN; i++) {
		char user[64];
		strbuf_addf(&list, "%s%d (%s, %s)", i ? ", " : "", (int)s[i].pid, s[i].comm,
			    user_name(s[i].uid, user, sizeof(user)));
	}
	cli_error("process %d's tree spans other users' sessions: %s%s; sonde would profile "
		  "them too: add --all if that is what you want, or attach to the process of "
		  "interest",
		  (int)pid, list.buf, n > ATTACH_STRANGERS_SHOWN ? ", ..." : "");
	strbuf_release(&list);
	return CLI_USAGE;
}

/* "812 (gunicorn: master), 813, 814": a command line shown once for a run of
 * processes that share it. */
static void matches_list(const struct procmatch *m, size_t n, struct strbuf *out)
{
	for (size_t i = 0; i < n; i++) {
		strbuf_addf(out, "%s%d", i ? ", " : "", (int)m[i].pid);
		if (!i || strcmp(m[i].cmdline, m[i - 1].cmdline))
			strbuf_addf(out, " (%.*s%s)", ATTACH_CMDLINE_SHOWN, m[i].cmdline,
				    strlen(m[i].cmdline) > ATTACH_CMDLINE_SHOWN ? "..." : "");
	}
}

/* Asks on the terminal which of the n matches to follow; its pid, or 0 when
 * the answer is no choice. */
static pid_t matches_ask(const struct procmatch *m, size_t n, const char *name)
{
	fprintf(stderr, "sonde: %zu processes match '%s':\n", n, name);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "  %zu) %d  %.*s\n", i + 1, (int)m[i].pid, ATTACH_CMDLINE_SHOWN * 2,
			m[i].cmdline);
	fprintf(stderr, "Which one? [1-%zu, Enter to cancel]: ", n);
	fflush(stderr);
	char line[64];
	long pick;
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	line[strcspn(line, "\n")] = '\0';
	if (parse_long_range(line, 1, (long)n, &pick))
		return 0;
	return m[pick - 1].pid;
}

/* The one process name stands for (procmatch.h's rules), chosen by the user
 * when several match and stdin is a terminal. Its pid, or 0 with the error
 * printed. */
static pid_t attach_find_name(const char *name)
{
	pid_t skip[64];
	size_t n_skip = procmatch_ancestors(getpid(), skip, sizeof(skip) / sizeof(skip[0]));
	struct procmatch *m = xcalloc(ATTACH_MATCHES_SHOWN, sizeof(*m));
	int n = procmatch_find(name, skip, n_skip, m, ATTACH_MATCHES_SHOWN);
	pid_t pid = 0;
	size_t shown = n > ATTACH_MATCHES_SHOWN ? ATTACH_MATCHES_SHOWN : (size_t)(n > 0 ? n : 0);
	struct strbuf list = STRBUF_INIT;
	if (n < 0) {
		cli_error("cannot list the processes in /proc: %s", strerror(-n));
	} else if (n == 0) {
		cli_error("no process matches '%s' (by name or command line; 'ps -ef' lists "
			  "them; or give a PID)",
			  name);
	} else if (n == 1) {
		pid = m[0].pid;
	} else if (isatty(STDIN_FILENO) && n <= ATTACH_MATCHES_SHOWN) {
		pid = matches_ask(m, shown, name);
		if (!pid)
			cli_error("no process chosen (give a PID: sonde attach PID)");
	} else {
		matches_list(m, shown, &list);
		if ((size_t)n > shown)
			strbuf_addf(&list, ", and %zu more", (size_t)n - shown);
		cli_error("%d processes match '%s': %s; give a PID", n, name, list.buf);
	}
	strbuf_release(&list);
	free(m);
	return pid;
}

int attach_target_resolve(int argc, char **argv, void (*usage)(FILE *out), struct profile_args *a)
{
	int all = 0;
	const char *by_name = NULL;
	int rc = parse_attach_args(argc, argv, usage, a, &all, &by_name);
	if (rc >= 0)
		return rc;
	if (by_name && !(a->pid = attach_find_name(by_name)))
		return CLI_USAGE;
	if (!a->pid) {
		cli_error("no process to attach to (usage: sonde %s [options] PID|NAME)",
			  usage == attach_usage ? "attach" : argv[0]);
		return CLI_USAGE;
	}
	if (kill(a->pid, 0) < 0 && errno == ESRCH) {
		cli_error("no process %d to attach to", (int)a->pid);
		return CLI_USAGE;
	}
	rc = check_target(a->pid, all);
	if (rc)
		return rc;
	a->so.attach_pid = a->pid;
	a->so.probe_cfg.attach_pid = a->pid;
	return -1;
}

int cmd_attach(int argc, char **argv)
{
	struct profile_args a;
	int rc = attach_target_resolve(argc, argv, attach_usage, &a);
	if (rc >= 0)
		return rc;
	char cmd[1024], name[96];
	if (procfs_read_cmdline(a.pid, cmd, sizeof(cmd))) {
		cli_error("no process %d to attach to", (int)a.pid);
		return CLI_USAGE;
	}
	struct procfs_stat st;
	snprintf(name, sizeof(name), "pid%d", (int)a.pid);
	if (!procfs_read_stat(a.pid, 0, &st))
		snprintf(name, sizeof(name), "%s-%d", st.comm, (int)a.pid);
	return profile_execute(&a, name, cmd);
}
