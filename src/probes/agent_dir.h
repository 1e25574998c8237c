/* agent_dir: what every in-process agent needs on sonde's side: its files
 * found next to sonde's binary, and a private directory where it writes.
 *
 * An agent (the allocation tracker, the asyncio recorder) is loaded into the
 * target through its environment and writes its records into a directory
 * sonde creates with mkdtemp under $TMPDIR (or /tmp), named
 * "sonde-agent-XXXXXX", mode 0700, holding an exclusive flock on it while
 * the run lasts: that lock tells the agents that sonde still reads, and
 * tells a later sonde that the directory is a live run's. Directories whose
 * lock nobody holds were left by a sonde that was killed; agent_dir_create()
 * removes them first. */
#ifndef SONDE_AGENT_DIR_H
#define SONDE_AGENT_DIR_H

struct strbuf;

struct agent_dir {
	char *path;  /* NULL until created */
	int lock_fd; /* holds the flock; -1 when none */
};
#define AGENT_DIR_INIT { NULL, -1 }

/* Finds an agent's file NAME: the path in environment variable ENV_VAR when
 * set (it must be readable), else next to sonde's binary, in ../lib/sonde or
 * ../lib. 0 with the path in *path; -1 with the first place looked at in
 * *path (for the message). */
int agent_find(const char *env_var, const char *name, struct strbuf *path);

/* Creates the directory, locked. 0, or -1 with one line in why. */
int agent_dir_create(struct agent_dir *ad, struct strbuf *why);

/* Removes the directory's files (never following links), the directory,
 * and the lock. Safe on a directory never created. */
void agent_dir_remove(struct agent_dir *ad);

#endif
