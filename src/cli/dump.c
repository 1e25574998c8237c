/* sonde dump: print every thread's current Python stack of a running process,
 * read from outside (symbols/cpython), without stopping it. */
#include "cli.h"
#include "cliopt.h"
#include "../symbols/cpython.h"
#include "../target/procfs.h"
#include "../util/clock.h"
#include "../util/parse.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DUMP_TRIES 100 /* samples taken while a thread's stack is torn */

static void dump_usage(FILE *out)
{
	fputs("usage: sonde dump [options] PID\n\n"
	      "Prints the Python stack of every thread of process PID, as it is now,\n"
	      "read from outside the process without pausing it (CPython 3.8 to 3.13).\n"
	      "Each thread shows its kernel thread id, name (threading's Thread.name,\n"
	      "else the kernel's), state (running: on a CPU\n"
	      "or runnable; otherwise sleeping, waiting for disk, ...) and whether it\n"
	      "holds the GIL; its frames follow, innermost (the running one) first,\n"
	      "as function (file:line).\n\n"
	      "options:\n"
	      "  -w, --wait SECS  when PID is not (yet) a Python, keep looking this long\n"
	      "                   (default 1: an interpreter still starting, or one a\n"
	      "                   memory scan misses while it changes, gets more looks)\n"
	      "  -h, --help       this help\n\n"
	      "Exit status: 0 with the stacks printed; 1 when PID is not a Python sonde\n"
	      "can read (the reason is printed); 2 on a usage error.\n",
	      out);
}

static const struct option dump_options[] = {
	{ "wait", required_argument, NULL, 'w' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Names from the target reach the terminal escaped (\x1b) and shortened. */
#define DUMP_NAME_CHARS 160

static const char *state_word(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "waiting for disk";
	case 'T': case 't': return "stopped";
	case 'Z': return "zombie";
	case 'I': return "idle";
	default: return "unknown";
	}
}

static void print_thread(pid_t pid, const struct cpython_sample *s, const struct cpython_thread *th)
{
	struct procfs_stat st;
	int have = th->tid > 0 && !procfs_read_stat(pid, th->tid, &st);
	if (th->tid > 0)
		printf("Thread %d", (int)th->tid);
	else
		printf("Thread (tid unknown, state 0x%llx)", (unsigned long long)th->tstate);
	if (th->name || have) { /* threading's name; else the kernel's */
		fputs(" \"", stdout);
		utf8_print(stdout, th->name ? th->name : st.comm, DUMP_NAME_CHARS);
		putchar('"');
	}
	if (have)
		printf(" %s", state_word(st.state));
	if (th->holds_gil == 1)
		printf(", holds the GIL");
	putchar('\n');
	if (!th->ok) {
		printf("    (its stack changed while being read; run sonde dump again)\n");
		return;
	}
	if (!th->n)
		printf("    (no Python frames)\n");
	for (size_t k = 0; k < th->n; k++) {
		const struct cpython_frame *f = &s->frames[th->first + k];
		fputs("    ", stdout);
		utf8_print(stdout, f->function, DUMP_NAME_CHARS);
		fputs(" (", stdout);
		utf8_print(stdout, f->file, DUMP_NAME_CHARS);
		printf(":%d)\n", f->line);
	}
}

int cmd_dump(int argc, char **argv)
{
	struct cli_getopt g = {
		.cmd = "dump", .shortopts = "+:w:h", .longopts = dump_options, .usage = dump_usage
	};
	int c;
	int64_t wait_ns = NS_PER_S;
	while ((c = cli_getopt(&g, argc, argv)) >= 0) { /* --wait, the one option besides --help */
		if (parse_duration_ns(optarg, &wait_ns)) {
			cli_error("--wait '%s' is not a duration (examples: 2, 500ms)", optarg);
			return CLI_USAGE;
		}
	}
	if (c == CLI_GETOPT_EXIT)
		return g.exit_code;
	long pid_l;
	if (optind != argc - 1 || parse_long_range(argv[optind], 1, 1L << 22, &pid_l)) {
		cli_error("dump needs one process id (usage: sonde dump [options] PID)");
		return CLI_USAGE;
	}
	pid_t pid = (pid_t)pid_l;
	struct strbuf why = STRBUF_INIT;
	struct cpython_proc *cp = NULL;
	enum cpython_open_result r;
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	for (int64_t waited = 0;; waited += 50 * 1000 * 1000) {
		strbuf_reset(&why);
		r = cpython_open(pid, &cp, &why);
		if (r != CPYTHON_NOT_PYTHON || waited >= wait_ns)
			break;
		nanosleep(&pause, NULL);
	}
	if (r != CPYTHON_FOUND) {
		cli_error("%s", why.buf);
		strbuf_release(&why);
		return 1;
	}
	strbuf_release(&why);
	struct cpython_sample s;
	int ret = 1;
	/* A stack that changed while being read is read again (each sample
	 * already walks a stack up to 9 times): a deep recursion that keeps
	 * moving still gets a consistent stack, not a half-read one. */
	for (int attempt = 0;; attempt++) {
		if (cpython_sample(cp, &s)) {
			cli_error("process %d went away while being read", (int)pid);
			goto out;
		}
		size_t torn = 0;
		for (size_t i = 0; i < s.nthreads; i++)
			torn += !s.threads[i].ok;
		if (!torn || attempt == DUMP_TRIES - 1)
			break;
	}
	char cmd[512];
	if (procfs_read_cmdline(pid, cmd, sizeof(cmd)))
		cmd[0] = '\0';
	printf("Process %d: ", (int)pid);
	utf8_print(stdout, cmd, 0);
	printf("\nCPython %s, ", cpython_version(cp));
	utf8_print(stdout, cpython_where(cp), 0);
	putchar('\n');
	if (!s.nthreads)
		printf("\nno Python thread (the interpreter is not initialised yet, or finalised)\n");
	/* CPython lists threads newest first; print the main thread first. */
	for (size_t i = s.nthreads; i-- > 0;) {
		putchar('\n');
		print_thread(pid, &s, &s.threads[i]);
	}
	ret = 0;
out:
	cpython_close(cp);
	return ret;
}
