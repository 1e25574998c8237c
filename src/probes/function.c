/* function probe: the native functions `--function` names, timed call by
 * call with a uprobe at the first instruction and a uretprobe at the return
 * (no change to the binary).
 *
 * Each target's two events are made in tracefs (uprobe_tracefs.h) and opened
 * as tracepoints, per CPU, on the launched process before its exec
 * (inherited by every thread and child; on an attached process, on each of
 * its threads); where tracefs cannot be written, through the kernel's uprobe
 * PMU, whose events are not inherited (a note says so). Every sample (id, ip,
 * pid/tid, time on CLOCK_MONOTONIC) goes into one ring per CPU. The poll
 * merges the rings by time, leaving the last FN_SETTLE_NS for the next poll
 * (a record of one CPU may land after a later one of another), and fn_calls
 * pairs entries and returns per thread. The entry events are also counters:
 * their sum at the end is the exact number of calls even where the rings
 * lost records. */
#define LOG_DOMAIN "function"
#include "probe.h"
#include "fn_calls.h"
#include "fn_table.h"
#include "fnspec.h"
#include "perf_events.h"
#include "perf_record.h"
#include "perf_ring.h"
#include "tracefs_mount.h"
#include "uprobe_tracefs.h"
#include "../record/recorder.h"
#include "../util/clock.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define FN_UPROBE_DIR "/sys/bus/event_source/devices/uprobe"
#define FN_POLL_NS (20 * NS_PER_MS)
#define FN_SETTLE_NS (50 * NS_PER_MS)
#define FN_RING_BYTES_ALL (64u << 20) /* all CPUs' rings together, at most */
#define FN_RING_PAGES_MAX 2048
#define FN_THREADS_OPENED_MAX 4096 /* threads of an attached process given events */

struct fn_target {
	int id;
	const char *spec;
	struct fnspec_native where;
	int64_t counted;   /* the entry counters' sum at the end; -1: unread */
	uint64_t tp_id[2]; /* tracefs: the entry's and the return's tracepoint ids */
	int tp_made[2];
};

struct fn_fd {
	int fd;
	uint32_t target, is_return;
	int ring_owned; /* the fd of a CPU's ring: closed by perf_ring_release */
};

struct fn_state {
	struct fn_target *targets;
	size_t ntargets;
	uint32_t pmu_type;
	int retprobe_bit;
	size_t ncpus, ring_pages;
	struct perf_ring *rings; /* ncpus: the first event of each CPU owns it */
	struct fn_fd *fds;	 /* every event, the rings' own included */
	size_t nfds, allocfds;
	struct hashmap ids;    /* perf sample id -> index in fds */
	int opened;	       /* the first process was given its events */
	struct fn_event *pend; /* read from the rings, not yet handled */
	size_t npend, allocpend;
	uint64_t seq, lost;
	struct fn_calls *calls;
	int tracefs;	/* events made in tracefs, inherited (else the uprobe PMU's) */
	char group[32]; /* their tracefs group */
	int mounted;	/* sonde mounted tracefs for them: unmounted once they are removed */
};

static int read_sys_int(const char *path, long *out)
{
	char buf[64];
	ssize_t n = file_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return -1;
	char *end;
	*out = strtol(buf, &end, 10);
	return end == buf ? -1 : 0;
}

/* The uprobe PMU's type and its retprobe bit ("config:0"). */
static int uprobe_pmu(uint32_t *type, int *bit, struct strbuf *why)
{
	long t;
	char fmt[64];
	if (read_sys_int(FN_UPROBE_DIR "/type", &t)) {
		strbuf_addstr(why, "this kernel has no uprobe PMU (" FN_UPROBE_DIR
				   "/type is missing: CONFIG_UPROBE_EVENTS off, or a kernel "
				   "older than 4.17)");
		return -1;
	}
	ssize_t n = file_read_small(FN_UPROBE_DIR "/format/retprobe", fmt, sizeof(fmt));
	if (n <= 0 || strncmp(fmt, "config:", 7)) {
		strbuf_addstr(why,
			      "this kernel's uprobe PMU has no retprobe format bit (" FN_UPROBE_DIR
			      "/format/retprobe), so returns cannot be timed");
		return -1;
	}
	*type = (uint32_t)t;
	*bit = atoi(fmt + 7);
	return 0;
}

