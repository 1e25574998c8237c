/* cpu probe: perf_event sampling of every thread of the target at --rate Hz,
 * with native call stacks (frame pointers, or DWARF unwinding of a copied user
 * stack), symbolized into the shared frames/stack_nodes/samples tables.
 *
 * Events are per task and per CPU with inherit=1 (the kernel will not map an
 * inherited event opened with cpu -1), and every event of a CPU writes into
 * that CPU's one ring (SET_OUTPUT). Threads and children created later inherit
 * them, so the spawned leader, opened before it execs, covers the whole tree.
 * A process found later that no sampled process forked gets events of its
 * own, one per existing thread. Records are handled in time order across the
 * rings; stacks are kept raw (module, offset) and symbolized at stop.
 *
 * The rings, their pump and their reading in time order are the run's perf
 * layer (perf_layer.h): this probe registers its sampling set, the handlers
 * of its records and the stacks there. Another set registered with the layer
 * (offcpu's switch events) is opened for every task this probe follows, its
 * switch-outs get their stacks from these (perf_stacks), and its weighted
 * samples are stored as "offcpu" samples through the same symbolizer.
 *
 * When the sampling event is cycles, it leads a group with instructions and
 * cache-misses, and each sample reads the group (PERF_SAMPLE_READ): the
 * counts since the same thread's previous sample on that CPU are charged to
 * the sampled stack, giving per-function IPC and misses (table
 * sample_counters). Linux before 6.12 refuses PERF_SAMPLE_READ on inherited
 * events; sampling then goes on without the group. SONDE_COUNTERS_EVENTS=
 * software reads task-clock and page-faults the same way (for tests).
 *
 * This file runs the probe: its start and stop, the worker thread and the
 * processes queued for it. cpu_events.c chooses and opens the events,
 * cpu_records.c reads the rings, cpu_stacks.c symbolizes and writes the
 * stacks; cpu_probe.h is what they share. */
#define LOG_DOMAIN "cpu"
#include "cpu_probe.h"
#include "perf_events.h"
#include "../record/recorder.h"
#include "../record/stacks.h"
#include "../symbols/fpcheck.h"
#include "../symbols/symbolize.h"
#include "../symbols/unwind.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- the probe ---- */

/* The bitmap of the target's pids, one bit per pid up to pid_max. */
static void pid_bits_make(struct cpu_state *cs)
{
	char buf[32];
	long max = 0;
	if (file_read_small("/proc/sys/kernel/pid_max", buf, sizeof(buf)) > 0)
		max = strtol(buf, NULL, 10);
	if (max <= 0 || max > (1L << 22))
		max = 1L << 22; /* the kernel's limit */
	cs->pid_bits_max = (size_t)max;
	cs->pid_bits = xcalloc((size_t)max / 8 + 1, 1);
}

static int resolve_dwarf(const struct probe_config *cfg, struct strbuf *how)
{
	if (cfg->call_graph == PROBE_CALL_GRAPH_FP)
		return 0;
	if (cfg->call_graph == PROBE_CALL_GRAPH_DWARF)
		return 1;
	char prog[4096];
	int found = 0;
	if (cfg->argv && cfg->argv[0]) {
		found = !fpcheck_resolve_program(cfg->argv[0], prog, sizeof(prog));
	} else if (cfg->attach_pid > 0) { /* the attached process's executable */
		char link[64];
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)cfg->attach_pid);
		ssize_t n = readlink(link, prog, sizeof(prog) - 1);
		if (n > 0) {
			prog[n] = '\0';
			found = 1;
		}
	}
	if (!found) {
		strbuf_addstr(how, "auto: program not found, frame pointers");
		return 0;
	}
	int fp = fpcheck_elf(prog);
	strbuf_addf(how, "auto: %s %s frame pointers", prog,
		    fp > 0 ? "keeps" : fp == 0 ? "omits" : "unreadable, assuming");
	return fp == 0;
}

/* Records the rate the samples are taken at: rate, or for a timer event the
 * one its period makes (cpu_rate_hz, rounded; cpu_period_ns exact), saying
 * so when that is not rate (perf_choose_timer_period_ns tells why). */
