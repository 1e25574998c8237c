/* attach: finding the running process `sonde attach` and `sonde top` follow. */
#ifndef SONDE_CLI_ATTACH_H
#define SONDE_CLI_ATTACH_H

#include "profile.h"

#include <stdio.h>

/* Parses attach's options (profile_args_parse with attach = 1, --all, and
 * the PID or NAME before or after them), finds the process (a name asks
 * which when several match and stdin is a terminal) and refuses init, sonde
 * itself, a process not permitted or whose tree spans other users'
 * sessions (unless --all). Returns -1 with a->pid and a->so.attach_pid set,
 * or the exit code (0 for --help, CLI_USAGE after a one-line error). usage
 * prints the command's help. */
int attach_target_resolve(int argc, char **argv, void (*usage)(FILE *out), struct profile_args *a);

#endif
