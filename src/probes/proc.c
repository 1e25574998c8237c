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
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

static const char proc_schema[] =
	"CREATE TABLE IF NOT EXISTS proc_samples(t_ns INTEGER, pid INTEGER,"
	" user_ns INTEGER, sys_ns INTEGER, rss_bytes INTEGER, hwm_bytes INTEGER,"
	" threads INTEGER, minflt INTEGER, majflt INTEGER, vcsw INTEGER, ivcsw INTEGER,"
	" runq_wait_ns INTEGER, rchar INTEGER, wchar INTEGER, read_bytes INTEGER,"
	" write_bytes INTEGER, state TEXT, syscr INTEGER, syscw INTEGER);"
	"CREATE INDEX IF NOT EXISTS proc_samples_pid ON proc_samples(pid, t_ns);";

/* Threads read per process per tick: bounds the cost on huge thread pools. */
#define PROC_MAX_TASKS 512
/* A process whose CPU clock did not move since its last reading did not run:
 * no fault, context switch, I/O, new thread or exit, so its row is written
 * again from that reading instead of read (two dozen system calls on a
 * sleeping service's /proc files each tick). What moves without the process
 * running, run-queue wait (a runnable thread waiting for a CPU) and RSS
 * reclaimed by the kernel, shows at the next whole reading, at least one per
 * PROC_STILL_MAX_NS. */
#define PROC_STILL_MAX_NS NS_PER_S
/* Processes whose files stay open between ticks (one pread a file instead
 * of open, check, read and close), and the threads of each whose files do. */
#define PROC_OPEN_PROCS 32
#define PROC_OPEN_TASKS 16

/* A file of /proc kept open: fd -1 when not (yet). A process's files fail
 * with ESRCH once it is reaped, so a reused pid never reads the old one's. */
struct kept_task {
	pid_t tid;
	int status_fd, sched_fd;
	int listed; /* in the last listing of the process's threads */
};

struct task_sums {
	int64_t vcsw, ivcsw, runq_wait_ns;
	int have_ctx, have_sched;
};

/* One reading of a process: what a proc_samples row holds. */
struct proc_reading {
	struct procfs_stat st;
	struct procfs_status status;
	struct procfs_io io;
	int have_io;
	struct task_sums ts;
};

struct kept_proc {
	pid_t pid; /* 0: a free slot */
	int stat_fd, status_fd, io_fd;
	DIR *task;
	struct kept_task tasks[PROC_OPEN_TASKS];
	size_t ntasks;
	struct proc_reading last; /* the last whole reading, */
	int64_t last_ns;	  /* when (0: none yet), */
	int64_t cpu_ns;		  /* and the process's CPU clock before it */
};

struct proc_state {
	sqlite3_stmt *insert;
	uint64_t samples;
	int64_t scan_rss_bytes; /* the RSS of a poll's readings together (the live view's) */
	struct kept_proc kept[PROC_OPEN_PROCS];
};

static void fd_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void kept_release(struct kept_proc *k)
{
	fd_close(&k->stat_fd);
	fd_close(&k->status_fd);
	fd_close(&k->io_fd);
	if (k->task)
		closedir(k->task);
	k->task = NULL;
	for (size_t i = 0; i < k->ntasks; i++) {
		fd_close(&k->tasks[i].status_fd);
		fd_close(&k->tasks[i].sched_fd);
	}
	k->ntasks = 0;
	k->pid = 0;
}

/* The kept files of pid (a free slot taken for it), or NULL when all are taken. */
static struct kept_proc *kept_get(struct proc_state *ps, pid_t pid)
{
	struct kept_proc *free_slot = NULL;
	for (size_t i = 0; i < PROC_OPEN_PROCS; i++) {
		if (ps->kept[i].pid == pid)
			return &ps->kept[i];
		if (!ps->kept[i].pid && !free_slot)
			free_slot = &ps->kept[i];
	}
	if (free_slot) {
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->pid = pid;
		free_slot->stat_fd = free_slot->status_fd = free_slot->io_fd = -1;
	}
	return free_slot;
}

/* /proc/PID[/task/TID]/name into buf (NUL-terminated) through *fd, opened
 * on first use and kept (fd NULL: opened and closed now). 0, or a negative
 * errno (the file, or the process, is gone). */
static int kept_read(int *fd, pid_t pid, pid_t tid, const char *name, char *buf, size_t cap)
{
	int local = -1;
	if (!fd)
		fd = &local;
	if (*fd < 0) {
		char path[96];
		if (tid)
			snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
		else
			snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0)
			return -errno;
	}
	ssize_t n = pread(*fd, buf, cap - 1, 0);
	int rc = n < 0 ? -errno : n == 0 ? -ESRCH : 0;
	if (rc || fd == &local)
		fd_close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return rc;
}

/* The kept files of tid in k (a slot taken for it when there is room). */
static struct kept_task *kept_task_get(struct kept_proc *k, pid_t tid)
{
	if (!k)
		return NULL;
	for (size_t i = 0; i < k->ntasks; i++)
		if (k->tasks[i].tid == tid)
			return &k->tasks[i];
	if (k->ntasks == PROC_OPEN_TASKS)
		return NULL;
	struct kept_task *t = &k->tasks[k->ntasks++];
	*t = (struct kept_task){ .tid = tid, .status_fd = -1, .sched_fd = -1 };
	return t;
}