static void record_rate(struct recorder *rec, const struct perf_event_attr *a, int rate)
{
	if (a->freq || !a->sample_period) {
		record_meta_int(rec, "cpu_rate_hz", rate);
		return;
	}
	int64_t used = (int64_t)(1e9 / (double)a->sample_period + 0.5);
	record_meta_int(rec, "cpu_rate_hz", used);
	record_meta_int(rec, "cpu_period_ns", (int64_t)a->sample_period);
	if (used == rate)
		return;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "native stacks are sampled at %lld Hz, not %d: a timer at %d Hz keeps "
			 "step with the kernel's scheduler tick, and on a CPU shared with other "
			 "busy programs its samples would skew which functions they land in",
		    (long long)used, rate, rate);
	record_note(rec, 0, "cpu", "info", sb.buf);
	strbuf_release(&sb);
}

static int cpu_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct perf_event_attr a;
	const char *name;
	int kernel;
	int rate = perf_choose_rate(ctx->cfg->rate_hz > 0 ? ctx->cfg->rate_hz : 99);
	return perf_choose_sampling(&a, ctx->cfg->event, rate, 0, 0, &name, &kernel, why) ? -1 : 0;
}

static int cpu_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct cpu_state *cs = xcalloc(1, sizeof(*cs));
	p->state = cs;
	const struct probe_config *cfg = ctx->cfg;
	if (!ctx->perf) {
		strbuf_addstr(why, "no perf_event layer in this run");
		return -1;
	}
	cs->perf = ctx->perf;
	cs->no_subprocesses = cfg->no_subprocesses;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&cs->lock, NULL);
	pthread_mutex_init(&cs->qlock, NULL);
	cs->locks_made = 1;
	int asked = cfg->rate_hz > 0 ? cfg->rate_hz : 99, rate = perf_choose_rate(asked);
	struct strbuf how = STRBUF_INIT;
	if (rate != asked) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "--rate %d is above kernel.perf_event_max_sample_rate; sampling at "
				 "%d Hz (sysctl kernel.perf_event_max_sample_rate=%d to allow it)",
			    asked, rate, asked);
		record_note(ctx->rec, 0, "cpu", "warning", sb.buf);
		log_warn("%s", sb.buf);
		strbuf_release(&sb);
	}
	/* Late-found processes take one event per thread and CPU: allow many files.
	 * The target was forked already and keeps its own limit. */
	struct rlimit nofile;
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	cs->dwarf = resolve_dwarf(cfg, &how);
	int stack_bytes = cfg->stack_dump_bytes > 0 ? cfg->stack_dump_bytes : CPU_DEFAULT_STACK_BYTES;
	stack_bytes = (stack_bytes + 7) & ~7;
	if (perf_choose_sampling(&cs->attr, cfg->event, rate, cs->dwarf, stack_bytes,
				 &cs->event_name, &cs->kernel, why)) {
		strbuf_release(&how);
		return -1;
	}
	struct strbuf pwhy = STRBUF_INIT;
	cs->percpu = cpu_choose_percpu(cs, &pwhy);
	struct strbuf gwhy = STRBUF_INIT;
	if (cpu_choose_group(cs, cs->event_name, &gwhy))
		record_note(ctx->rec, 0, "cpu", "info", gwhy.buf);
	strbuf_release(&gwhy);
	if (cs->percpu)
		pid_bits_make(cs);
	cpu_layer_join(cs);
	int err = cs->percpu ? cpu_open_percpu(cs) : 0;
	if (err) {
		strbuf_addf(why, "cannot open the per-CPU sampling events: %s", strerror(err));
		strbuf_release(&pwhy);
		strbuf_release(&how);
		return -1;
	}
	cs->sw = recorder_stacks(ctx->rec);
	if (!cs->sw) {
		strbuf_addstr(why, "cannot create the stack tables in the recording");
		strbuf_release(&pwhy);
		strbuf_release(&how);
		return -1;
	}
	cs->sym = symbolizer_new();
	cs->start_ns = ctx->start_ns;
	record_meta(ctx->rec, "cpu_sampling", cs->percpu ? "per-cpu" : "per-task");
	/* CLOCK_MONOTONIC of t = 0, to line samples up with outside clocks. */
	record_meta_int(ctx->rec, "cpu_clock_origin_ns", ctx->start_ns);
	if (pwhy.len)
		record_note(ctx->rec, 0, "cpu", "info", pwhy.buf);
	strbuf_release(&pwhy);
	record_meta(ctx->rec, "cpu_event", cs->event_name);
	record_rate(ctx->rec, &cs->attr, rate);
	record_meta(ctx->rec, "cpu_call_graph", cs->dwarf ? "dwarf" : "fp");
	if (how.len)
		record_meta(ctx->rec, "cpu_call_graph_reason", how.buf);
	if (cs->dwarf)
		record_meta_int(ctx->rec, "cpu_stack_dump_bytes", stack_bytes);
	record_meta_int(ctx->rec, "cpu_kernel_frames", cs->kernel);
	if (cs->ngroup) {
		struct strbuf names = STRBUF_INIT;
		for (size_t k = 1; k < cs->ngroup; k++)
			strbuf_addf(&names, "%s%s", k > 1 ? "," : "", cs->group_names[k]);
		record_meta(ctx->rec, "cpu_sample_counters", names.buf);
		strbuf_release(&names);
	}
	if (!cs->kernel)
		record_note(ctx->rec, 0, "cpu", "info",
			    "kernel frames are not sampled: kernel.perf_event_paranoid is above 1 "
			    "and sonde is not root (sysctl kernel.perf_event_paranoid=1 to see them)");
	log_info("sampling %s at %d Hz, %s stacks%s%s", cs->event_name, rate,
		 cs->dwarf ? "dwarf" : "frame-pointer", how.len ? " - " : "", how.buf);
	strbuf_release(&how);
	p->next_poll_ns = clock_mono_ns() + (cs->dwarf ? CPU_POLL_DWARF_NS : CPU_POLL_NS);
	perf_layer_pump_start(cs->perf);
	return 0;
}

