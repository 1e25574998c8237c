/* rundir: choosing and preparing the run directory.
 *
 * Default: ./profile_output/<YYYYmmdd-HHMMSS>-<name>/, never an existing one,
 * with profile_output/latest pointing at it. With -o DIR: DIR is created if
 * missing; an existing DIR that already holds sonde artifacts is refused
 * unless force, in which case only those artifacts are removed. */
#ifndef SONDE_RUNDIR_H
#define SONDE_RUNDIR_H

#include <sys/types.h>

struct strbuf;

/* On success fills path (the directory to use) and returns 0; otherwise -1
 * with a one-line message in err. Nothing is created on failure. Directories
 * sonde creates get SAFEFILE_DIR_MODE(file_mode) (0700 for 0600; the umask
 * applies). Anything at an artifact's name, a dangling link included, counts
 * as an earlier run; force removes it without following it. */
int rundir_prepare(const char *requested, const char *command, int force, mode_t file_mode,
		   struct strbuf *path, struct strbuf *err);

/* Opens ./profile_output (made with dir_mode when missing; a link there only
 * when it is the user's own). Returns a directory fd, or -1 with a one-line
 * reason in err. */
int rundir_open_base(mode_t dir_mode, struct strbuf *err);

/* Points profile_output/latest at path (only for default directories). */
void rundir_link_latest(const char *path);

/* The files sonde writes in a run directory. */
extern const char *const rundir_artifacts[];

#endif
