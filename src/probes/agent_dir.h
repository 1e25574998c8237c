/* agent_dir: what every in-process agent needs on sonde's side: its files
 * found next to sonde's binary, and a private directory where it writes.
 *
 * An agent (the allocation tracker, the asyncio recorder) is loaded into the
 * target through its environment and writes its records into a directory
 * sonde creates with mkdtemp under $TMPDIR (or /tmp), named
 * "sonde-agent-XXXXXX", mode 0700, holding an exclusive flock on it while
 * the run lasts: that lock tells the agents that sonde still reads, and
 * tells a later sonde that the directory is a live run's. Directories whose
 * lock nobody holds were left by a sonde that was killed; agent_dir_acquire()
 * removes them first. An agent that finds the lock free (sonde was killed)
 * removes its own file, and the directory with the last one: the allocation
 * agent does; the asyncio agent's file waits for the next sonde. */
#ifndef SONDE_AGENT_DIR_H
#define SONDE_AGENT_DIR_H

struct strbuf;

/* Finds an agent's file NAME: the path in environment variable ENV_VAR when
 * set (it must be readable), else next to sonde's binary, in ../lib/sonde or
 * ../lib. 0 with the path in *path; -1 with the first place looked at in
 * *path (for the message). */
int agent_find(const char *env_var, const char *name, struct strbuf *path);

/* The run's agent directory, one for every agent of this sonde (their files
 * have names of their own): the first call creates it, locked, and each
 * call takes a reference. Its path, or NULL with one line in why. */
const char *agent_dir_acquire(struct strbuf *why);

/* Drops a reference; the last removes the directory's files (never
 * following links), the directory and the lock. */
void agent_dir_release(void);

#endif
