/* cli: the subcommands. Only this folder decides to exit; each command returns
 * the process exit code. Usage errors print one line and return CLI_USAGE. */
#ifndef SONDE_CLI_H
#define SONDE_CLI_H

#include <stdio.h>
#include <sys/types.h>

#define CLI_USAGE 2

struct render_ctx;
struct strbuf;
struct report_options;
struct exporter;

int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_instrument(int argc, char **argv);
int cmd_clean(int argc, char **argv);

/* One example per kind of target sonde profiles (a command, a Python script,
 * a running process by PID or name, a run directory), for the help and for
 * errors that leave the user without a target. */
void cli_examples(FILE *out);
int cmd_compare(int argc, char **argv);

/* Prints "sonde: <msg>" on stderr. */
__attribute__((format(printf, 1, 2))) void cli_error(const char *fmt, ...);

/* Builds the report from DIR/profile.db (with opts, NULL for none) and writes
 * every artifact; prints the terminal summary unless quiet. Returns 0, or 1
 * with the error printed. */
int cli_render_run_dir(const char *dir, int quiet, const struct report_options *opts);

/* The one operand left after the options, a run directory: argv[optind]
 * when it is the only one and a directory; else NULL, with a one-line error
 * that gives usage when the count is wrong. */
const char *cli_run_dir_arg(int argc, char **argv, int optind, const char *usage);

/* The export format called name (render.h's export_table); NULL after a
 * one-line error that suggests a near name. */
const struct exporter *cli_export_format(const char *name);
/* Writes the whole run in dir as e, into dir under the format's file name.
 * 0, or 1 with the error printed; quiet: no "wrote" line. */
int cli_export_into_run(const char *dir, const struct exporter *e, int quiet);

/* Whether dir is a directory; else 0 with "DIR is not a run directory". */
int cli_is_run_dir(const char *dir);

/* DIR/profile.db, the recording itself (never a link at its name), as an
 * absolute path, and the permissions its outputs get. 0, or -1 with the
 * error printed. */
int cli_recording_path(const char *dir, struct strbuf *path, mode_t *mode);

/* 0 when pattern is a usable --phase pattern; else prints why and returns -1. */
int cli_check_phase_pattern(const char *pattern);

#endif