static int fn_wanted(const struct probe_config *cfg)
{
	for (const char *const *s = cfg->functions; *s; s++)
		if (fnspec_kind(*s, cfg->argv) == FNSPEC_NATIVE)
			return 1;
	return 0;
}

/* 1 when sonde holds CAP_PERFMON or CAP_SYS_ADMIN, which the uprobe PMU
 * asks for whatever perf_event_paranoid says. */
static int perfmon_capable(void)
{
	char buf[4096];
	ssize_t n = file_read_small("/proc/self/status", buf, sizeof(buf));
	const char *cap = n > 0 ? strstr(buf, "CapEff:") : NULL;
	if (!cap)
		return 0;
	unsigned long long eff = strtoull(cap + 7, NULL, 16);
	return !!(eff & (1ULL << 38 | 1ULL << 21));
}

static int fn_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	uint32_t type;
	int bit;
	if (!fn_wanted(ctx->cfg)) {
		strbuf_addstr(why, "no native function named (--function)");
		return -1;
	}
	if (uprobe_pmu(&type, &bit, why))
		return -1;
	if (!perfmon_capable()) {
		strbuf_addstr(why, "uprobes need CAP_PERFMON or root whatever "
				   "kernel.perf_event_paranoid says: run sonde with sudo to time "
				   "--function calls");
		return -1;
	}
	return 0;
}

static void fd_add(struct fn_state *st, int fd, uint32_t target, uint32_t is_return, int ring_owned)
{
	if (st->nfds == st->allocfds) {
		st->allocfds = st->allocfds ? 2 * st->allocfds : 64;
		st->fds = xrealloc(st->fds, st->allocfds * sizeof(*st->fds));
	}
	uint64_t id;
	if (!ioctl(fd, PERF_EVENT_IOC_ID, &id))
		hashmap_put(&st->ids, &id, sizeof(id), (int64_t)st->nfds);
	st->fds[st->nfds++] = (struct fn_fd){fd, target, is_return, ring_owned};
}

/* Opens target t's entry (is_return 0) or return event for tid on cpu,
 * writing into that CPU's ring. 0, or -errno. */
static int open_one(struct fn_state *st, pid_t tid, int cpu, uint32_t t, uint32_t is_return,
		    int before_exec)
{
	struct perf_event_attr a;
	if (st->tracefs) {
		perf_event_attr_init(&a, PERF_TYPE_TRACEPOINT, st->targets[t].tp_id[is_return]);
	} else {
		perf_event_attr_init(&a, st->pmu_type, is_return ? 1ULL << st->retprobe_bit : 0);
		a.config1 = (uint64_t)(uintptr_t)st->targets[t].where.file;
		a.config2 = st->targets[t].where.file_offset;
	}
	a.sample_period = 1;
	a.sample_type =
	    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.inherit = 1;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.disabled = before_exec;
	a.enable_on_exec = before_exec;
	int fd = perf_event_open_cloexec(&a, tid, cpu, -1);
	if (fd < 0)
		return -errno;
	struct perf_ring *r = &st->rings[cpu];
	if (r->fd < 0) {
		int rc = perf_ring_map(r, fd, st->ring_pages, 8);
		if (rc) {
			close(fd);
			return rc;
		}
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
		int err = errno;
		close(fd);
		return -err;
	}
	fd_add(st, fd, t, is_return, r->fd == fd);
	return 0;
}

/* Every target's two events for tid on every CPU. The number opened. */
static size_t open_task(struct fn_state *st, pid_t tid, int before_exec, int *err)
{
	size_t n = 0;
	for (size_t c = 0; c < st->ncpus; c++)
		for (uint32_t t = 0; t < st->ntargets; t++)
			for (uint32_t ret = 0; ret < 2; ret++) {
				int rc = open_one(st, tid, (int)c, t, ret, before_exec);
				if (rc)
					*err = -rc; /* an offline CPU, or the thread is gone */
				else
					n++;
			}
	return n;
}

