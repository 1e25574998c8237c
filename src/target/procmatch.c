/* procmatch: find running processes by name or command line. */
#include "procmatch.h"
#include "procfs.h"
#include "../util/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MATCH_NONE, MATCH_CMDLINE, MATCH_EXACT };

static int pid_skipped(pid_t pid, const pid_t *skip, size_t n_skip)
{
	for (size_t i = 0; i < n_skip; i++)
		if (skip[i] == pid)
			return 1;
	return 0;
}

/* How well pid matches name; fills m. Kernel threads (no command line) and
 * processes gone meanwhile are MATCH_NONE. */
static int match_rank(pid_t pid, const char *name, struct procmatch *m)
{
	char path[64], raw[PROCMATCH_CMDLINE_CHARS];
	struct procfs_stat st;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ssize_t n = file_read_small(path, raw, sizeof(raw));
	if (n <= 0 || procfs_read_stat(pid, 0, &st))
		return MATCH_NONE;
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	snprintf(m->comm, sizeof(m->comm), "%s", st.comm);
	const char *slash = strrchr(raw, '/'); /* raw holds argv[0] up to its NUL */
	const char *argv0_base = slash ? slash + 1 : raw;
	int exact = !strcmp(st.comm, name) || !strcmp(argv0_base, name);
	while (n > 0 && raw[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		m->cmdline[i] = raw[i] ? raw[i] : ' ';
	if (exact)
		return MATCH_EXACT;
	return strstr(m->cmdline, name) ? MATCH_CMDLINE : MATCH_NONE;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct procmatch *)a)->pid, y = ((const struct procmatch *)b)->pid;
	return (x > y) - (x < y);
}

int procmatch_find(const char *name, const pid_t *skip, size_t n_skip, struct procmatch *out,
		   size_t cap)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	/* Matches of the best rank seen so far; a better rank starts over. */
	int best = MATCH_NONE, count = 0;
	struct procmatch m;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid_skipped((pid_t)pid, skip, n_skip))
			continue;
		int rank = match_rank((pid_t)pid, name, &m);
		if (rank == MATCH_NONE || rank < best)
			continue;
		if (rank > best) {
			best = rank;
			count = 0;
		}
		if ((size_t)count < cap)
			out[count] = m;
		count++;
	}
	closedir(d);
	qsort(out, (size_t)count < cap ? (size_t)count : cap, sizeof(*out), pid_cmp);
	return count;
}

size_t procmatch_ancestors(pid_t pid, pid_t *out, size_t cap)
{
	size_t n = 0;
	struct procfs_stat st;
	while (n < cap && pid > 1) {
		out[n++] = pid;
		if (procfs_read_stat(pid, 0, &st))
			break;
		pid = st.ppid;
	}
	return n;
}
