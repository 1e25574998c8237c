/* counters probe: hardware counters (cycles, instructions, cache references
 * and misses, branches and branch misses) per thread of the target, counted
 * by the kernel with perf_event_open in counting mode.
 *
 * One set of counters per root task: the launched process (before it execs),
 * or each thread of a process found later that no counted process created.
 * Events are inherited (inherit=1, cpu -1), so every thread and child a root
 * creates is counted from its first instruction, and with inherit_stat the
 * kernel writes each inherited task's own counts (PERF_RECORD_READ) into a
 * ring when that task exits. The ring is a dummy event's on the root, which
 * the counting events write into (SET_OUTPUT: the kernel maps no ring of an
 * inherited per-task event itself). At the end, a root's own counts are its
 * events' totals less what its descendants reported; a descendant still
 * running then stays in its root's row.
 *
 * Events are opened one by one, not as a group (the kernel refuses group
 * reads with inherit), so each carries time_enabled and time_running: when the
 * PMU multiplexes, analyses scale by enabled/running.
 * Table counters(pid, tid, event, value, time_enabled_ns, time_running_ns):
 * one row per thread and event (meta counters_per_thread = 1).
 *
 * The events are chosen with perf_choose_counting() and the exit reports
 * handed to this probe's handlers per record kind by the perf layer
 * (perf_layer_ring_read: these rings are per task, not the layer's per-CPU
 * sets, and read on the session's thread).
 *
 * SONDE_COUNTERS_EVENTS=software counts software events (task-clock,
 * context-switches, page-faults) through the same code instead: tests use it
 * where the machine has no PMU. */
#define LOG_DOMAIN "counters"
#include "probe.h"
#include "perf_choose.h"
#include "perf_events.h"
#include "perf_layer.h"
#include "perf_record.h"
#include "perf_ring.h"
#include "../record/recorder.h"
#include "../target/proctree.h"
#include "../util/clock.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char counters_schema[] =
	"CREATE TABLE IF NOT EXISTS counters(pid INTEGER, tid INTEGER, event TEXT,"
	" value INTEGER, time_enabled_ns INTEGER, time_running_ns INTEGER);";

struct counter_event {
	const char *name;
	uint32_t type;
	uint64_t config;
};

static const char *const hardware_events[] = {
	"cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses",
};

/* Stand-ins that every machine counts: the same per-thread path, testable in a VM. */
static const char *const software_events[] = { "task-clock", "context-switches",
					       "page-faults" };

#define COUNTERS_MAX_EVENTS 6
#define COUNTERS_MAX_ROOTS 4096 /* roots counted separately; descendants are inherited */
#define COUNTERS_RING_PAGES 32	/* 128 KiB: a few hundred thread exits per poll */
#define COUNTERS_MAX_RINGS 64	/* rings (locked memory) for that many counted tasks */
#define COUNTERS_POLL_NS (100 * NS_PER_MS)
#define COUNTERS_READ_FORMAT \
	(PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID)

struct counter_sum {
	uint64_t value, enabled_ns, running_ns;
};

/* A task whose events were opened by sonde (not inherited). */
struct counted_root {
	pid_t pid, tid;
	int fd[COUNTERS_MAX_EVENTS];
	struct counter_sum children[COUNTERS_MAX_EVENTS]; /* reported by descendants at exit */
	struct perf_ring ring; /* fd -1: descendants are not reported (they stay in this row) */
};

struct thread_count {
	pid_t pid, tid;
	struct counter_sum v[COUNTERS_MAX_EVENTS];
	unsigned char have[COUNTERS_MAX_EVENTS];
};

struct counters_state {
	struct counter_event events[COUNTERS_MAX_EVENTS];
	size_t nevents;
	int software; /* the stand-ins (perf_events_software) */
	struct counted_root *roots;
	size_t nroots, allocroots;
	struct hashmap ids; /* kernel event id -> root index * COUNTERS_MAX_EVENTS + event */
	struct thread_count *threads;
	size_t nthreads, allocthreads;
	struct hashmap thread_ids; /* pid << 32 | tid -> index in threads */
	uint64_t lost, malformed, no_ring, roots_dropped;
	size_t nrings;
	int exclude_kernel; /* set when the kernel refuses to count kernel mode */
	sqlite3_stmt *insert;
};

/* The events counted: hardware, unless perf_events_software(); returns how
 * many (names from perf_events.c's table). */
static size_t events_chosen(struct counter_event *ev)
{
	int sw = perf_events_software();
	const char *const *names = sw ? software_events : hardware_events;
	size_t n = sw ? sizeof(software_events) / sizeof(software_events[0])
		      : sizeof(hardware_events) / sizeof(hardware_events[0]);
	size_t k = 0;
	for (size_t i = 0; i < n && k < COUNTERS_MAX_EVENTS; i++) {
		ev[k].name = names[i];
		if (!perf_event_lookup(names[i], &ev[k].type, &ev[k].config))
			k++;
	}
	return k;
}

