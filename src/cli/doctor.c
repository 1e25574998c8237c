/* sonde doctor: prints what sonde can and cannot do on this machine and why,
 * one fact a line, each problem with its fix; --json for machines. */
#include "cli.h"
#include "cliopt.h"
#include "doctor.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void doctor_usage(FILE *out)
{
	fputs("usage: sonde doctor [--json]\n\n"
	      "Prints what sonde can and cannot do on this machine, one fact a line:\n"
	      "the kernel, perf events (paranoid level, privileges, seccomp, and opening\n"
	      "the events sonde samples with), ptrace, hardware counters, the scheduler\n"
	      "tracepoint, cgroup CPU limits, the CPU and its frequency, load, steal\n"
	      "time, memory, the Pythons found and the NVIDIA libraries. Each line\n"
	      "starts with ok, limited or no; a line that is not ok is followed by its\n"
	      "fix.\n\n"
	      "options:\n"
	      "  --json      the same facts as JSON on stdout\n"
	      "  -h, --help  this help\n\n"
	      "Exit status: 0 whatever it finds; 2 on a usage error.\n",
	      out);
}

void doctor_fact_add(struct doctor_facts *facts, enum doctor_verdict verdict, const char *key,
		     const char *value, const char *fmt, ...)
{
	if (facts->n == facts->cap) {
		facts->cap = facts->cap ? facts->cap * 2 : 32;
		facts->v = xrealloc(facts->v, facts->cap * sizeof(*facts->v));
	}
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	struct doctor_fact *f = &facts->v[facts->n++];
	f->verdict = verdict;
	f->key = xstrdup(key);
	f->value = xstrdup(value);
	f->fact = strbuf_detach(&sb);
	f->fix = xstrdup("");
}

void doctor_fix_set(struct doctor_facts *facts, const char *fix)
{
	if (!facts->n)
		return;
	free(facts->v[facts->n - 1].fix);
	facts->v[facts->n - 1].fix = xstrdup(fix);
}

void doctor_facts_release(struct doctor_facts *facts)
{
	for (size_t i = 0; i < facts->n; i++) {
		free(facts->v[i].key);
		free(facts->v[i].value);
		free(facts->v[i].fact);
		free(facts->v[i].fix);
	}
	free(facts->v);
	memset(facts, 0, sizeof(*facts));
}

static const char *verdict_word(enum doctor_verdict v)
{
	return v == DOCTOR_OK ? "ok" : v == DOCTOR_LIMITED ? "limited" : "no";
}

/* Facts quote outside text (a CPU model, paths): printed escaped. */
static void facts_print(const struct doctor_facts *facts)
{
	for (size_t i = 0; i < facts->n; i++) {
		const struct doctor_fact *f = &facts->v[i];
		printf("%-8s", verdict_word(f->verdict));
		utf8_print(stdout, f->fact, 0);
		putchar('\n');
		if (*f->fix) {
			fputs("        fix: ", stdout);
			utf8_print(stdout, f->fix, 0);
			putchar('\n');
		}
	}
}

static int facts_print_json(const struct doctor_facts *facts)
{
	json_t *list = json_array();
	for (size_t i = 0; i < facts->n; i++) {
		const struct doctor_fact *f = &facts->v[i];
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:s}", "key", f->key,
						      "status", verdict_word(f->verdict), "value",
						      f->value, "fact", f->fact, "fix", f->fix));
	}
	json_t *root = json_pack("{s:o}", "facts", list);
	int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	putchar('\n');
	json_decref(root);
	return rc;
}

static const struct option doctor_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_doctor(int argc, char **argv)
{
	struct cli_getopt g = { .cmd = "doctor",
				.shortopts = "+:h",
				.longopts = doctor_options,
				.usage = doctor_usage };
	int json = 0, c;
	while ((c = cli_getopt(&g, argc, argv)) >= 0)
		json = 1; /* --json, the one option besides --help */
	if (c == CLI_GETOPT_EXIT)
		return g.exit_code;
	if (optind < argc) {
		cli_error("doctor takes no operand, got '%s' (see 'sonde doctor --help')",
			  argv[optind]);
		return CLI_USAGE;
	}
	struct doctor_facts facts = { 0 };
	doctor_check_perf(&facts);
	doctor_check_ptrace(&facts);
	doctor_check_machine(&facts);
	doctor_check_python(&facts);
	doctor_check_gpu(&facts);
	if (json)
		facts_print_json(&facts);
	else
		facts_print(&facts);
	fflush(stdout);
	doctor_facts_release(&facts);
	return 0;
}