static void queue_handle(struct cpu_state *cs);

/* One round of the worker: returns when the next is due. */
static int64_t work_round(struct cpu_state *cs)
{
	perf_layer_drain(cs->perf, CPU_DRAIN_BUDGET_NS);
	/* Samples reach the recording (committed once a second) as they come, so a
	 * sonde killed outright leaves them behind. New stacks are symbolized
	 * within a budget: loading a library's DWARF (libc's compressed debug info
	 * takes a good part of a second) is never cut short, but the rings are
	 * read again before the next one. */
	int64_t now = clock_mono_ns();
	if (cs->npending > CPU_MAX_PENDING) {
		cpu_flush_pending(cs, -1);
	} else if (now >= cs->next_flush_ns) {
		cpu_flush_pending(cs, CPU_FLUSH_BUDGET_NS);
		cs->next_flush_ns = now + CPU_FLUSH_PERIOD_NS;
	}
	/* Symbolizing may take a while: the next round counts from its end. */
	return clock_mono_ns() + (cs->dwarf ? CPU_POLL_DWARF_NS : CPU_POLL_NS);
}

static void *worker_main(void *arg)
{
	struct cpu_state *cs = arg;
	pthread_mutex_lock(&cs->lock);
	for (;;) {
		queue_handle(cs);
		int64_t next = work_round(cs);
		pthread_mutex_lock(&cs->qlock);
		int queued = cs->nqueue > 0, stop = cs->worker_stop;
		pthread_mutex_unlock(&cs->qlock);
		if (stop)
			break;
		if (queued)
			continue;
		/* A wake-up between here and the wait is missed: the round
		 * after it is at most a poll period late. */
		struct timespec ts = { (time_t)(next / NS_PER_S), (long)(next % NS_PER_S) };
		pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

/* The first poll starts the worker: every probe has started by then (the
 * offcpu probe adds its switch rings in its start). The session loop does
 * not poll this probe again. Without a thread, the rounds run here. */
static void cpu_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	(void)ctx;
	(void)now_ns;
	struct cpu_state *cs = p->state;
	if (!cs->worker_running && !cs->worker_stop &&
	    !pthread_create(&cs->worker, NULL, worker_main, cs)) {
		cs->worker_running = 1;
		p->next_poll_ns = INT64_MAX;
		return;
	}
	pthread_mutex_lock(&cs->lock);
	queue_handle(cs);
	p->next_poll_ns = work_round(cs);
	pthread_mutex_unlock(&cs->lock);
}

static void worker_join(struct cpu_state *cs)
{
	if (!cs->worker_running) {
		cs->worker_stop = 1;
		return;
	}
	pthread_mutex_lock(&cs->qlock);
	cs->worker_stop = 1;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->qlock);
	pthread_join(cs->worker, NULL);
	cs->worker_running = 0;
}

static void process_exiting(struct cpu_state *cs, const struct cpu_queued *q)
{
	if (q->jit_map)
		symbolizer_jit_parse(cs->sym, q->pid, q->jit_map, q->jit_len);
	perf_layer_drain(cs->perf, -1);
}

