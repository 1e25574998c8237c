/* cpu_usage: CPU time, utilization, context switches, faults and I/O of the
 * whole target, with findings for a run that mostly waits, one whose threads
 * queue for a CPU, and one whose CPU time is mostly in the kernel. */
#include "analysis.h"
#include "hwcounters.h"
#include "offcpu.h"
#include "procstats.h"
#include "program.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CPU_THREAD_COUNTERS_MAX 256 /* rows of cpu.thread_counters */
/* Threads runnable on average (running or queued) beyond the core count by
 * this much: the target oversubscribes the machine by itself. */
#define CONTENTION_MARGIN 0.25
/* A thread on the CPU or queued for one this share of its life is busy. */
#define BUSY_THREAD_SHARE 0.9
/* Blocked (off the CPU, not queued for one) this share of the wall time: a finding. */
#define BLOCKED_SHARE 0.4

struct cpu_totals {
	double user_s, sys_s, runq_wait_s;
	int64_t vcsw, ivcsw, minflt, majflt;
	int exact; /* from the kernel's own accounting of reaped processes */
};

/* Totals: the kernel's rusage for every process sonde reaped (exact, children
 * included) plus the last readings of processes still alive at the end. */
static int cpu_totals_load(sqlite3 *db, const struct procstats *ps, struct cpu_totals *t)
{
	memset(t, 0, sizeof(*t));
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT user_s, sys_s, nvcsw, nivcsw, minflt, majflt FROM rusage"
			       " WHERE pid = 0",
			       -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			t->user_s = sqlite3_column_double(st, 0);
			t->sys_s = sqlite3_column_double(st, 1);
			t->vcsw = sqlite3_column_int64(st, 2);
			t->ivcsw = sqlite3_column_int64(st, 3);
			t->minflt = sqlite3_column_int64(st, 4);
			t->majflt = sqlite3_column_int64(st, 5);
			t->exact = 1;
		}
		sqlite3_finalize(st);
	}
	int any = t->exact;
	for (size_t i = 0; i < ps->n; i++) {
		const struct procstat *p = &ps->v[i];
		if (p->runq_wait_ns > 0)
			t->runq_wait_s += (double)p->runq_wait_ns / 1e9;
		if (t->exact && p->end_ns >= 0)
			continue; /* already in the kernel's totals */
		if (p->user_ns < 0)
			continue;
		any = 1;
		t->user_s += (double)p->user_ns / 1e9;
		t->sys_s += (double)(p->sys_ns > 0 ? p->sys_ns : 0) / 1e9;
		t->vcsw += p->vcsw > 0 ? p->vcsw : 0;
		t->ivcsw += p->ivcsw > 0 ? p->ivcsw : 0;
		t->minflt += p->minflt > 0 ? p->minflt : 0;
		t->majflt += p->majflt > 0 ? p->majflt : 0;
	}
	return any ? 0 : -1;
}

static int64_t cpu_ns_of(const struct procstat *p)
{
	return (p->user_ns > 0 ? p->user_ns : 0) + (p->sys_ns > 0 ? p->sys_ns : 0);
}

static int whole_machine(const struct analysis_ctx *ctx)
{
	int64_t v = 0;
	return !recording_meta_int(ctx->db, "whole_machine", &v) && v;
}

/* The whole machine's (run -a) busiest processes, "cc1 (pid 812, 4.1 s of
 * CPU), ..."; at most n of them. */
static void busiest_processes(const struct procstats *ps, size_t n, struct strbuf *sb)
{
	uint8_t *taken = xcalloc(ps->n + 1, 1);
	for (size_t k = 0; k < n; k++) {
		const struct procstat *best = NULL;
		size_t bi = 0;
		for (size_t i = 0; i < ps->n; i++) {
			int64_t c = cpu_ns_of(&ps->v[i]);
			if (!taken[i] && c > 0 && (!best || c > cpu_ns_of(best))) {
				best = &ps->v[i];
				bi = i;
			}
		}
		if (!best)
			break;
		taken[bi] = 1;
		strbuf_addf(sb, "%s%.*s (pid %lld, %.1f s of CPU)", k ? ", " : "",
			    (int)strcspn(best->command, " "), best->command, (long long)best->pid,
			    (double)cpu_ns_of(best) / 1e9);
	}
	free(taken);
}

