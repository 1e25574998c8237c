/* agent_files: following the agents' per-process files (agent_files.h). */
#include "agent_files.h"
#include "../util/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void files_scan(struct agent_files *af)
{
	DIR *d = opendir(af->dir);
	struct dirent *de;
	size_t plen = strlen(af->prefix);
	while (d && (de = readdir(d))) {
		char *end;
		if (strncmp(de->d_name, af->prefix, plen))
			continue;
		long pid = strtol(de->d_name + plen, &end, 10);
		if (strcmp(end, ".txt") || pid <= 0 || end == de->d_name + plen)
			continue;
		size_t i;
		for (i = 0; i < af->n && af->f[i].pid != (pid_t)pid; i++)
			;
		if (i < af->n)
			continue;
		struct strbuf path = STRBUF_INIT;
		strbuf_addf(&path, "%s/%s", af->dir, de->d_name);
		/* The target names these files: a FIFO, a device or a link planted
		 * there is refused, never read blocking. */
		int fd = file_open_regular(path.buf, O_NOFOLLOW);
		strbuf_release(&path);
		if (fd < 0)
			continue;
		if (af->n == af->alloc) {
			af->alloc = af->alloc ? 2 * af->alloc : 8;
			af->f = xrealloc(af->f, af->alloc * sizeof(*af->f));
		}
		af->f[af->n++] = (struct agent_file){ .pid = (pid_t)pid, .fd = fd,
						      .pending = STRBUF_INIT };
	}
	if (d)
		closedir(d);
}

static void file_read(struct agent_files *af, struct agent_file *f, size_t max_bytes,
		      agent_line_fn fn, void *arg)
{
	char buf[65536];
	size_t total = 0;
	while (f->fd >= 0 && (!max_bytes || total < max_bytes)) {
		ssize_t got = read(f->fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		total += (size_t)got;
		const char *p = buf, *end = buf + got;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t part = (size_t)((nl ? nl : end) - p);
			if (!f->skipping) {
				if (f->pending.len + part > af->line_max) {
					f->skipping = 1;
					f->bad_lines++;
					strbuf_reset(&f->pending);
				} else {
					strbuf_add(&f->pending, p, part);
				}
			}
			if (!nl)
				break;
			if (!f->skipping && fn(arg, f, f->pending.buf, f->pending.len))
				f->bad_lines++;
			f->skipping = 0;
			strbuf_reset(&f->pending);
			p = nl + 1;
		}
	}
}

void agent_files_poll(struct agent_files *af, size_t max_bytes, agent_line_fn fn, void *arg)
{
	files_scan(af);
	for (size_t i = 0; i < af->n; i++)
		file_read(af, &af->f[i], max_bytes, fn, arg);
}

void agent_files_release(struct agent_files *af, void (*user_free)(void *))
{
	for (size_t i = 0; i < af->n; i++) {
		if (af->f[i].fd >= 0)
			close(af->f[i].fd);
		strbuf_release(&af->f[i].pending);
		if (user_free)
			user_free(af->f[i].user);
	}
	free(af->f);
	af->f = NULL;
	af->n = af->alloc = 0;
}