static void note(struct probe_ctx *ctx, const char *kind, const char *text)
{
	record_note(ctx->rec, clock_mono_ns() - ctx->start_ns, "function", kind, text);
}

/* Finds every native spec (for the command, or the attached process pid):
 * one fn_targets row for each that is not found. 0 when one was found, else
 * -1 with the first reason in why. */
static int targets_resolve(struct fn_state *st, struct probe_ctx *ctx, pid_t pid,
			   struct strbuf *why)
{
	size_t nspecs = 0;
	for (const char *const *s = ctx->cfg->functions; *s; s++)
		nspecs++;
	st->targets = xcalloc(nspecs ? nspecs : 1, sizeof(*st->targets));
	struct fn_calls_target *ct = xcalloc(nspecs ? nspecs : 1, sizeof(*ct));
	for (size_t i = 0; i < nspecs; i++) {
		const char *spec = ctx->cfg->functions[i];
		if (fnspec_kind(spec, ctx->cfg->argv) != FNSPEC_NATIVE)
			continue;
		struct fn_target *t = &st->targets[st->ntargets];
		struct strbuf w = STRBUF_INIT;
		t->id = (int)i + 1;
		t->spec = spec;
		t->counted = -1;
		if (fnspec_resolve(spec, ctx->cfg->argv, pid, &t->where, &w)) {
			struct fn_target_row row = {.id = t->id,
						    .spec = spec,
						    .kind = "native",
						    .status = "not_found",
						    .note = w.buf,
						    .calls = -1,
						    .calls_timed = -1,
						    .overhead_ns = -1};
			fn_table_target(ctx->rec, &row);
			note(ctx, "warning", w.buf);
			/* The first one is the session's "probe off" line when none is found. */
			if (why->len)
				log_warn("%s", w.buf);
			else
				strbuf_addstr(why, w.buf);
		} else {
			ct[st->ntargets] =
			    (struct fn_calls_target){t->id, t->where.file, t->where.vaddr};
			st->ntargets++;
		}
		strbuf_release(&w);
	}
	if (st->ntargets) {
		if (why->len)
			log_warn("%s", why->buf);
		strbuf_reset(why);
		st->calls = fn_calls_new(ctx->rec, ctx->start_ns, ct, st->ntargets);
		if (!st->calls)
			strbuf_addstr(why, "cannot prepare the fn_calls statements");
	}
	free(ct);
	return st->calls ? 0 : -1;
}

static void tracepoints_remove(struct fn_state *st)
{
	for (size_t i = 0; i < st->ntargets; i++)
		for (int ret = 0; ret < 2; ret++)
			if (st->targets[i].tp_made[ret]) {
				char name[32];
				snprintf(name, sizeof(name), "%c%d", ret ? 'r' : 'f',
					 st->targets[i].id);
				uprobe_tracefs_remove(st->group, name);
				st->targets[i].tp_made[ret] = 0;
			}
}

/* Each target's two events made in tracefs, so that threads and children
 * inherit them; where tracefs cannot, the uprobe PMU's (the first process
 * only), said in a note. */