/* The launched process, or the program behind its wrapper (program.h); the
 * machine for run -a. */
static const char *leader_location(const struct analysis_ctx *ctx, const struct procstats *ps,
				   struct strbuf *sb)
{
	if (whole_machine(ctx)) {
		strbuf_addstr(sb, "the machine; busiest: ");
		busiest_processes(ps, 1, sb);
		return sb->buf;
	}
	if (ctx->program && ctx->program->command) {
		const char *cmd = ctx->program->command;
		strbuf_add(sb, cmd, strcspn(cmd, " "));
		strbuf_addf(sb, " (pid %lld)", (long long)ctx->program->pid);
		return sb->buf;
	}
	const struct procstat *l = procstats_leader(ps);
	if (!l)
		return "the target";
	const char *cmd = l->command;
	size_t n = strcspn(cmd, " ");
	strbuf_add(sb, cmd, n);
	strbuf_addf(sb, " (pid %lld)", (long long)l->pid);
	return sb->buf;
}

/* 1 when the target is a Python program: Python samples were taken, or a
 * process's command starts with a python executable (a pyenv shim named
 * python3 included: the samples may miss a short run behind it). */
static int target_is_python(sqlite3 *db)
{
	int64_t n = 0;
	if (!recording_meta_int(db, "python_samples", &n) && n > 0)
		return 1;
	sqlite3_stmt *st;
	int py = 0;
	if (sqlite3_prepare_v2(db, "SELECT command FROM processes", -1, &st, NULL) != SQLITE_OK)
		return 0;
	while (!py && sqlite3_step(st) == SQLITE_ROW) {
		const char *cmd = (const char *)sqlite3_column_text(st, 0);
		if (!cmd)
			continue;
		size_t len = strcspn(cmd, " ");
		const char *base = cmd;
		for (size_t i = 0; i < len; i++)
			if (cmd[i] == '/')
				base = cmd + i + 1;
		py = !strncmp(base, "python", 6);
	}
	sqlite3_finalize(st);
	return py;
}

/* 1 when the wait is an asyncio event loop's idle wait for its tasks' I/O
 * (the selector under the loop's _run_once) and the asyncio agent recorded
 * that loop's tasks: the asyncio findings say what the tasks waited for. */