/* What the session loop queued, handled in order (with lock held, or after
 * the worker stopped). */
static void queue_handle(struct cpu_state *cs)
{
	pthread_mutex_lock(&cs->qlock);
	struct cpu_queued *q = cs->queue;
	size_t n = cs->nqueue;
	cs->queue = NULL;
	cs->nqueue = cs->allocqueue = 0;
	pthread_mutex_unlock(&cs->qlock);
	for (size_t i = 0; i < n; i++) {
		if (q[i].exiting)
			process_exiting(cs, &q[i]);
		else
			cpu_process_add(cs, q[i].pid);
		free(q[i].jit_map);
	}
	free(q);
}

static void queue_push(struct cpu_state *cs, pid_t pid, int exiting)
{
	struct cpu_queued q = { pid, exiting, NULL, 0 };
	struct strbuf map = STRBUF_INIT;
	/* The perf map is read now, while /proc/PID (its root, its owner) is there. */
	if (exiting && !symbolizer_jit_read(pid, &map) && map.len) {
		q.jit_len = map.len;
		q.jit_map = strbuf_detach(&map);
	}
	strbuf_release(&map);
	pthread_mutex_lock(&cs->qlock);
	if (cs->nqueue == cs->allocqueue) {
		cs->allocqueue = cs->allocqueue ? 2 * cs->allocqueue : 64;
		cs->queue = xrealloc(cs->queue, cs->allocqueue * sizeof(*cs->queue));
	}
	cs->queue[cs->nqueue++] = q;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->qlock);
}

/* The first process (the command before its exec, or the attached one) is
 * added at once: its exec must find it covered and gated. Later ones are
 * queued: the worker may be busy loading a library's DWARF for a while. */
static void cpu_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	(void)ctx;
	struct cpu_state *cs = p->state;
	if (cs->worker_running && cs->first_process_seen) {
		queue_push(cs, pid, 0);
		return;
	}
	pthread_mutex_lock(&cs->lock);
	queue_handle(cs);
	cpu_process_add(cs, pid);
	pthread_mutex_unlock(&cs->lock);
}

static void cpu_process_exiting(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	(void)ctx;
	struct cpu_state *cs = p->state;
	queue_push(cs, pid, 1);
	if (!cs->worker_running)
		queue_handle(cs);
}

static const char sample_counters_schema[] =
	"CREATE TABLE IF NOT EXISTS sample_counters(node INTEGER, event TEXT, value INTEGER,"
	" samples INTEGER);";

static const char process_events_schema[] =
	"CREATE TABLE IF NOT EXISTS process_events(t_ns INTEGER, pid INTEGER, ppid INTEGER,"
	" event TEXT);";

/* The target's forks and exits as the kernel timed them. */
static void write_process_events(struct cpu_state *cs, struct recorder *rec)
{
	sqlite3_stmt *q = NULL;
	if (recorder_schema(rec, process_events_schema) || !recorder_db(rec) ||
	    sqlite3_prepare_v2(recorder_db(rec), "INSERT INTO process_events VALUES(?,?,?,?)", -1,
			       &q, NULL) != SQLITE_OK) {
		log_warn("cannot write the process_events table");
		return;
	}
	for (size_t i = 0; i < cs->nprocess_events; i++) {
		const struct cpu_process_event *e = &cs->process_events[i];
		sqlite3_bind_int64(q, 1, e->t_ns);
		sqlite3_bind_int(q, 2, e->pid);
		sqlite3_bind_int(q, 3, e->ppid);
		sqlite3_bind_text(q, 4, e->exited ? "exit" : "fork", -1, SQLITE_STATIC);
		recorder_step(rec, q);
	}
	sqlite3_finalize(q);
}

