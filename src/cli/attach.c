/* sonde attach: profile a process that is already running, then leave it be. */
#include "cli.h"
#include "profile.h"
#include "../target/procfs.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <unistd.h>

static void attach_usage(FILE *out)
{
	fputs("usage: sonde attach [options] PID\n"
	      "       sonde attach [options] --pid PID\n\n"
	      "Follows a running process and every process it starts, until it exits,\n"
	      "-d expires, or Ctrl-C. The process is never stopped or signalled: sonde\n"
	      "detaches and it keeps running. Its output is not captured (it already\n"
	      "goes elsewhere). Figures of the process count from the moment sonde\n"
	      "attached.\n\n"
	      "options:\n",
	      out);
	profile_args_help(out, 1);
}

int cmd_attach(int argc, char **argv)
{
	struct profile_args a;
	int rc = profile_args_parse(argc, argv, 1, attach_usage, &a);
	if (rc >= 0)
		return rc;
	if (optind < argc) {
		long pid;
		if (a.pid || optind != argc - 1 || parse_long_range(argv[optind], 1, 1L << 22, &pid)) {
			cli_error("'%s' is not a process id (usage: sonde attach [options] PID)",
				  argv[optind]);
			return CLI_USAGE;
		}
		a.pid = (pid_t)pid;
	}
	if (!a.pid) {
		cli_error("no process to attach to (usage: sonde attach [options] PID)");
		return CLI_USAGE;
	}
	if (a.pid == getpid()) {
		cli_error("sonde cannot attach to itself");
		return CLI_USAGE;
	}
	a.so.attach_pid = a.pid;
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