static int loop_wait_explained(sqlite3 *db, const struct offcpu_wait *w)
{
	if (!w->py_file)
		return 0;
	const char *base = strrchr(w->py_file, '/');
	base = base ? base + 1 : w->py_file;
	if (strcmp(base, "selectors.py") && !strstr(w->py_file, "/asyncio/"))
		return 0;
	sqlite3_stmt *st;
	int tasks = 0;
	if (recording_has_table(db, "aio_tasks") &&
	    sqlite3_prepare_v2(db, "SELECT 1 FROM aio_tasks LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
		tasks = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
	}
	return tasks;
}

/* The off-CPU finding: the whole target mostly waits, or its main thread
 * does; named by the heaviest waiting stack when the offcpu probe ran. */
static void offcpu_finding(struct analysis_ctx *ctx, const struct procstats *ps,
			   const struct cpu_totals *t, double wall_s)
{
	double cpu_s = t->user_s + t->sys_s;
	struct offcpu_wait w = { 0 };
	int have_wait = !offcpu_top_wait(ctx->db, &w);
	const struct procstat *leader = procstats_leader(ps);
	/* Blocked: off the CPU and not waiting for one (the run queue is another
	 * finding, or another process's doing). */
	double blocked_s = wall_s - cpu_s - t->runq_wait_s;
	/* Judged against the time the target did not spend queued: on a busy
	 * machine every wake-up waits for a CPU, and that stretches the wall time
	 * of a program that mostly sleeps without making it sleep less. */
	double own_s = wall_s - t->runq_wait_s;
	/* Queueing summed over threads that were runnable together (more than
	 * one at a time on average) is no figure of the wall time; one thread's
	 * is, however much of it there is (a program that blocks and wakes often
	 * on a busy machine waits for a CPU at every wake-up). */
	if (own_s <= 0 || cpu_s + t->runq_wait_s > 1.1 * wall_s)
		own_s = wall_s;
	int target_waits = wall_s >= 0.1 && blocked_s > BLOCKED_SHARE * own_s;
	/* Or the main thread waits (not for a child or thread) most of its life,
	 * and no other thread works meanwhile: a main thread that sleeps while
	 * workers compute is not what the run waits for. A wait's seconds are
	 * summed over threads; the main thread's part is at most its off time.
	 * The others' work counts their time queued for a CPU: on a busy machine
	 * workers that wanted the CPU and did not get it were still the work the
	 * main thread waited for. */
	double main_off_s = have_wait && w.seconds < w.thread_off_s ? w.seconds : w.thread_off_s;
	double others_busy_s = cpu_s + t->runq_wait_s - (w.thread_wall_s - w.thread_off_s);
	int main_waits = have_wait && !w.waits_for_others && leader && w.tid == leader->pid &&
			 w.thread_wall_s > 0 && w.thread_off_s > 0.5 * w.thread_wall_s &&
			 main_off_s >= 0.1 && main_off_s > 0.25 * wall_s &&
			 others_busy_s < 0.5 * main_off_s;
	if ((!target_waits && !main_waits) || (have_wait && loop_wait_explained(ctx->db, &w))) {
		if (have_wait)
			offcpu_wait_release(&w);
		return;
	}
	struct strbuf loc = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT, title = STRBUF_INIT,
		      diag = STRBUF_INIT;
	double off_s = target_waits ? blocked_s : main_off_s;
	if (have_wait) {
		offcpu_wait_location(&w, &loc);
		strbuf_addf(&ev, "%.3f s blocked (%.0f%% of %.3f s wall%s) ", w.seconds,
			    100.0 * w.seconds / wall_s, wall_s,
			    w.seconds > wall_s ? ", summed over threads" : "");
		if (w.count > 1)
			strbuf_addf(&ev, "in %lld waits (%.2f ms each on average) ", (long long)w.count,
				    1e3 * w.seconds / (double)w.count);
		strbuf_addstr(&ev, "in ");
		offcpu_wait_describe(&w, &ev);
		if (w.thread_wall_s > 0)
			strbuf_addf(&ev, "; thread %s (tid %lld) is off the CPU %.3f s of its %.3f s "
					 "(%.0f%%)",
				    w.thread_name ? w.thread_name : "?", (long long)w.tid,
				    w.thread_off_s, w.thread_wall_s,
				    100.0 * w.thread_off_s / w.thread_wall_s);
		strbuf_addstr(&ev, "; ");
		offcpu_wait_advice(&w, &next);
		strbuf_addstr(&diag, "Off-CPU dominated: the run spends its time waiting, not "
				     "computing; the main wait (leaving aside joins of threads and children) is ");
		offcpu_wait_describe(&w, &diag);
	} else {
		leader_location(ctx, ps, &loc);
		strbuf_addstr(&next, "Find the waits: `strace -f -w -c ");
		report_target_args(ctx->db, &next);
		strbuf_addstr(&next, "` ranks the system calls that block longest; then remove, "
				     "batch or overlap them (concurrent I/O, fewer round trips, no "
				     "fixed sleeps)");
		strbuf_addstr(&diag, "Off-CPU dominated: the run spends its time waiting (sleeps, "
				     "I/O, locks, network or child processes), not computing");
	}
	strbuf_addf(&ev,
		    "CPU time %.3f s (user %.3f s, system %.3f s) over %.3f s of wall time:"
		    " CPU/wall %.2f; %lld voluntary context switches (blocking waits)",
		    cpu_s, t->user_s, t->sys_s, wall_s, cpu_s / wall_s, (long long)t->vcsw);
	if (t->runq_wait_s >= 0.01)
		strbuf_addf(&ev, "; %.3f s more runnable, waiting for a CPU (not counted here)",
			    t->runq_wait_s);
	if (target_waits && own_s < 0.75 * wall_s)
		/* A busy machine stretched the run: the share that means something
		 * is of the time the target was not queued for a CPU. */
		strbuf_addf(&title,
			    "The target is blocked (off the CPU) for %.0f%% of the time it was not "
			    "waiting for a CPU",
			    100.0 * off_s / own_s);
	else if (target_waits)
		strbuf_addf(&title, "The target is blocked (off the CPU) for %.0f%% of its run",
			    100.0 * off_s / wall_s);
	else
		strbuf_addf(&title, "The main thread waits in %s for %.0f%% of the run",
			    offcpu_wait_function(&w), 100.0 * off_s / wall_s);
	struct finding f = {
		.id = target_waits ? "cpu.off_cpu" : "cpu.main_thread_waits",
		.title = title.buf,
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = diag.buf,
		.next_step = next.buf,
		.validation = have_wait ? "offcpu.waits[0].seconds falls, cpu.utilization rises and "
					  "target.wall_s falls"
					: "cpu.utilization rises and target.wall_s falls",
		/* One cause with a phase's wait there (phase.io_bound). */
		.blames_code = have_wait ? FINDING_BLAMES_CODE : 0,
	};
	findings_add_time(ctx->findings, &f, off_s, wall_s);
	if (have_wait)
		offcpu_wait_release(&w);
	strbuf_release(&loc);
	strbuf_release(&ev);
	strbuf_release(&next);
	strbuf_release(&title);
	strbuf_release(&diag);
}

struct span_edge {
	int64_t t_ns;
	int delta; /* +1: a busy thread starts; -1: it ends */
};

static int span_edge_cmp(const void *a, const void *b)
{
	const struct span_edge *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return x->delta - y->delta; /* an end before a start at the same time */
}

/* The seconds in which more than cpus of the target's threads were busy at
 * once (each on the CPU or queued for it for BUSY_THREAD_SHARE of its life,
 * from the offcpu probe's switch records), and the most at once in *most.
 * The run's mean demand misses contention that fills only part of it (three
 * busy threads on two cores for a second, one of them alone before). 0
 * without the offcpu probe's states. */
static double busy_overlap_s(sqlite3 *db, int64_t cpus, int64_t *most)
{
	int64_t known = 1; /* a recording made before the key: known */
	*most = 0;
	if (cpus <= 0 || !recording_has_table(db, "offcpu_threads") ||
	    !recording_has_table(db, "offcpu_states"))
		return 0;
	recording_meta_int(db, "offcpu_state_known", &known);
	if (!known)
		return 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT first_ns, last_ns FROM offcpu_threads o WHERE last_ns > first_ns"
			       " AND on_cpu_ns + (SELECT coalesce(sum(ns), 0) FROM offcpu_states s"
			       " WHERE s.pid = o.pid AND s.tid = o.tid AND s.state = 'R') >= ? *"
			       " (last_ns - first_ns)",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_double(st, 1, BUSY_THREAD_SHARE);
	struct span_edge *e = NULL;
	size_t n = 0, alloc = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n + 2 > alloc) {
			alloc = alloc ? 2 * alloc : 64;
			e = xrealloc(e, alloc * sizeof(*e));
		}
		e[n++] = (struct span_edge){ sqlite3_column_int64(st, 0), 1 };
		e[n++] = (struct span_edge){ sqlite3_column_int64(st, 1), -1 };
	}
	sqlite3_finalize(st);
	if (n)
		qsort(e, n, sizeof(*e), span_edge_cmp);
	double over_s = 0;
	int64_t live = 0;
	for (size_t i = 0; i < n; i++) {
		if (live > cpus && i > 0)
			over_s += ((double)e[i].t_ns - (double)e[i - 1].t_ns) / 1e9;
		live += e[i].delta;
		if (live > *most)
			*most = live;
	}
	free(e);
	return over_s;
}

