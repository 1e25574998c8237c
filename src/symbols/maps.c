/* maps: executable mappings of a process, from /proc/PID/maps and mmap records. */
#include "maps.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* /proc/PID/maps of a big process (a browser, a JVM) runs to a few MiB. */
#define MAPS_FILE_MAX (64u << 20)

void maps_clear(struct maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	m->n = 0;
}

void maps_release(struct maps *m)
{
	maps_clear(m);
	free(m->v);
	m->v = NULL;
	m->alloc = 0;
}

/* Index of the first entry whose end is above addr. */
static size_t first_ending_after(const struct maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void insert_at(struct maps *m, size_t i, const struct map_entry *e)
{
	if (m->n == m->alloc) {
		m->alloc = m->alloc ? 2 * m->alloc : 32;
		m->v = xrealloc(m->v, m->alloc * sizeof(*m->v));
	}
	memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
	m->v[i] = *e;
	m->n++;
}

void maps_insert(struct maps *m, uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
	if (end <= start || m->n >= MAPS_MAX)
		return;
	size_t i = first_ending_after(m, start);
	/* An old mapping that straddles start keeps its head, and its tail when it
	 * also runs past end. */
	if (i < m->n && m->v[i].start < start) {
		struct map_entry *old = &m->v[i];
		if (old->end > end) {
			struct map_entry tail = { end, old->end, old->pgoff + (end - old->start),
						  xstrdup(old->path), old->tag };
			old->end = start;
			insert_at(m, i + 1, &tail);
		} else {
			old->end = start;
		}
		i++;
	}
	while (i < m->n && m->v[i].start < end) {
		struct map_entry *old = &m->v[i];
		if (old->end <= end) {
			free(old->path);
			memmove(old, old + 1, (m->n - i - 1) * sizeof(*old));
			m->n--;
			continue;
		}
		old->pgoff += end - old->start;
		old->start = end;
		break;
	}
	size_t plen = strnlen(path, MAPS_PATH_MAX - 1);
	char *copy = xmalloc(plen + 1);
	memcpy(copy, path, plen);
	copy[plen] = '\0';
	struct map_entry e = { start, end, pgoff, copy, -1 };
	insert_at(m, i, &e);
}

/* Parses one line "start-end perms offset dev inode   path". */
static int parse_line(struct maps *m, const char *line, size_t len)
{
	char buf[MAPS_PATH_MAX + 128];
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = '\0';
	unsigned long long start, end, off;
	char perms[8];
	int path_at = 0;
	if (sscanf(buf, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &path_at) < 4 ||
	    path_at == 0)
		return 0;
	if (strlen(perms) < 3 || perms[2] != 'x')
		return 0;
	const char *path = buf + path_at;
	/* A deleted file keeps its old name plus this suffix; symbolize by the name. */
	char *del = strstr(buf + path_at, " (deleted)");
	if (del && del[10] == '\0')
		*del = '\0';
	maps_insert(m, start, end, off, path);
	return 1;
}

size_t maps_parse(struct maps *m, const char *text, size_t len)
{
	size_t kept = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		kept += (size_t)parse_line(m, p, n);
		p += n + 1;
	}
	return kept;
}

ssize_t maps_read_pid(struct maps *m, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	struct strbuf sb = STRBUF_INIT;
	ssize_t r = file_read_strbuf(path, &sb, MAPS_FILE_MAX);
	if (r >= 0)
		r = (ssize_t)maps_parse(m, sb.buf, sb.len);
	strbuf_release(&sb);
	return r;
}

const struct map_entry *maps_find(const struct maps *m, uint64_t addr)
{
	size_t i = first_ending_after(m, addr);
	if (i < m->n && m->v[i].start <= addr)
		return &m->v[i];
	return NULL;
}