/* Closes the files of threads the last listing did not show (exited). */
static void kept_tasks_prune(struct kept_proc *k)
{
	size_t keep = 0;
	for (size_t i = 0; i < k->ntasks; i++) {
		if (k->tasks[i].listed) {
			k->tasks[i].listed = 0;
			k->tasks[keep++] = k->tasks[i];
			continue;
		}
		fd_close(&k->tasks[i].status_fd);
		fd_close(&k->tasks[i].sched_fd);
	}
	k->ntasks = keep;
}

static void sum_tasks(struct kept_proc *k, pid_t pid, struct task_sums *s)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	memset(s, 0, sizeof(*s));
	DIR *d = k ? k->task : NULL;
	if (d)
		rewinddir(d);
	else if (!(d = opendir(path)))
		return;
	if (k)
		k->task = d;
	struct dirent *de;
	int seen = 0;
	while ((de = readdir(d)) && seen < PROC_MAX_TASKS) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid_t tid = (pid_t)atoi(de->d_name);
		seen++;
		struct kept_task *kt = kept_task_get(k, tid);
		if (kt)
			kt->listed = 1;
		char buf[4096];
		struct procfs_status st;
		if (!kept_read(kt ? &kt->status_fd : NULL, pid, tid, "status", buf, sizeof(buf)) &&
		    !procfs_parse_status(buf, &st) && st.vcsw >= 0) {
			s->vcsw += st.vcsw;
			s->ivcsw += st.ivcsw;
			s->have_ctx = 1;
		}
		struct procfs_schedstat ss;
		if (!kept_read(kt ? &kt->sched_fd : NULL, pid, tid, "schedstat", buf, sizeof(buf)) &&
		    !procfs_parse_schedstat(buf, &ss)) {
			s->runq_wait_ns += (int64_t)ss.runq_wait_ns;
			s->have_sched = 1;
		}
	}
	if (!k)
		closedir(d);
	else if (seen < PROC_MAX_TASKS)
		kept_tasks_prune(k);
}