/* The component (components.c) of more processes than cores that took the
 * most CPU: the workers a pool started, the pool that is to be sized; NULL
 * when none. */
static json_t *oversized_component(const struct analysis_ctx *ctx, int64_t cpus)
{
	json_t *best = NULL, *c;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(ctx->report, "components"), "list"), i,
			   c) {
		if (cpus <= 0 || json_integer_value(json_object_get(c, "processes")) <= cpus)
			continue;
		if (!best || json_number_value(json_object_get(c, "cpu_pct")) >
				     json_number_value(json_object_get(best, "cpu_pct")))
			best = c;
	}
	return best;
}

/* Location and next step of CPU contention made by the workers of comp. */
static void pool_words(json_t *comp, int64_t cpus, struct strbuf *loc, struct strbuf *next)
{
	json_t *top = json_array_get(json_object_get(comp, "top_functions"), 0);
	const char *fn = json_string_value(json_object_get(top, "function"));
	const char *file = json_string_value(json_object_get(top, "file"));
	long long n = (long long)json_integer_value(json_object_get(comp, "processes"));
	size_t len = file ? strlen(file) : 0;
	strbuf_reset(loc);
	if (fn && file)
		strbuf_addf(loc, "%s:%s (%lld processes)", file, fn, n);
	else
		strbuf_addf(loc, "%s (%lld processes)",
			    json_string_value(json_object_get(comp, "name")), n);
	if (len > 3 && !strcmp(file + len - 3, ".py"))
		strbuf_addf(next, "%lld processes run %s at once on %lld CPUs: start at most %lld "
				  "workers (multiprocessing.Pool(processes=os.cpu_count()), "
				  "ProcessPoolExecutor(max_workers=os.cpu_count())), and give "
				  "each one more work per task instead of more workers",
			    n, fn ? fn : "the same code", (long long)cpus, (long long)cpus);
	else
		strbuf_addf(next, "%lld processes run %s at once on %lld CPUs: start at most %lld "
				  "of them at once (one per core), each with more of the work",
			    n, fn ? fn : "the same code", (long long)cpus, (long long)cpus);
}