static void tracepoints_make(struct fn_state *st, struct probe_ctx *ctx)
{
	struct strbuf why = STRBUF_INIT;
	if (uprobe_tracefs_available(&why)) {
		st->mounted = tracefs_mount_if_absent();
		strbuf_reset(&why);
	}
	uprobe_tracefs_sweep();
	uprobe_tracefs_group(st->group, sizeof(st->group));
	int ok = !uprobe_tracefs_available(&why);
	for (size_t i = 0; ok && i < st->ntargets; i++)
		for (int ret = 0; ok && ret < 2; ret++) {
			struct fn_target *t = &st->targets[i];
			char name[32];
			snprintf(name, sizeof(name), "%c%d", ret ? 'r' : 'f', t->id);
			ok = !uprobe_tracefs_add(st->group, name, t->where.file,
						 t->where.file_offset, ret, &t->tp_id[ret], &why);
			t->tp_made[ret] = ok;
		}
	st->tracefs = ok;
	if (ok) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb,
			    "uprobe events %s/f1, r1, ... (a uprobe and a uretprobe per "
			    "--function; the program's files are not changed), removed after "
			    "the run",
			    st->group);
		record_changelog(ctx->rec, "/sys/kernel/tracing/uprobe_events", "appended", sb.buf,
				 NULL);
		if (st->mounted)
			record_changelog(ctx->rec, "/sys/kernel/tracing", "mounted, then unmounted",
					 "tracefs, to make the uprobe events (it was not mounted)",
					 NULL);
		strbuf_release(&sb);
	} else {
		tracepoints_remove(st);
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb,
			    "uprobes through the uprobe PMU, which threads and child "
			    "processes do not inherit: only the first process's own thread is "
			    "timed (tracefs: %s)",
			    why.buf ? why.buf : "unusable");
		log_warn("%s", sb.buf);
		note(ctx, "warning", sb.buf);
		strbuf_release(&sb);
	}
	strbuf_release(&why);
}

static int fn_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct fn_state *st = xcalloc(1, sizeof(*st));
	p->state = st;
	if (uprobe_pmu(&st->pmu_type, &st->retprobe_bit, why))
		return -1;
	if (fn_table_open(ctx->rec)) {
		strbuf_addstr(why, "cannot create the fn_* tables");
		return -1;
	}
	/* An attached process's libraries are known once it is added. */
	if (ctx->cfg->argv && targets_resolve(st, ctx, 0, why))
		return -1;
	if (ctx->cfg->argv)
		tracepoints_make(st, ctx);
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	st->ncpus = ncpus > 0 ? (size_t)ncpus : 1;
	size_t pages = FN_RING_BYTES_ALL / (size_t)sysconf(_SC_PAGESIZE) / st->ncpus;
	for (st->ring_pages = 8; st->ring_pages * 2 <= pages && st->ring_pages < FN_RING_PAGES_MAX;)
		st->ring_pages *= 2;
	st->rings = xcalloc(st->ncpus, sizeof(*st->rings));
	for (size_t c = 0; c < st->ncpus; c++)
		st->rings[c] = (struct perf_ring)PERF_RING_INIT;
	p->next_poll_ns = ctx->start_ns + FN_POLL_NS;
	return 0;
}

/* The first process only: its events are inherited by every thread and
 * child it starts. An attached process's threads each need their own. */
static void fn_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	struct fn_state *st = p->state;
	if (st->opened)
		return;
	st->opened = 1;
	int err = 0;
	size_t n = 0, threads = 0;
	if (ctx->cfg->argv) {
		n = open_task(st, pid, 1, &err);
	} else {
		struct strbuf why = STRBUF_INIT;
		int bad = targets_resolve(st, ctx, pid, &why);
		strbuf_release(&why);
		if (bad)
			return;
		tracepoints_make(st, ctx);
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d)) && threads < FN_THREADS_OPENED_MAX)
			if (de->d_name[0] != '.') {
				n += open_task(st, (pid_t)atoi(de->d_name), 0, &err);
				threads++;
			}
		if (d)
			closedir(d);
	}
	if (!n) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addstr(&sb, "no uprobe event could be opened on the target: ");
		perf_event_explain_refusal(err ? err : ENODEV, NULL, "uprobe", &sb);
		log_warn("%s", sb.buf);
		note(ctx, "warning", sb.buf);
		strbuf_release(&sb);
	}
	log_debug("%zu uprobe events on %d (%zu threads)", n, (int)pid, threads);
}