/* The counts charged to each symbolized stack, one row per stack and event. */
static void write_sample_counters(struct cpu_state *cs, struct recorder *rec)
{
	sqlite3_stmt *q = NULL;
	if (!cs->ngroup)
		return;
	if (recorder_schema(rec, sample_counters_schema) || !recorder_db(rec) ||
	    sqlite3_prepare_v2(recorder_db(rec), "INSERT INTO sample_counters VALUES(?,?,?,?)", -1,
			       &q, NULL) != SQLITE_OK) {
		log_warn("cannot write the sample_counters table");
		return;
	}
	for (size_t s = 0; s < cs->nstacks && s < cs->alloccounts; s++) {
		const struct stack_counts *sc = &cs->counts[s];
		if (!sc->samples || cs->stacks[s].node < 0)
			continue;
		for (size_t k = 0; k < cs->ngroup; k++) {
			sqlite3_bind_int64(q, 1, cs->stacks[s].node);
			sqlite3_bind_text(q, 2, cs->group_names[k], -1, SQLITE_STATIC);
			sqlite3_bind_int64(q, 3, (int64_t)sc->v[k]);
			sqlite3_bind_int64(q, 4, (int64_t)sc->samples);
			recorder_step(rec, q);
		}
	}
	sqlite3_finalize(q);
	record_meta_int(rec, "cpu_sample_counters_unmatched", (int64_t)cs->group_unread);
}

/* A thread that ran and was never sampled still has its name recorded: the
 * counters probe reports every thread. */
static void name_unsampled(void *sw, pid_t pid, pid_t tid, const char *name)
{
	stack_thread_name(sw, pid, tid, name);
}

static void cpu_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct cpu_state *cs = p->state;
	worker_join(cs);
	queue_handle(cs);
	perf_layer_pump_stop(cs->perf);
	perf_layer_disable(cs->perf);
	perf_layer_drain(cs->perf, -1);
	/* The layer's other users queue what is still open (threads still
	 * waiting at the end: attach, -d). */
	perf_layer_records_end(cs->perf, clock_mono_ns() - ctx->start_ns);
	int64_t sym_start = clock_mono_ns();
	cpu_flush_pending(cs, -1);
	int64_t sym_ns = clock_mono_ns() - sym_start;
	thread_names_each_unused(&cs->names, name_unsampled, cs->sw);
	struct recorder *rec = ctx->rec;
	write_sample_counters(cs, rec);
	write_process_events(cs, rec);
	record_meta_int(rec, "cpu_symbolize_ns", sym_ns);
	record_meta_int(rec, "cpu_distinct_stacks", (int64_t)cs->nstacks);
	record_meta_int(rec, "cpu_samples", (int64_t)cs->samples);
	if (cs->percpu)
		record_meta_int(rec, "cpu_other_processes_samples",
				(int64_t)(cs->foreign_samples + cs->pump_foreign));
	record_meta_int(rec, "cpu_lost_records", (int64_t)cs->lost);
	record_meta_int(rec, "cpu_throttle_events", (int64_t)cs->throttled);
	record_meta_int(rec, "cpu_processes_not_sampled", (int64_t)cs->not_opened);
	record_meta_int(rec, "cpu_malformed_records", (int64_t)cs->malformed);
	if (cs->dwarf)
		record_meta_int(rec, "cpu_dwarf_unwound", (int64_t)cs->unwound_dwarf);
	perf_layer_done(cs->perf, rec);
	int64_t t = clock_mono_ns() - ctx->start_ns;
	struct strbuf sb = STRBUF_INIT;
	if (cs->lost) {
		strbuf_addf(&sb, "%llu cpu samples were lost (ring buffer full); the profile "
				 "undercounts busy moments, lower --rate",
			    (unsigned long long)cs->lost);
		record_note(rec, t, "cpu", "warning", sb.buf);
		strbuf_reset(&sb);
	}
	if (cs->throttled) {
		strbuf_addf(&sb, "the kernel throttled cpu sampling %llu times (sampling took too "
				 "long; see kernel.perf_cpu_time_max_percent); lower --rate",
			    (unsigned long long)cs->throttled);
		record_note(rec, t, "cpu", "warning", sb.buf);
		strbuf_reset(&sb);
	}
	if (cs->not_opened) {
		strbuf_addf(&sb, "%llu processes of the target could not be sampled",
			    (unsigned long long)cs->not_opened);
		record_note(rec, t, "cpu", "warning", sb.buf);
	}
	strbuf_release(&sb);
	log_info("%llu samples, %llu lost, %llu throttled; %zu distinct stacks symbolized in %.3f s",
		 (unsigned long long)cs->samples, (unsigned long long)cs->lost,
		 (unsigned long long)cs->throttled, cs->nstacks, ns_to_s(sym_ns));
}