static int perf_open(pid_t pid, const struct counter_event *ev, int exclude_kernel, int inherit)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = ev->type;
	attr.config = ev->config;
	attr.read_format = COUNTERS_READ_FORMAT;
	attr.inherit = (unsigned)inherit;
	attr.inherit_stat = (unsigned)inherit;
	attr.exclude_kernel = (unsigned)exclude_kernel;
	attr.exclude_hv = 1;
	return perf_event_open_cloexec(&attr, pid, -1, -1);
}

static int counters_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	(void)ctx;
	struct counter_event ev[COUNTERS_MAX_EVENTS];
	int exclude_kernel = 0;
	if (!events_chosen(ev)) {
		strbuf_addstr(why, "no counter event is known");
		return -1;
	}
	return perf_choose_counting(ev[0].name, ev[0].type, ev[0].config, &exclude_kernel, why);
}

static int counters_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct counters_state *cs = xcalloc(1, sizeof(*cs));
	p->state = cs;
	cs->nevents = events_chosen(cs->events);
	cs->software = perf_events_software();
	if (!cs->nevents) {
		strbuf_addstr(why, "no counter event is known");
		return -1;
	}
	if (perf_choose_counting(cs->events[0].name, cs->events[0].type, cs->events[0].config,
				 &cs->exclude_kernel, why))
		return -1;
	if (recorder_schema(ctx->rec, counters_schema) || !recorder_db(ctx->rec) ||
	    sqlite3_prepare_v2(recorder_db(ctx->rec), "INSERT INTO counters VALUES(?,?,?,?,?,?)",
			       -1, &cs->insert, NULL) != SQLITE_OK) {
		strbuf_addstr(why, "cannot create the counters table");
		return -1;
	}
	record_meta(ctx->rec, "counters_events",
		    cs->software ? "software" : "hardware");
	p->next_poll_ns = clock_mono_ns() + COUNTERS_POLL_NS;
	return 0;
}

static int root_counted(const struct counters_state *cs, pid_t pid)
{
	for (size_t i = 0; i < cs->nroots; i++)
		if (cs->roots[i].pid == pid)
			return 1;
	return 0;
}

/* A descendant of a counted process is already counted (inherit). */
static int has_counted_ancestor(struct counters_state *cs, struct proctree *tree, pid_t pid)
{
	struct proc_entry *e = proctree_find(tree, pid);
	for (int hops = 0; e && hops < 256; hops++) {
		if (root_counted(cs, e->ppid))
			return 1;
		e = proctree_find(tree, e->ppid);
	}
	return 0;
}

static struct thread_count *thread_get(struct counters_state *cs, pid_t pid, pid_t tid)
{
	uint64_t key = ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
	int64_t *at = hashmap_get(&cs->thread_ids, &key, sizeof(key));
	if (at)
		return &cs->threads[*at];
	if (cs->nthreads == cs->allocthreads) {
		cs->allocthreads = cs->allocthreads ? 2 * cs->allocthreads : 64;
		cs->threads = xrealloc(cs->threads, cs->allocthreads * sizeof(*cs->threads));
	}
	struct thread_count *t = &cs->threads[cs->nthreads];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	hashmap_put(&cs->thread_ids, &key, sizeof(key), (int64_t)cs->nthreads++);
	return t;
}

static void sum_add(struct counter_sum *s, uint64_t value, uint64_t enabled, uint64_t running)
{
	s->value += value;
	s->enabled_ns += enabled;
	s->running_ns += running;
}

/* The ring that collects the reports of a root's descendants, or -1. */
static int open_ring(struct counters_state *cs, struct counted_root *r)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.exclude_kernel = (unsigned)cs->exclude_kernel;
	int fd = perf_event_open_cloexec(&attr, r->tid, -1, -1);
	if (fd < 0)
		return -errno;
	int rc = perf_ring_map(&r->ring, fd, COUNTERS_RING_PAGES, 4);
	if (rc)
		close(fd);
	return rc;
}

