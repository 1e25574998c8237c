/* cpython_tids: thread ids of a process in a nested PID namespace, from each
 * task's NSpid line (see cpython_tids.h). */
#include "cpython_tids.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpython_tids_parse_nspid(const char *status, pid_t *host, pid_t *inner)
{
	const char *p = status;
	while (p && strncmp(p, "NSpid:", 6)) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	if (!p)
		return -1;
	p += 6;
	long first = -1, last = -1;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!isdigit((unsigned char)*p))
			break;
		char *end;
		long v = strtol(p, &end, 10);
		if (v <= 0 || v > (1L << 22))
			return -1;
		if (first < 0)
			first = v;
		last = v;
		p = end;
	}
	if (first < 0 || (*p && *p != '\n'))
		return -1;
	*host = (pid_t)first;
	*inner = (pid_t)last;
	return 0;
}

static int read_nspid(const char *path, pid_t *host, pid_t *inner)
{
	char buf[4096];
	if (file_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	return cpython_tids_parse_nspid(buf, host, inner);
}

int cpython_tids_init(struct cpython_tids *m, pid_t pid)
{
	char path[64];
	pid_t host, inner;
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->map = (struct hashmap)HASHMAP_INIT;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	char buf[4096];
	ssize_t rc = file_read_small(path, buf, sizeof(buf));
	if (rc < 0)
		return (int)rc;
	/* A kernel without NSpid (before 4.1) has no nested namespaces to show. */
	m->nested = !cpython_tids_parse_nspid(buf, &host, &inner) && host != inner;
	return 0;
}

void cpython_tids_release(struct cpython_tids *m)
{
	hashmap_release(&m->map);
	free(m->ns_tids);
	m->ns_tids = NULL;
	m->nns = 0;
}

void cpython_tids_refresh(struct cpython_tids *m)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)m->pid);
	if (!m->ns_tids)
		m->ns_tids = xcalloc(CPYTHON_TIDS_MAX, sizeof(*m->ns_tids));
	hashmap_release(&m->map);
	m->map = (struct hashmap)HASHMAP_INIT;
	m->nns = 0;
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) && m->nns < CPYTHON_TIDS_MAX) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t host = (pid_t)atoi(de->d_name), inner = host;
		if (m->nested) {
			char status[96];
			pid_t h;
			snprintf(status, sizeof(status), "/proc/%d/task/%d/status", (int)m->pid,
				 (int)host);
			if (read_nspid(status, &h, &inner) || h != host)
				continue; /* gone, or not believable */
			hashmap_put(&m->map, &inner, sizeof(inner), host);
		}
		m->ns_tids[m->nns++] = inner;
	}
	closedir(d);
}

pid_t cpython_tids_host(const struct cpython_tids *m, pid_t ns_tid)
{
	if (!m->nested)
		return ns_tid;
	int64_t *h = hashmap_get(&m->map, &ns_tid, sizeof(ns_tid));
	return h ? (pid_t)*h : 0;
}

const pid_t *cpython_tids_ns(const struct cpython_tids *m, size_t *n)
{
	*n = m->nns;
	return m->ns_tids;
}