static void add_findings(struct analysis_ctx *ctx, const struct procstats *ps,
			 const struct cpu_totals *t, double wall_s, int64_t cpus)
{
	double cpu_s = t->user_s + t->sys_s;
	struct strbuf loc = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
	leader_location(ctx, ps, &loc);
	offcpu_finding(ctx, ps, t, wall_s);
	/* The target's own demand: threads runnable on average (running or queued).
	 * When it fits in the cores, the queueing came from other processes: a
	 * note about the measurement, not a finding about the target. */
	double demand = (cpu_s + t->runq_wait_s) / wall_s;
	int64_t most = 0;
	double over_s = busy_overlap_s(ctx->db, cpus, &most);
	int own_contention = cpus <= 0 || demand > (double)cpus + CONTENTION_MARGIN ||
			     (wall_s > 0 && over_s >= 0.10 * wall_s);
	if (wall_s > 0 && t->runq_wait_s / wall_s > 0.10 && !own_contention) {
		strbuf_reset(&ev);
		strbuf_addf(&ev,
			    "The machine was busy: the target waited %.3f s (%.0f%% of %.3f s "
			    "wall) for a CPU although it kept only %.1f threads runnable on "
			    "average, on %lld CPUs; other processes took the CPUs, so its wall "
			    "time is longer than on an idle machine (CPU time and the samples' "
			    "shares are not affected)",
			    t->runq_wait_s, 100.0 * t->runq_wait_s / wall_s, wall_s, demand,
			    (long long)cpus);
		json_object_set_new(json_object_get(ctx->report, "cpu"), "contention_note",
				    json_string(ev.buf));
	}
	if (wall_s > 0 && t->runq_wait_s / wall_s > 0.10 && own_contention) {
		double at_stake = t->runq_wait_s < wall_s ? t->runq_wait_s : wall_s;
		strbuf_reset(&ev);
		strbuf_addf(&ev,
			    "runnable threads waited %.3f s for a CPU (%.0f%% of %.3f s wall);"
			    " the target kept %.1f threads runnable on average on %lld CPUs;"
			    " %lld involuntary context switches",
			    t->runq_wait_s, 100.0 * t->runq_wait_s / wall_s, wall_s, demand,
			    (long long)cpus, (long long)t->ivcsw);
		if (over_s > 0)
			strbuf_addf(&ev, "; more busy threads than CPUs (up to %lld) for %.3f s",
				    (long long)most, over_s);
		json_t *pool = whole_machine(ctx) ? NULL : oversized_component(ctx, cpus);
		struct strbuf title = STRBUF_INIT;
		if (whole_machine(ctx)) {
			strbuf_addf(&next,
				    "Run fewer CPU-bound processes at once than there are cores "
				    "(%lld here), or move some elsewhere; the busiest were ",
				    (long long)cpus);
			busiest_processes(ps, 3, &next);
		} else if (pool) {
			pool_words(pool, cpus, &loc, &next);
			strbuf_addf(&title, "%lld processes of one kind queue for %lld CPUs (CPU "
					    "contention)",
				    (long long)json_integer_value(json_object_get(pool, "processes")),
				    (long long)cpus);
		} else {
			strbuf_addf(&next,
				    "Run no more busy threads or processes than there are cores "
				    "(%lld here): size worker pools to the core count",
				    (long long)cpus);
		}
		struct finding f = {
			.id = "concurrency.cpu_contention",
			.title = title.len ? title.buf : "Threads queue for a CPU (CPU contention)",
			.dimension = "concurrency",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "CPU oversubscription: more runnable threads than free cores, so "
				     "the scheduler preempts them (involuntary context switches)",
			.next_step = next.buf,
			.validation = "cpu.runqueue_wait_s and cpu.involuntary_ctx_switches fall",
		};
		findings_add_time(ctx->findings, &f, at_stake, wall_s);
		strbuf_release(&title);
	}
	/* The kernel time already charged to the code that caused it (page faults
	 * of fresh memory, system calls) is that finding, not a second one. */
	/* A wrapper's own CPU (a pyenv shim's forks and execs: nearly all of it
	 * system time) is not the program's: taken out as system time. */
	double wrap_s = ctx->program && ctx->program->wrapper_cpu_ns > 0
			    ? (double)ctx->program->wrapper_cpu_ns / 1e9
			    : 0;
	double sys_s = t->sys_s > wrap_s ? t->sys_s - wrap_s : 0;
	double own_s = cpu_s > wrap_s ? cpu_s - wrap_s : 0;
	if (wall_s > 0 && sys_s >= 0.05 && sys_s > 0.4 * own_s &&
	    !findings_has(ctx->findings, "cpu.fresh_memory") &&
	    !findings_has(ctx->findings, "cpu.syscalls")) {
		strbuf_reset(&ev);
		strbuf_addf(&ev,
			    "system time %.3f s is %.0f%% of CPU time %.3f s; %lld minor and %lld "
			    "major page faults",
			    sys_s, 100.0 * sys_s / own_s, own_s, (long long)t->minflt,
			    (long long)t->majflt);
		if (wrap_s > 0)
			strbuf_addf(&ev, " (the wrapper's own %.3f s of CPU left out)", wrap_s);
		double at_stake = sys_s < wall_s ? sys_s : wall_s;
		strbuf_reset(&next);
		int py = target_is_python(ctx->db);
		/* Page faults and system calls are told apart by the samples'
		 * kernel frames (cpu.fresh_memory, cpu.syscalls) when they name
		 * code; here they did not: both, in the target's language. */
		strbuf_addstr(&next, py ? "Allocate less fresh memory and make fewer system calls "
					  "in the hot loop: reuse large buffers and containers "
					  "(a bytearray or list filled in place) instead of new "
					  "ones each time, and read and write in big chunks "
					  "through buffered files"
					: "Reuse buffers across calls instead of allocating "
					  "fresh ones (glibc maps large blocks anew each time: "
					  "raise M_MMAP_THRESHOLD with mallopt, or keep the "
					  "block), and make fewer, larger system calls (buffered "
					  "I/O, writev)");
		struct finding f = {
			.id = "cpu.kernel_bound",
			.title = "Most CPU time is spent in the kernel",
			.dimension = "cpu",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Kernel-bound: many small system calls, or page faults from "
				     "fresh memory, cost more than the program's own work",
			.next_step = next.buf,
			.validation = "cpu.sys_s falls",
		};
		findings_add_time(ctx->findings, &f, at_stake, wall_s);
	}
	strbuf_release(&loc);
	strbuf_release(&ev);
	strbuf_release(&next);
}

