/* main: sonde's entry point and the one table of subcommands. */
#include "cli.h"
#include "suggest.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"
#include "../version.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "run", cmd_run, "profile a command from start to end: sonde run [options] -- CMD [ARGS]" },
	{ "attach", cmd_attach,
	  "profile a running process, then leave it running: sonde attach PID|NAME" },
	{ "top", cmd_top, "a live view of a running process, refreshed every second: sonde top PID" },
	{ "report", cmd_report, "re-render a run directory's report from its profile.db" },
	{ "export", cmd_export,
	  "write a run, or a slice of it, in another tool's format: sonde export DIR -f NAME" },
	{ "dump", cmd_dump, "print each thread's current Python stack of a running process" },
	{ "bench", cmd_bench, "time commands repeatedly and compare them: sonde bench -- A --vs B" },
	{ "compare", cmd_compare, "what changed between two runs: sonde compare A B (see --help)" },
	{ "doctor", cmd_doctor, "what sonde can and cannot do on this machine, and the fixes" },
	{ "instrument", cmd_instrument,
	  "insert timing regions into Python source: sonde instrument mod.py:Class.method" },
	{ "clean", cmd_clean, "remove what 'sonde instrument' inserted, byte for byte" },
};

/* Messages quote outside text (paths from /proc, a recording's contents):
 * escaped, it stays on one line and no escape sequence reaches the terminal. */
void cli_error(const char *fmt, ...)
{
	va_list ap;
	struct strbuf sb = STRBUF_INIT;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	fputs("sonde: ", stderr);
	utf8_print(stderr, sb.buf, 0);
	fputc('\n', stderr);
	strbuf_release(&sb);
}

void cli_examples(FILE *out)
{
	fputs("What sonde can profile, one example of each:\n"
	      "  a command            sonde run -- ./server --port 8080\n"
	      "  a Python script      sonde run -- python3 train.py\n"
	      "  a running process    sonde attach 4242         (by PID)\n"
	      "                       sonde attach gunicorn     (by name or command line)\n"
	      "  a run directory      sonde report profile_output/latest   (its report again)\n",
	      out);
}

static void usage(FILE *out)
{
	fputs("usage: sonde <command> [options]\n\n"
	      "sonde profiles a program and writes one ranked report of where its time,\n"
	      "memory and I/O go, and what to change first.\n\n",
	      out);
	cli_examples(out);
	fputs("\ncommands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'sonde <command> --help' describes a command's options; --focus\n"
	      "cpu|memory|gpu|io|async on run and attach measures one dimension deeper.\n",
	      out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("sonde %s\n", SONDE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	struct suggest near;
	suggest_init(&near, cmd, strlen(cmd));
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		suggest_try(&near, commands[i].name);
	if (suggest_result(&near))
		cli_error("'%s' is not a sonde command (did you mean '%s'? see 'sonde --help')", cmd,
			  suggest_result(&near));
	else
		cli_error("'%s' is not a sonde command (see 'sonde --help')", cmd);
	return CLI_USAGE;
}