/* Opens tid's events (inherited by what it creates). 0, or -1 when none opened. */
static int open_root(struct counters_state *cs, pid_t pid, pid_t tid)
{
	if (cs->nroots == COUNTERS_MAX_ROOTS) {
		cs->roots_dropped++;
		return -1;
	}
	if (cs->nroots == cs->allocroots) {
		cs->allocroots = cs->allocroots ? 2 * cs->allocroots : 16;
		cs->roots = xrealloc(cs->roots, cs->allocroots * sizeof(*cs->roots));
	}
	struct counted_root *r = &cs->roots[cs->nroots];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->ring = (struct perf_ring)PERF_RING_INIT;
	/* The first tasks get rings: the launched process, or the first threads of
	 * a process found later (its main thread, which creates the others). */
	int rc = cs->nrings < COUNTERS_MAX_RINGS ? open_ring(cs, r) : -ENOSPC;
	if (rc)
		log_debug("no ring for tid %d: %s; its threads are counted together", (int)tid,
			  strerror(-rc));
	int opened = 0;
	for (size_t k = 0; k < COUNTERS_MAX_EVENTS; k++) {
		r->fd[k] = -1;
		if (k >= cs->nevents)
			continue;
		r->fd[k] = perf_open(tid, &cs->events[k], cs->exclude_kernel, 1);
		if (r->fd[k] < 0) {
			log_debug("%s for tid %d: %s", cs->events[k].name, (int)tid,
				  strerror(errno));
			continue;
		}
		opened++;
		uint64_t id;
		if (ioctl(r->fd[k], PERF_EVENT_IOC_ID, &id) == 0) {
			int64_t v = (int64_t)(cs->nroots * COUNTERS_MAX_EVENTS + k);
			hashmap_put(&cs->ids, &id, sizeof(id), v);
		}
		if (r->ring.fd >= 0 && ioctl(r->fd[k], PERF_EVENT_IOC_SET_OUTPUT, r->ring.fd)) {
			log_debug("SET_OUTPUT for tid %d: %s", (int)tid, strerror(errno));
			perf_ring_release(&r->ring); /* some reports would be missing: none */
		}
	}
	if (!opened) {
		perf_ring_release(&r->ring);
		return -1;
	}
	if (r->ring.fd < 0)
		cs->no_ring++;
	else
		cs->nrings++;
	cs->nroots++;
	return 0;
}

static void counters_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	struct counters_state *cs = p->state;
	if (root_counted(cs, pid) || has_counted_ancestor(cs, ctx->tree, pid))
		return;
	/* inherit covers the threads made from now on; existing ones need their own. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *de;
	int any = 0;
	while (d && (de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]) &&
		    !open_root(cs, pid, (pid_t)atoi(de->d_name)))
			any = 1;
	if (d)
		closedir(d);
	if (!any)
		log_warn("no counter could be opened for pid %d", (int)pid);
}

/* The root whose ring is being read, for its records' handlers. */
struct root_reading {
	struct counters_state *cs;
	size_t ri;
};

static void on_lost(void *arg, const uint8_t *rec, size_t size)
{
	struct root_reading *rd = arg;
	uint64_t lost;
	if (!perf_decode_lost(rec, size, &lost))
		rd->cs->lost += lost;
}

/* A descendant's exit report: its own counts of one event. */
static void on_read(void *arg, const uint8_t *rec, size_t size)
{
	struct root_reading *rd = arg;
	struct counters_state *cs = rd->cs;
	struct perf_read_record rr;
	int64_t *at;
	if (perf_decode_read(rec, size, COUNTERS_READ_FORMAT, &rr) ||
	    !(at = hashmap_get(&cs->ids, &rr.values.v[0].id, sizeof(uint64_t))) ||
	    (size_t)*at / COUNTERS_MAX_EVENTS != rd->ri) {
		cs->malformed++;
		return;
	}
	size_t k = (size_t)*at % COUNTERS_MAX_EVENTS;
	const struct perf_read *v = &rr.values;
	sum_add(&cs->roots[rd->ri].children[k], v->v[0].value, v->time_enabled, v->time_running);
	struct thread_count *t = thread_get(cs, (pid_t)rr.pid, (pid_t)rr.tid);
	sum_add(&t->v[k], v->v[0].value, v->time_enabled, v->time_running);
	t->have[k] = 1;
}

/* Takes the descendants' exit reports out of root ri's ring. */
static void drain_root(struct counters_state *cs, size_t ri)
{
	static const struct perf_layer_handler handlers[] = {
		{ PERF_RECORD_READ, on_read },
		{ PERF_RECORD_LOST, on_lost },
		{ PERF_RECORD_LOST_SAMPLES, on_lost },
	};
	struct root_reading rd = { cs, ri };
	if (cs->roots[ri].ring.fd >= 0)
		perf_layer_ring_read(&cs->roots[ri].ring, handlers,
				     sizeof(handlers) / sizeof(handlers[0]), &rd);
}

static void drain_all(struct counters_state *cs)
{
	for (size_t i = 0; i < cs->nroots; i++)
		drain_root(cs, i);
}

static void counters_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	(void)ctx;
	drain_all(p->state);
	p->next_poll_ns = now_ns + COUNTERS_POLL_NS;
}

