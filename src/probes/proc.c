/* proc probe: per-process CPU, memory, faults, context switches and I/O from
 * /proc, every --interval, for each process of the target tree.
 * Table proc_samples holds cumulative counters (deltas are the analyses' job)
 * and instantaneous values (rss_bytes, threads). */
#define LOG_DOMAIN "proc"
#include "probe.h"
#include "../record/recorder.h"
#include "../target/procfs.h"
#include "../target/proctree.h"
#include "../util/clock.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char proc_schema[] =
	"CREATE TABLE IF NOT EXISTS proc_samples(t_ns INTEGER, pid INTEGER,"
	" user_ns INTEGER, sys_ns INTEGER, rss_bytes INTEGER, hwm_bytes INTEGER,"
	" threads INTEGER, minflt INTEGER, majflt INTEGER, vcsw INTEGER, ivcsw INTEGER,"
	" runq_wait_ns INTEGER, rchar INTEGER, wchar INTEGER, read_bytes INTEGER,"
	" write_bytes INTEGER, state TEXT);"
	"CREATE INDEX IF NOT EXISTS proc_samples_pid ON proc_samples(pid, t_ns);";

/* Threads read per process per tick: bounds the cost on huge thread pools. */
#define PROC_MAX_TASKS 512

struct proc_state {
	sqlite3_stmt *insert;
	uint64_t samples;
};

struct task_sums {
	int64_t vcsw, ivcsw, runq_wait_ns;
	int have_ctx, have_sched;
};

static void sum_tasks(pid_t pid, struct task_sums *s)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	memset(s, 0, sizeof(*s));
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	int seen = 0;
	while ((de = readdir(d)) && seen < PROC_MAX_TASKS) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t tid = (pid_t)atoi(de->d_name);
		seen++;
		struct procfs_status st;
		if (!procfs_read_status(pid, tid, &st) && st.vcsw >= 0) {
			s->vcsw += st.vcsw;
			s->ivcsw += st.ivcsw;
			s->have_ctx = 1;
		}
		struct procfs_schedstat ss;
		if (!procfs_read_schedstat(pid, tid, &ss)) {
			s->runq_wait_ns += (int64_t)ss.runq_wait_ns;
			s->have_sched = 1;
		}
	}
	closedir(d);
}

static void bind_opt(sqlite3_stmt *st, int i, int have, int64_t v)
{
	if (have && v >= 0)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

static void proc_sample(struct proc_state *ps, struct probe_ctx *ctx, pid_t pid, int64_t now_ns)
{
	struct procfs_stat st;
	if (procfs_read_stat(pid, 0, &st))
		return; /* gone between the scan and now */
	struct procfs_status status = { -1, -1, -1, -1 };
	procfs_read_status(pid, 0, &status);
	struct procfs_io io;
	int have_io = !procfs_read_io(pid, &io);
	struct task_sums ts;
	sum_tasks(pid, &ts);
	double ns_per_tick = 1e9 / (double)procfs_ticks_per_s();
	int zombie = st.state == 'Z' || st.state == 'X';
	sqlite3_stmt *q = ps->insert;
	sqlite3_bind_int64(q, 1, now_ns - ctx->start_ns);
	sqlite3_bind_int(q, 2, pid);
	sqlite3_bind_int64(q, 3, (int64_t)((double)st.utime_ticks * ns_per_tick));
	sqlite3_bind_int64(q, 4, (int64_t)((double)st.stime_ticks * ns_per_tick));
	bind_opt(q, 5, !zombie, st.rss_pages * procfs_page_bytes());
	bind_opt(q, 6, 1, status.vm_hwm_bytes);
	sqlite3_bind_int64(q, 7, st.num_threads);
	sqlite3_bind_int64(q, 8, (int64_t)st.minflt);
	sqlite3_bind_int64(q, 9, (int64_t)st.majflt);
	bind_opt(q, 10, ts.have_ctx, ts.vcsw);
	bind_opt(q, 11, ts.have_ctx, ts.ivcsw);
	bind_opt(q, 12, ts.have_sched, ts.runq_wait_ns);
	bind_opt(q, 13, have_io, have_io ? io.rchar : -1);
	bind_opt(q, 14, have_io, have_io ? io.wchar : -1);
	bind_opt(q, 15, have_io, have_io ? io.read_bytes : -1);
	bind_opt(q, 16, have_io, have_io ? io.write_bytes : -1);
	char state[2] = { st.state, '\0' };
	sqlite3_bind_text(q, 17, state, 1, SQLITE_STATIC); /* stepped at once, as in recorder.c */
	recorder_step(ctx->rec, q);
	ps->samples++;
}

static int proc_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	(void)ctx;
	if (access("/proc/self/stat", R_OK)) {
		strbuf_addstr(why, "/proc is not mounted or not readable");
		return -1;
	}
	return 0;
}

static int proc_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct proc_state *ps = xcalloc(1, sizeof(*ps));
	p->state = ps;
	if (recorder_schema(ctx->rec, proc_schema) || !recorder_db(ctx->rec) ||
	    sqlite3_prepare_v2(recorder_db(ctx->rec),
			       "INSERT INTO proc_samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &ps->insert, NULL) != SQLITE_OK) {
		strbuf_addstr(why, "cannot create the proc_samples table");
		return -1;
	}
	p->next_poll_ns = ctx->start_ns;
	return 0;
}

static void proc_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct proc_state *ps = p->state;
	for (size_t i = 0; i < ctx->tree->n; i++)
		if (ctx->tree->v[i].gone_ns < 0)
			proc_sample(ps, ctx, ctx->tree->v[i].pid, now_ns);
	p->next_poll_ns = now_ns + ctx->cfg->interval_ns;
}

static void proc_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	/* A first reading as soon as a process is seen: short-lived children count. */
	struct proc_state *ps = p->state;
	proc_sample(ps, ctx, pid, clock_mono_ns());
}

static void proc_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	proc_sample(p->state, ctx, pid, clock_mono_ns());
}

static void proc_stop(struct probe *p, struct probe_ctx *ctx)
{
	proc_poll(p, ctx, clock_mono_ns());
}

static void proc_free(struct probe *p)
{
	struct proc_state *ps = p->state;
	if (!ps)
		return;
	sqlite3_finalize(ps->insert);
	free(ps);
	p->state = NULL;
}

const struct probe_ops probe_proc = {
	.name = "proc",
	.summary = "CPU time, RSS, page faults, context switches and I/O per process, from /proc",
	.enabled_by_default = 1,
	.available = proc_available,
	.start = proc_start,
	.process_added = proc_process_added,
	.process_exiting = proc_process_exiting,
	.poll = proc_poll,
	.stop = proc_stop,
	.free = proc_free,
};
