/* counters probe: hardware counters (cycles, instructions, cache references
 * and misses, branches and branch misses) for the whole target, counted by
 * the kernel with perf_event_open in counting mode.
 *
 * One set of counters per process that has no counted ancestor (the launched
 * target, in practice), with inherit=1 so every thread and child it creates
 * is counted too. (A process attached to while running would need one set per
 * existing thread: inherit only covers threads created after the open.)
 * Events are opened one by one, not as a group (the kernel
 * refuses group reads with inherit), so each carries time_enabled and
 * time_running: when the PMU multiplexes, analyses scale by enabled/running.
 * Table counters(pid, tid, event, value, time_enabled_ns, time_running_ns)
 * holds the raw values read at stop (tid = pid: the whole process). */
#define LOG_DOMAIN "counters"
#include "probe.h"
#include "../record/recorder.h"
#include "../target/proctree.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char counters_schema[] =
	"CREATE TABLE IF NOT EXISTS counters(pid INTEGER, tid INTEGER, event TEXT,"
	" value INTEGER, time_enabled_ns INTEGER, time_running_ns INTEGER);";

static const struct {
	const char *name;
	uint64_t config;
} counter_events[] = {
	{ "cycles", PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_COUNT_HW_BRANCH_MISSES },
};
#define NEVENTS (sizeof(counter_events) / sizeof(counter_events[0]))
#define COUNTED_MAX 64 /* roots counted separately; descendants are inherited */

struct counter_reading {
	uint64_t value, enabled_ns, running_ns;
	int valid;
};

struct counted {
	pid_t pid;
	int fd[NEVENTS];
	struct counter_reading last[NEVENTS];
};

struct counters_state {
	struct counted v[COUNTED_MAX];
	size_t n;
	int exclude_kernel; /* set when the kernel refuses to count kernel mode */
	sqlite3_stmt *insert;
};

static int perf_open(pid_t pid, uint64_t config, int exclude_kernel, int inherit)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = config;
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	attr.inherit = (unsigned)inherit;
	attr.exclude_kernel = (unsigned)exclude_kernel;
	attr.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static int paranoid_level(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int level = 2;
	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = 2;
		fclose(f);
	}
	return level;
}

/* One line a user can act on for a refused cycles counter. */
static void explain(int err, struct strbuf *why)
{
	switch (err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		strbuf_addf(why,
			    "this machine exposes no hardware counters to perf_event_open "
			    "(cycles: %s); common in virtual machines without a virtual PMU",
			    strerror(err));
		break;
	case EACCES:
	case EPERM:
		strbuf_addf(why,
			    "perf_event_open refused (kernel.perf_event_paranoid = %d): run "
			    "as root or `sudo sysctl kernel.perf_event_paranoid=1`",
			    paranoid_level());
		break;
	case ENOSYS:
		strbuf_addstr(why, "this kernel has no perf_event_open (CONFIG_PERF_EVENTS off)");
		break;
	default: strbuf_addf(why, "perf_event_open(cycles) failed: %s", strerror(err));
	}
}

/* Probes whether cycles can be counted here, and whether kernel mode with it. */
static int probe_cycles(int *exclude_kernel, struct strbuf *why)
{
	int fd = perf_open(0, PERF_COUNT_HW_CPU_CYCLES, 0, 0);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		fd = perf_open(0, PERF_COUNT_HW_CPU_CYCLES, 1, 0);
		if (fd >= 0)
			*exclude_kernel = 1;
	}
	if (fd < 0) {
		explain(errno, why);
		return -1;
	}
	close(fd);
	return 0;
}

static int counters_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	(void)ctx;
	int exclude_kernel = 0;
	return probe_cycles(&exclude_kernel, why);
}

static int counters_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct counters_state *cs = xcalloc(1, sizeof(*cs));
	p->state = cs;
	if (probe_cycles(&cs->exclude_kernel, why))
		return -1;
	if (recorder_schema(ctx->rec, counters_schema) || !recorder_db(ctx->rec) ||
	    sqlite3_prepare_v2(recorder_db(ctx->rec), "INSERT INTO counters VALUES(?,?,?,?,?,?)",
			       -1, &cs->insert, NULL) != SQLITE_OK) {
		strbuf_addstr(why, "cannot create the counters table");
		return -1;
	}
	return 0;
}