static int cpu_usage_run(struct analysis_ctx *ctx)
{
	struct cpu_totals t;
	if (!ctx->procs)
		return -1;
	const struct procstats *ps = ctx->procs;
	if (cpu_totals_load(ctx->db, ps, &t))
		return 0; /* nothing measured: report_build says why */
	double wall_s = report_wall_s(ctx->db);
	int64_t cpus = 0;
	recording_meta_int(ctx->db, "cpus_online", &cpus);
	json_t *cpu = json_object();
	json_object_set_new(cpu, "user_s", json_real(t.user_s));
	json_object_set_new(cpu, "sys_s", json_real(t.sys_s));
	json_object_set_new(cpu, "utilization",
			    wall_s > 0 ? json_real((t.user_s + t.sys_s) / wall_s) : json_null());
	json_object_set_new(cpu, "voluntary_ctx_switches", json_integer(t.vcsw));
	json_object_set_new(cpu, "involuntary_ctx_switches", json_integer(t.ivcsw));
	json_object_set_new(cpu, "runqueue_wait_s", json_real(t.runq_wait_s));
	json_object_set_new(cpu, "minor_faults", json_integer(t.minflt));
	json_object_set_new(cpu, "major_faults", json_integer(t.majflt));
	json_object_set_new(cpu, "cpus_online", cpus > 0 ? json_integer(cpus) : json_null());
	json_object_set_new(cpu, "source", json_string(t.exact ? "kernel rusage of reaped processes"
								 " + /proc readings"
							       : "/proc readings"));
	struct strbuf why = STRBUF_INIT;
	json_t *counters = hwcounters_json(ctx->db, &why);
	json_object_set_new(cpu, "counters", counters ? counters : json_null());
	size_t nthreads = 0;
	json_t *threads = hwcounters_threads_json(ctx->db, CPU_THREAD_COUNTERS_MAX, &nthreads);
	if (threads) {
		json_object_set_new(cpu, "thread_counters", threads);
		json_object_set_new(cpu, "thread_counters_total", json_integer((json_int_t)nthreads));
	}
	json_object_set_new(ctx->report, "cpu", cpu);
	if (!counters)
		report_not_measured(ctx->report, "counters", why.buf);
	strbuf_release(&why);

	if (wall_s > 0)
		add_findings(ctx, ps, &t, wall_s, cpus);
	if (counters)
		hwcounters_findings(ctx, counters, t.user_s + t.sys_s, wall_s);
	return 0;
}

static const char *const cpu_usage_needs[] = { "hotspots", "hotspots_source", "call_tree",
						 "findings:cpu", "components", NULL };

static const char *const cpu_usage_findings[] = {
	"cpu.off_cpu",
	"cpu.main_thread_waits",
	"concurrency.cpu_contention",
	"cpu.kernel_bound",
	"cpu.memory_bound",
	NULL,
};

const struct analysis_ops analysis_cpu_usage = {
	.name = "cpu_usage",
	.findings = cpu_usage_findings,
	.needs = cpu_usage_needs,
	.run = cpu_usage_run,
};