static void cpu_free(struct probe *p)
{
	struct cpu_state *cs = p->state;
	if (!cs)
		return;
	worker_join(cs);
	perf_layer_reset(cs->perf); /* the pump's filter and the handlers are this state's */
	if (cs->locks_made) {
		pthread_mutex_destroy(&cs->lock);
		pthread_mutex_destroy(&cs->qlock);
		pthread_cond_destroy(&cs->wake);
	}
	free(cs->queue);
	free(cs->pid_bits);
	for (size_t i = 0; i < cs->nprocs; i++) {
		maps_release(&cs->procs[i].maps);
		unwinder_free(cs->procs[i].uw);
	}
	free(cs->procs);
	hashmap_release(&cs->proc_ids);
	hashmap_release(&cs->frame_cache);
	hashmap_release(&cs->stack_cache);
	free(cs->stacks);
	free(cs->raw);
	free(cs->pending);
	free(cs->process_events);
	thread_names_release(&cs->names);
	hashmap_release(&cs->jit_read);
	hashmap_release(&cs->group_ids);
	hashmap_release(&cs->group_last);
	free(cs->prev);
	free(cs->counts);
	free(cs->frame_pool);
	symbolizer_free(cs->sym);
	free(cs);
	p->state = NULL;
}

static const char *const probe_cpu_provides[] = { "perf.samples", NULL };

static int cpu_rate_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	long hz;
	if (parse_long_range(arg, 1, 20000, &hz)) {
		strbuf_addf(err, "--rate '%s' is not a whole number of hertz from 1 to 20000", arg);
		return -1;
	}
	cfg->rate_hz = (int)hz;
	cfg->rate_set = 1;
	return 0;
}

static int cpu_call_graph_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	long bytes = 0;
	if (!strcmp(arg, "fp")) {
		cfg->call_graph = PROBE_CALL_GRAPH_FP;
	} else if (!strcmp(arg, "auto")) {
		cfg->call_graph = PROBE_CALL_GRAPH_AUTO;
	} else if (!strncmp(arg, "dwarf", 5) && (arg[5] == '\0' || arg[5] == ',') &&
		   /* the kernel wants a multiple of 8 below 64 KiB */
		   (arg[5] == '\0' || !parse_long_range(arg + 6, 64, 65528, &bytes))) {
		cfg->call_graph = PROBE_CALL_GRAPH_DWARF;
		if (arg[5] == ',')
			cfg->stack_dump_bytes = (int)(bytes & ~7L);
	} else {
		strbuf_addf(err,
			    "--call-graph '%s' is not fp, dwarf, dwarf,BYTES (64 to 65528) or auto",
			    arg);
		return -1;
	}
	return 0;
}

static int cpu_event_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	if (perf_event_check(arg, err))
		return -1;
	cfg->event = arg;
	return 0;
}

static const struct probe_option cpu_options[] = {
	{ .name = "rate", .short_name = 'r', .arg = PROBE_ARG_REQUIRED, .arg_name = "HZ",
	  .help = "stack sampling rate, 1 to 20000 (default 99).\n"
		  "Native stacks are sampled off the kernel's\n"
		  "tick: 1000 Hz samples them at 996 Hz", .parse = cpu_rate_parse },
	{ .name = "call-graph", .arg = PROBE_ARG_REQUIRED, .arg_name = "MODE",
	  .help = "how native stacks are unwound: fp (frame\n"
		  "pointers), dwarf (copies 16 KiB of stack per\n"
		  "sample; works without frame pointers), or auto\n"
		  "(default: dwarf when the program omits frame\n"
		  "pointers). dwarf,BYTES sets the copy size",
	  .parse = cpu_call_graph_parse },
	{ .name = "event", .arg = PROBE_ARG_REQUIRED, .arg_name = "EVENT",
	  .help = "sample on EVENT instead of time, so hotspots show\n"
		  "where it happens: cache-misses, branch-misses,\n"
		  "page-faults, ... (perf's names; default cycles,\n"
		  "else cpu-clock)",
	  .parse = cpu_event_parse },
	{ .name = NULL },
};

static const char *const cpu_writes[] = {
	"samples:cpu",
	"process_events",
	"sample_counters",
	NULL,
};

const struct probe_ops probe_cpu = {
	.name = "cpu",
	.writes = cpu_writes,
	.provides = probe_cpu_provides,
	.summary = "on-CPU sampling with native call stacks (perf_event)",
	.options = cpu_options,
	.enabled_by_default = 1,
	.available = cpu_available,
	.start = cpu_start,
	.process_added = cpu_process_added,
	.process_exiting = cpu_process_exiting,
	.poll = cpu_poll,
	.stop = cpu_stop,
	.free = cpu_free,
};