/* One sample: IDENTIFIER, IP, TID, TIME. 0, or -1 when it is not ours. */
static int decode(struct fn_state *st, const uint8_t *rec, size_t size, struct fn_event *ev)
{
	if (size < sizeof(struct perf_event_header) + 32)
		return -1;
	const uint8_t *b = rec + sizeof(struct perf_event_header);
	uint64_t id = perf_u64(b);
	int64_t *at = hashmap_get(&st->ids, &id, sizeof(id));
	if (!at)
		return -1;
	uint64_t pidtid = perf_u64(b + 16);
	ev->ip = perf_u64(b + 8);
	ev->pid = (uint32_t)pidtid;
	ev->tid = (uint32_t)(pidtid >> 32);
	ev->t_ns = (int64_t)perf_u64(b + 24);
	ev->target = st->fds[*at].target;
	ev->is_return = st->fds[*at].is_return;
	ev->seq = st->seq++;
	return 0;
}

static void rings_take(struct fn_state *st)
{
	for (size_t c = 0; c < st->ncpus; c++) {
		struct perf_ring *r = &st->rings[c];
		if (r->fd < 0)
			continue;
		perf_ring_take(r);
		const uint8_t *rec;
		size_t size;
		while ((rec = perf_ring_peek(r, &size))) {
			uint32_t type;
			uint16_t misc;
			uint64_t lost;
			struct fn_event ev;
			if (!perf_record_header(rec, size, &type, &misc)) {
				if (type == PERF_RECORD_SAMPLE && !decode(st, rec, size, &ev)) {
					if (st->npend == st->allocpend) {
						st->allocpend =
						    st->allocpend ? 2 * st->allocpend : 4096;
						st->pend = xrealloc(
						    st->pend, st->allocpend * sizeof(*st->pend));
					}
					st->pend[st->npend++] = ev;
				} else if ((type == PERF_RECORD_LOST ||
					    type == PERF_RECORD_LOST_SAMPLES) &&
					   !perf_decode_lost(rec, size, &lost)) {
					st->lost += lost;
				}
			}
			perf_ring_next(r);
		}
	}
}

static int event_cmp(const void *a, const void *b)
{
	const struct fn_event *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hands fn_calls the events older than until_ns (INT64_MAX: all), in time order. */
static void events_handle(struct fn_state *st, int64_t until_ns)
{
	if (!st->npend)
		return;
	qsort(st->pend, st->npend, sizeof(*st->pend), event_cmp);
	size_t i = 0;
	for (; i < st->npend && st->pend[i].t_ns < until_ns; i++)
		fn_calls_event(st->calls, &st->pend[i]);
	memmove(st->pend, st->pend + i, (st->npend - i) * sizeof(*st->pend));
	st->npend -= i;
}

static void fn_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct fn_state *st = p->state;
	p->next_poll_ns = now_ns + FN_POLL_NS;
	if (!st->calls)
		return;
	rings_take(st);
	events_handle(st, now_ns - FN_SETTLE_NS);
}

static void fn_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	struct fn_state *st = p->state;
	if (st->calls)
		fn_calls_process_seen(st->calls, pid);
}

/* The entry events' counts, summed per target (children and threads that
 * exited are in their parent's). */