/* The process is a zombie: its threads' reports are all in the rings. */
static void counters_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	drain_all(p->state);
}

static uint64_t less(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* A root's own counts: its events' totals (itself and every descendant,
 * exited or not) less what the descendants reported at their exit. */
static void root_own(struct counters_state *cs, struct counted_root *r)
{
	struct thread_count *t = thread_get(cs, r->pid, r->tid);
	for (size_t k = 0; k < cs->nevents; k++) {
		uint8_t buf[64];
		struct perf_read total;
		ssize_t n;
		if (r->fd[k] < 0 || (n = read(r->fd[k], buf, sizeof(buf))) <= 0 ||
		    perf_decode_read_values(buf, (size_t)n, COUNTERS_READ_FORMAT, &total))
			continue;
		const struct counter_sum *c = &r->children[k];
		sum_add(&t->v[k], less(total.v[0].value, c->value),
			less(total.time_enabled, c->enabled_ns),
			less(total.time_running, c->running_ns));
		t->have[k] = 1;
	}
}

static void counters_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct counters_state *cs = p->state;
	drain_all(cs);
	for (size_t i = 0; i < cs->nroots; i++)
		root_own(cs, &cs->roots[i]);
	for (size_t i = 0; i < cs->nthreads; i++) {
		const struct thread_count *t = &cs->threads[i];
		for (size_t k = 0; k < cs->nevents; k++) {
			if (!t->have[k])
				continue;
			sqlite3_stmt *q = cs->insert;
			sqlite3_bind_int(q, 1, t->pid);
			sqlite3_bind_int(q, 2, t->tid);
			sqlite3_bind_text(q, 3, cs->events[k].name, -1, SQLITE_STATIC);
			sqlite3_bind_int64(q, 4, (int64_t)t->v[k].value);
			sqlite3_bind_int64(q, 5, (int64_t)t->v[k].enabled_ns);
			sqlite3_bind_int64(q, 6, (int64_t)t->v[k].running_ns);
			recorder_step(ctx->rec, q);
		}
	}
	record_meta_int(ctx->rec, "counters_per_thread", 1);
	record_meta_int(ctx->rec, "counters_tasks_without_ring", (int64_t)cs->no_ring);
	record_meta_int(ctx->rec, "counters_reports_lost", (int64_t)cs->lost);
	int64_t t_ns = clock_mono_ns() - ctx->start_ns;
	struct strbuf sb = STRBUF_INIT;
	if (cs->lost) {
		strbuf_addf(&sb, "%llu per-thread counter reports were lost (ring full); those "
				 "threads are counted in the row of the thread that was counted first",
			    (unsigned long long)cs->lost);
		record_note(ctx->rec, t_ns, "counters", "warning", sb.buf);
		strbuf_reset(&sb);
	}
	if (cs->no_ring) {
		strbuf_addf(&sb, "%llu counted tasks have no ring for exit reports (more than %d, "
				 "or the kernel refused one): the threads each creates are counted "
				 "in its row, not one by one",
			    (unsigned long long)cs->no_ring, COUNTERS_MAX_RINGS);
		record_note(ctx->rec, t_ns, "counters", "info", sb.buf);
		strbuf_reset(&sb);
	}
	if (cs->roots_dropped) {
		strbuf_addf(&sb, "%llu tasks were not counted (more than %d counted separately)",
			    (unsigned long long)cs->roots_dropped, COUNTERS_MAX_ROOTS);
		record_note(ctx->rec, t_ns, "counters", "warning", sb.buf);
	}
	strbuf_release(&sb);
}

static void counters_free(struct probe *p)
{
	struct counters_state *cs = p->state;
	if (!cs)
		return;
	for (size_t i = 0; i < cs->nroots; i++) {
		for (size_t k = 0; k < COUNTERS_MAX_EVENTS; k++)
			if (cs->roots[i].fd[k] >= 0)
				close(cs->roots[i].fd[k]);
		perf_ring_release(&cs->roots[i].ring);
	}
	free(cs->roots);
	free(cs->threads);
	hashmap_release(&cs->ids);
	hashmap_release(&cs->thread_ids);
	sqlite3_finalize(cs->insert);
	free(cs);
	p->state = NULL;
}

static const char *const counters_writes[] = { "counters", NULL };

const struct probe_ops probe_counters = {
	.quiet_when_unavailable = 1,
	.name = "counters",
	.writes = counters_writes,
	.summary = "hardware counters (cycles, instructions, cache and branch misses) per thread "
		   "of the target, from perf_event_open",
	.enabled_by_default = 1,
	.available = counters_available,
	.start = counters_start,
	.process_added = counters_process_added,
	.process_exiting = counters_process_exiting,
	.poll = counters_poll,
	.stop = counters_stop,
	.free = counters_free,
};