static struct counted *find_counted(struct counters_state *cs, pid_t pid)
{
	for (size_t i = 0; i < cs->n; i++)
		if (cs->v[i].pid == pid)
			return &cs->v[i];
	return NULL;
}

/* A descendant of a counted process is already counted (inherit). */
static int has_counted_ancestor(struct counters_state *cs, struct proctree *tree, pid_t pid)
{
	struct proc_entry *e = proctree_find(tree, pid);
	for (int hops = 0; e && hops < 256; hops++) {
		if (find_counted(cs, e->ppid))
			return 1;
		e = proctree_find(tree, e->ppid);
	}
	return 0;
}

static void counters_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	struct counters_state *cs = p->state;
	if (cs->n == COUNTED_MAX || find_counted(cs, pid) ||
	    has_counted_ancestor(cs, ctx->tree, pid))
		return;
	struct counted *c = &cs->v[cs->n];
	memset(c, 0, sizeof(*c));
	c->pid = pid;
	int opened = 0;
	for (size_t k = 0; k < NEVENTS; k++) {
		c->fd[k] = perf_open(pid, counter_events[k].config, cs->exclude_kernel, 1);
		if (c->fd[k] >= 0)
			opened++;
		else
			log_debug("%s for pid %d: %s", counter_events[k].name, (int)pid,
				  strerror(errno));
	}
	if (opened)
		cs->n++;
	else
		log_warn("no hardware counter could be opened for pid %d", (int)pid);
}

static void read_counters(struct counted *c)
{
	for (size_t k = 0; k < NEVENTS; k++) {
		uint64_t buf[3];
		if (c->fd[k] < 0 || read(c->fd[k], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			continue;
		c->last[k] = (struct counter_reading){ buf[0], buf[1], buf[2], 1 };
	}
}

/* The process is a zombie: its counters (and its reaped children's) are final. */
static void counters_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	(void)ctx;
	struct counted *c = find_counted(p->state, pid);
	if (c)
		read_counters(c);
}

static void counters_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct counters_state *cs = p->state;
	for (size_t i = 0; i < cs->n; i++) {
		struct counted *c = &cs->v[i];
		read_counters(c); /* children that outlived the process have ended since */
		for (size_t k = 0; k < NEVENTS; k++) {
			if (!c->last[k].valid)
				continue;
			sqlite3_stmt *q = cs->insert;
			sqlite3_bind_int(q, 1, c->pid);
			sqlite3_bind_int(q, 2, c->pid);
			sqlite3_bind_text(q, 3, counter_events[k].name, -1, SQLITE_STATIC);
			sqlite3_bind_int64(q, 4, (int64_t)c->last[k].value);
			sqlite3_bind_int64(q, 5, (int64_t)c->last[k].enabled_ns);
			sqlite3_bind_int64(q, 6, (int64_t)c->last[k].running_ns);
			recorder_step(ctx->rec, q);
		}
	}
}

static void counters_free(struct probe *p)
{
	struct counters_state *cs = p->state;
	if (!cs)
		return;
	for (size_t i = 0; i < cs->n; i++)
		for (size_t k = 0; k < NEVENTS; k++)
			if (cs->v[i].fd[k] >= 0)
				close(cs->v[i].fd[k]);
	sqlite3_finalize(cs->insert);
	free(cs);
	p->state = NULL;
}

const struct probe_ops probe_counters = {
	.quiet_when_unavailable = 1,
	.name = "counters",
	.summary = "hardware counters (cycles, instructions, cache and branch misses) for the "
		   "whole target, from perf_event_open",
	.enabled_by_default = 1,
	.available = counters_available,
	.start = counters_start,
	.process_added = counters_process_added,
	.process_exiting = counters_process_exiting,
	.stop = counters_stop,
	.free = counters_free,
};