static void counts_read(struct fn_state *st)
{
	for (size_t i = 0; i < st->nfds; i++) {
		const struct fn_fd *f = &st->fds[i];
		uint64_t v;
		if (f->is_return || read(f->fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			continue;
		struct fn_target *t = &st->targets[f->target];
		t->counted = (t->counted < 0 ? 0 : t->counted) + (int64_t)v;
	}
}

static void target_write(struct fn_state *st, struct probe_ctx *ctx, size_t i)
{
	struct fn_target *t = &st->targets[i];
	struct fn_calls_counts c;
	fn_calls_counts(st->calls, i, &c);
	int64_t calls = t->counted > c.entries ? t->counted : c.entries;
	struct strbuf sb = STRBUF_INIT;
	if (calls > c.timed)
		strbuf_addf(&sb, "%lld of %lld calls timed", (long long)c.timed, (long long)calls);
	if (c.open_at_end)
		strbuf_addf(&sb,
			    "%s%lld still running at the end or left without returning "
			    "(longjmp, exit)",
			    sb.len ? "; " : "", (long long)c.open_at_end);
	if (c.unpaired_returns)
		strbuf_addf(&sb, "%s%lld returns of calls begun before sonde", sb.len ? "; " : "",
			    (long long)c.unpaired_returns);
	if (st->lost)
		strbuf_addf(&sb, "%sthe kernel lost %llu records (rings full)", sb.len ? "; " : "",
			    (unsigned long long)st->lost);
	if (c.rows_dropped)
		strbuf_addf(&sb, "%s%lld calls past the %lld-row cap counted only",
			    sb.len ? "; " : "", (long long)c.rows_dropped,
			    (long long)FN_TABLE_ROWS_MAX);
	struct fn_target_row row = {
	    .id = t->id,
	    .spec = t->spec,
	    .kind = "native",
	    .function = t->where.function,
	    .file = t->where.file,
	    .status = calls ? "measured" : "never_called",
	    .note = sb.len ? sb.buf : NULL,
	    .calls = calls,
	    .calls_timed = c.timed,
	    .overhead_ns = -1,
	};
	fn_table_target(ctx->rec, &row);
	strbuf_release(&sb);
}

static void fn_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct fn_state *st = p->state;
	if (!st->calls)
		return;
	for (size_t i = 0; i < st->nfds; i++)
		ioctl(st->fds[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	rings_take(st);
	events_handle(st, INT64_MAX);
	fn_calls_end(st->calls);
	counts_read(st);
	for (size_t i = 0; i < st->ntargets; i++)
		target_write(st, ctx, i);
}

static void fn_free(struct probe *p)
{
	struct fn_state *st = p->state;
	if (!st)
		return;
	for (size_t i = 0; i < st->nfds; i++)
		if (!st->fds[i].ring_owned)
			close(st->fds[i].fd);
	for (size_t c = 0; st->rings && c < st->ncpus; c++)
		perf_ring_release(&st->rings[c]);
	tracepoints_remove(st); /* once no event holds them */
	if (st->mounted)
		tracefs_unmount();
	free(st->rings);
	free(st->fds);
	free(st->pend);
	free(st->targets);
	hashmap_release(&st->ids);
	fn_calls_free(st->calls);
	free(st);
	p->state = NULL;
}

/* --function SPEC, repeatable: both function probes (this one and
 * pyfunction) take the specs of their kind from the list. */
static int fn_spec_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	if (!*arg || cfg->nfunctions == PROBE_FUNCTIONS_MAX) {
		if (*arg)
			strbuf_addf(err, "--function: at most %d functions", PROBE_FUNCTIONS_MAX);
		else
			strbuf_addstr(err, "--function needs a SPEC (FILE:symbol, or symbol)");
		return -1;
	}
	cfg->functions[cfg->nfunctions++] = arg;
	return 0;
}

static const struct probe_option fn_options[] = {
	{ .name = "function", .arg = PROBE_ARG_REQUIRED, .arg_name = "SPEC",
	  .help = "time every call of one function (repeatable): calls,\n"
		  "latency p50/p95/p99/max, callers. Native: FILE:symbol\n"
		  "(a path, a program on PATH or a library such as\n"
		  "libc.so.6) or a bare symbol of the program or its\n"
		  "libraries, through uprobes (needs root or\n"
		  "CAP_PERFMON; the binary is not changed). Python\n"
		  "(run only): path/module.py:Class.method or\n"
		  "package.module:func, wrapped by an agent when its\n"
		  "module is imported, with CPU time and a line table",
	  .parse = fn_spec_parse },
	{ .name = NULL },
};

static const char *const function_writes[] = {
	"fn_targets",
	"fn_calls",
	"fn_callers",
	"fn_lines",
	NULL,
};

const struct probe_ops probe_function = {
    .name = "function",
    .writes = function_writes,
    .summary = "native functions named by --function: calls, latency, callers (uprobes)",
    .options = fn_options,
    .enabled_by_default = 0,
    .wanted = fn_wanted,
    .available = fn_available,
    .start = fn_start,
    .process_added = fn_process_added,
    .process_exiting = fn_process_exiting,
    .poll = fn_poll,
    .stop = fn_stop,
    .free = fn_free,
};
