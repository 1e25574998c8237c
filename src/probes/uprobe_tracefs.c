/* uprobe_tracefs: uprobe events made and removed through tracefs. */
#include "uprobe_tracefs.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UT_ROOT "/sys/kernel/tracing"
#define UT_EVENTS UT_ROOT "/uprobe_events"
#define UT_LIST_MAX (4u << 20)

int uprobe_tracefs_available(struct strbuf *why)
{
	if (access(UT_EVENTS, W_OK)) {
		strbuf_addf(why, "%s cannot be written (%s)", UT_EVENTS, strerror(errno));
		return -1;
	}
	return 0;
}

void uprobe_tracefs_group(char *out, size_t cap) { snprintf(out, cap, "sonde_%d", (int)getpid()); }

/* Appends one command line to uprobe_events: 0, or -errno. */
static int ut_write(const char *cmd)
{
	int fd = open(UT_EVENTS, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(cmd);
	int rc = write(fd, cmd, n) == (ssize_t)n ? 0 : -errno;
	close(fd);
	return rc;
}

int uprobe_tracefs_add(const char *group, const char *name, const char *path, uint64_t off, int ret,
		       uint64_t *id, struct strbuf *why)
{
	if (strpbrk(path, " \t\n")) {
		strbuf_addf(why, "the path %s has a space, which uprobe_events cannot take", path);
		return -1;
	}
	struct strbuf sb = STRBUF_INIT;
	int rc = -1;
	strbuf_addf(&sb, "%c:%s/%s %s:0x%llx\n", ret ? 'r' : 'p', group, name, path,
		    (unsigned long long)off);
	int err = ut_write(sb.buf);
	if (err) {
		strbuf_addf(why, "writing '%.*s' to %s: %s", (int)sb.len - 1, sb.buf, UT_EVENTS,
			    strerror(-err));
		goto out;
	}
	strbuf_reset(&sb);
	strbuf_addf(&sb, UT_ROOT "/events/%s/%s/id", group, name);
	char buf[32];
	ssize_t n = file_read_small(sb.buf, buf, sizeof(buf));
	if (n <= 0) {
		strbuf_addf(why, "%s cannot be read", sb.buf);
		uprobe_tracefs_remove(group, name);
		goto out;
	}
	*id = strtoull(buf, NULL, 10);
	rc = 0;
out:
	strbuf_release(&sb);
	return rc;
}

void uprobe_tracefs_remove(const char *group, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "-:%s/%s\n", group, name);
	ut_write(sb.buf);
	strbuf_release(&sb);
}

void uprobe_tracefs_sweep(void)
{
	struct strbuf list = STRBUF_INIT;
	if (file_read_strbuf(UT_EVENTS, &list, UT_LIST_MAX) < 0)
		goto out;
	/* Lines read "p:sonde_123/f1 /path:0x..." */
	for (char *l = list.buf; l && *l;) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		int pid = 0;
		char name[64];
		if (sscanf(l, "%*c:sonde_%d/%63[^ ]", &pid, name) == 2 && pid > 0 && kill(pid, 0) &&
		    errno == ESRCH) {
			char group[32];
			snprintf(group, sizeof(group), "sonde_%d", pid);
			uprobe_tracefs_remove(group, name);
		}
		l = nl ? nl + 1 : NULL;
	}
out:
	strbuf_release(&list);
}
