/* sonde run: profile a command from its start to its end. */
#include "cli.h"
#include "profile.h"
#include "repeat.h"
#include "../target/spawn.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void run_usage(FILE *out)
{
	fputs("usage: sonde run [options] -- COMMAND [ARGS...]\n"
	      "       sonde run -a [-d SECS] [options]   (the whole machine)\n\n"
	      "Runs COMMAND in its own process group, follows every process it starts,\n"
	      "and writes a report when it exits. Its output passes through unchanged\n"
	      "and is also stored, timestamped, in output.log. sonde exits with the\n"
	      "command's exit status (128+N when a signal N killed it; 127 when the\n"
	      "command is not found). Ctrl-C is passed to the command; the report is\n"
	      "still written from what was collected (a second Ctrl-C kills it). While\n"
	      "the report is written, one more Ctrl-C is ignored and the next aborts:\n"
	      "'sonde report DIR' then writes it from the recording.\n\n"
	      "With -a sonde starts nothing: it follows every process of the machine\n"
	      "(not kernel threads, not itself) from now until -d or Ctrl-C, leaves\n"
	      "them running, and reports each process's CPU, memory and hottest\n"
	      "functions, the busiest first, and the machine's CPU use as a whole.\n\n"
	      "options:\n",
	      out);
	profile_args_help(out, 0);
	fputs("\nThe run directory holds profile.db (the recording), report.md,\n"
	      "report.json and output.log; 'sonde report DIR' re-renders them.\n"
	      "With --repeat N it holds N such directories, 1 to N, and repeat.json.\n",
	      out);
}

/* run -a: the session attaches to init, which never exits, and follows
 * every process below it (session.c leaves sonde out). */
static int run_whole_machine(struct profile_args *a, int argc, char **argv)
{
	if (optind < argc) {
		cli_error("-a profiles the whole machine: give no command (got '%s'), or drop -a",
			  argv[optind]);
		return CLI_USAGE;
	}
	if (kill(1, 0) < 0 && errno == EPERM) {
		cli_error("-a reads every process of the machine, which needs root: run 'sudo "
			  "sonde run -a ...'");
		return CLI_USAGE;
	}
	a->so.attach_pid = 1;
	a->so.capture_output = 0;
	return profile_execute(a, "machine", "the whole machine");
}

int cmd_run(int argc, char **argv)
{
	struct profile_args a;
	int rc = profile_args_parse(argc, argv, 0, run_usage, &a);
	if (rc >= 0)
		return rc;
	if (a.so.probe_cfg.whole_machine)
		return run_whole_machine(&a, argc, argv);
	if (optind >= argc) {
		cli_error("no command to profile (usage: sonde run [options] -- COMMAND [ARGS...])");
		return CLI_USAGE;
	}
	a.so.argv = argv + optind;
	a.so.probe_cfg.argv = a.so.argv;
	struct strbuf err = STRBUF_INIT, cmd = STRBUF_INIT;
	rc = spawn_check_command(a.so.argv[0], &err);
	if (rc) {
		cli_error("%s; nothing was profiled", err.buf);
		/* Not found (127) may be a mistaken target: show what sonde can
		 * profile. A file that cannot run (126) needs only its reason. */
		if (rc == 127) {
			fputc('\n', stderr);
			cli_examples(stderr);
		}
	} else {
		for (char *const *p = a.so.argv; *p; p++)
			strbuf_addf(&cmd, "%s%s", p == a.so.argv ? "" : " ", *p);
		rc = a.repeat > 1 ? repeat_execute(&a, a.so.argv[0], cmd.buf)
				  : profile_execute(&a, a.so.argv[0], cmd.buf);
	}
	strbuf_release(&err);
	strbuf_release(&cmd);
	return rc;
}