static void bind_opt(sqlite3_stmt *st, int i, int have, int64_t v)
{
	if (have && v >= 0)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

/* The process's CPU time (its CPU clock, which anyone may read), -1 when
 * it cannot be read. */
static int64_t process_cpu_ns(pid_t pid)
{
	struct timespec t;
	clockid_t clock = (clockid_t)((~(unsigned)pid << 3) | 2); /* CPUCLOCK_SCHED */
	if (clock_gettime(clock, &t))
		return -1;
	return (int64_t)t.tv_sec * NS_PER_S + t.tv_nsec;
}

/* Reads the process's files into r: 0, or -1 when it is gone. */
static int proc_read(struct kept_proc *k, pid_t pid, struct proc_reading *r)
{
	char buf[4096];
	if (kept_read(k ? &k->stat_fd : NULL, pid, 0, "stat", buf, sizeof(buf)) ||
	    procfs_parse_stat(buf, &r->st))
		return -1;
	r->status = (struct procfs_status){ -1, -1, -1, -1 };
	if (!kept_read(k ? &k->status_fd : NULL, pid, 0, "status", buf, sizeof(buf)))
		procfs_parse_status(buf, &r->status);
	r->have_io = !kept_read(k ? &k->io_fd : NULL, pid, 0, "io", buf, sizeof(buf)) &&
		     !procfs_parse_io(buf, &r->io);
	sum_tasks(k, pid, &r->ts);
	return 0;
}

/* Writes a proc_samples row for pid: read now, or (whole 0, a process that
 * did not run since its last reading, PROC_STILL_MAX_NS ago at most) that
 * reading again. */
static void proc_sample(struct proc_state *ps, struct probe_ctx *ctx, pid_t pid, int64_t now_ns,
			int whole)
{
	struct kept_proc *k = kept_get(ps, pid);
	int64_t cpu_ns = k ? process_cpu_ns(pid) : -1;
	struct proc_reading fresh, *r = &fresh;
	if (!whole && k && k->last_ns && now_ns - k->last_ns < PROC_STILL_MAX_NS && cpu_ns >= 0 &&
	    cpu_ns == k->cpu_ns) {
		r = &k->last;
	} else if (proc_read(k, pid, &fresh)) {
		if (k)
			kept_release(k); /* gone between the scan and now */
		return;
	} else if (k) {
		k->last = fresh;
		k->last_ns = now_ns;
		k->cpu_ns = cpu_ns;
	}
	const struct procfs_stat *st = &r->st;
	const struct task_sums *ts = &r->ts;
	int have_io = r->have_io;
	double ns_per_tick = 1e9 / (double)procfs_ticks_per_s();
	int zombie = st->state == 'Z' || st->state == 'X';
	sqlite3_stmt *q = ps->insert;
	sqlite3_bind_int64(q, 1, now_ns - ctx->start_ns);
	sqlite3_bind_int(q, 2, pid);
	sqlite3_bind_int64(q, 3, (int64_t)((double)st->utime_ticks * ns_per_tick));
	sqlite3_bind_int64(q, 4, (int64_t)((double)st->stime_ticks * ns_per_tick));
	bind_opt(q, 5, !zombie, st->rss_pages * procfs_page_bytes());
	if (!zombie)
		ps->scan_rss_bytes += st->rss_pages * procfs_page_bytes();
	bind_opt(q, 6, 1, r->status.vm_hwm_bytes);
	sqlite3_bind_int64(q, 7, st->num_threads);
	sqlite3_bind_int64(q, 8, (int64_t)st->minflt);
	sqlite3_bind_int64(q, 9, (int64_t)st->majflt);
	bind_opt(q, 10, ts->have_ctx, ts->vcsw);
	bind_opt(q, 11, ts->have_ctx, ts->ivcsw);
	bind_opt(q, 12, ts->have_sched, ts->runq_wait_ns);
	bind_opt(q, 13, have_io, have_io ? r->io.rchar : -1);
	bind_opt(q, 14, have_io, have_io ? r->io.wchar : -1);
	bind_opt(q, 15, have_io, have_io ? r->io.read_bytes : -1);
	bind_opt(q, 16, have_io, have_io ? r->io.write_bytes : -1);
	char state[2] = { st->state, '\0' };
	sqlite3_bind_text(q, 17, state, 1, SQLITE_STATIC); /* stepped at once, as in recorder.c */
	bind_opt(q, 18, have_io && r->io.syscr >= 0, have_io ? r->io.syscr : -1);
	bind_opt(q, 19, have_io && r->io.syscw >= 0, have_io ? r->io.syscw : -1);
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
			       "INSERT INTO proc_samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
	/* The readings are stamped when the poll starts, not when the session's
	 * loop did (other probes' polls may have run since, and a reading of a
	 * new process with a later stamp been taken in between: under load a
	 * process's readings then went back in time). */
	int64_t started = clock_mono_ns();
	if (started > now_ns)
		now_ns = started;
	/* The files of processes no longer live are closed (their slots freed). */
	for (size_t i = 0; i < PROC_OPEN_PROCS; i++) {
		const struct proc_entry *e = ps->kept[i].pid ? proctree_find(ctx->tree, ps->kept[i].pid)
							     : NULL;
		if (ps->kept[i].pid && (!e || e->gone_ns >= 0))
			kept_release(&ps->kept[i]);
	}
	ps->scan_rss_bytes = 0;
	for (size_t i = 0; i < ctx->tree->n; i++)
		if (ctx->tree->v[i].gone_ns < 0)
			proc_sample(ps, ctx, ctx->tree->v[i].pid, now_ns, 0);
	if (ps->scan_rss_bytes > 0) /* the last reading stays once all have exited */
		recorder_live_rss_set(ctx->rec, ps->scan_rss_bytes);
	p->next_poll_ns = now_ns + ctx->cfg->interval_ns;
}

/* 1 when pid still runs sonde's own image: the launched command, held at
 * the gate before its exec (its memory is sonde's, not the command's). */
static int runs_own_image(pid_t pid)
{
	char path[64];
	struct stat self, other;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return !stat("/proc/self/exe", &self) && !stat(path, &other) &&
	       self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

static void proc_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	/* A first reading as soon as a process is seen: short-lived children
	 * count. Not of the command before its exec: its first poll reads it. */
	struct proc_state *ps = p->state;
	if (!runs_own_image(pid))
		proc_sample(ps, ctx, pid, clock_mono_ns(), 1);
}

static void proc_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	proc_sample(p->state, ctx, pid, clock_mono_ns(), 1);
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
	for (size_t i = 0; i < PROC_OPEN_PROCS; i++)
		if (ps->kept[i].pid)
			kept_release(&ps->kept[i]);
	free(ps);
	p->state = NULL;
}

static int proc_interval_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	int64_t ns;
	if (parse_duration_ns(arg, &ns) || ns < NS_PER_MS) {
		strbuf_addf(err, "--interval '%s' is not a duration of at least 1ms", arg);
		return -1;
	}
	cfg->interval_ns = ns;
	return 0;
}

static const struct probe_option proc_options[] = {
	{ .name = "interval", .arg = PROBE_ARG_REQUIRED, .arg_name = "SECS",
	  .help = "period of the /proc readings: RSS timeline, CPU\n"
		  "and context switches (default 100ms)",
	  .parse = proc_interval_parse },
	{ .name = NULL },
};

static const char *const proc_writes[] = { "proc_samples", NULL };

const struct probe_ops probe_proc = {
	.name = "proc",
	.writes = proc_writes,
	.summary = "CPU time, RSS, page faults, context switches and I/O per process, from /proc",
	.options = proc_options,
	.enabled_by_default = 1,
	.available = proc_available,
	.start = proc_start,
	.process_added = proc_process_added,
	.process_exiting = proc_process_exiting,
	.poll = proc_poll,
	.stop = proc_stop,
	.free = proc_free,
};
