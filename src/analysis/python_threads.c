/* python_threads: what each Python thread did (on the CPU, holding the GIL,
 * idle) and how much the threads fought over the GIL, from the "python"
 * samples (their on_cpu and gil flags). Report key `python`; findings "GIL
 * contention" and "idle thread".
 *
 * The GIL figures are estimated per tick: the python probe samples every
 * thread of a process at one moment (one t_ns); samples of one process less
 * than half a sampling period apart are one tick. A tick is contended when one
 * thread holds the GIL while another, with Python frames and without the GIL,
 * is on the CPU (its on_cpu flag: it used CPU time since its last sample), that
 * is wants to run Python code. Only GIL-bound threads count as wanting: those
 * that held the GIL in at least half as many samples as they were on the CPU.
 * A thread on the CPU mostly without the GIL runs C code that released it
 * (hashing, NumPy, compression): it works in parallel, it does not wait. A
 * first pass over the samples gives each thread's shares, a second the ticks. */
#include "analysis.h"
#include "frames.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIL_CONTENTION_MIN_PCT 10.0
#define GIL_CONTENTION_MIN_TICKS 10
#define IDLE_OFF_CPU_PCT 90.0
#define IDLE_MIN_SAMPLES 10
#define IDLE_MIN_SPAN_PCT 50.0 /* of its process's sampled span: "most of the run" */
#define IDLE_SHOWN_MAX 3
#define BUSY_ON_CPU_PCT 20.0 /* the other threads together, in % of one CPU */
#define WAIT_FRAMES_SHOWN 3
#define THREADS_LISTED_MAX 256 /* report.json stays bounded for a huge thread pool */

struct pt_thread {
	int64_t pid, tid;
	int64_t samples, cpu_known, on_cpu, runq, gil_known, gil;
	int64_t wanted;		/* contended ticks where it waited for the GIL */
	int64_t held_contended; /* contended ticks where it held the GIL */
	int64_t first_ns, last_ns;
};

struct pt_proc {
	int64_t pid;
	int64_t ticks, gil_ticks, held_ticks, contended_ticks;
	int64_t first_ns, last_ns;
	size_t nthreads;
};

struct pt_sample {
	size_t thread;
	int on_cpu, gil; /* -1 unknown */
};

struct pt {
	struct pt_thread *threads;
	size_t nthreads, threads_alloc;
	struct pt_proc *procs;
	size_t nprocs, procs_alloc;
	struct hashmap index; /* (pid, tid) -> thread */
	struct pt_sample *tick;
	size_t ntick, tick_alloc;
	size_t cursor; /* pass 1: the process being read */
};

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

static size_t pt_thread_of(struct pt *p, int64_t pid, int64_t tid)
{
	int64_t key[2] = { pid, tid };
	int64_t *found = hashmap_get(&p->index, key, sizeof(key));
	if (found)
		return (size_t)*found;
	if (p->nthreads == p->threads_alloc) {
		p->threads_alloc = p->threads_alloc ? 2 * p->threads_alloc : 16;
		p->threads = xrealloc(p->threads, p->threads_alloc * sizeof(*p->threads));
	}
	p->threads[p->nthreads] = (struct pt_thread){ .pid = pid, .tid = tid, .first_ns = -1 };
	hashmap_put(&p->index, key, sizeof(key), (int64_t)p->nthreads);
	return p->nthreads++;
}

/* Rows come ordered by pid: pass 0 appends processes, pass 1 (pass) finds
 * them again in the same order. */
static struct pt_proc *pt_proc_of(struct pt *p, int64_t pid, int pass)
{
	if (pass) {
		while (p->cursor < p->nprocs && p->procs[p->cursor].pid != pid)
			p->cursor++;
		if (p->cursor < p->nprocs)
			return &p->procs[p->cursor];
	}
	if (p->nprocs && p->procs[p->nprocs - 1].pid == pid)
		return &p->procs[p->nprocs - 1];
	if (p->nprocs == p->procs_alloc) {
		p->procs_alloc = p->procs_alloc ? 2 * p->procs_alloc : 4;
		p->procs = xrealloc(p->procs, p->procs_alloc * sizeof(*p->procs));
	}
	p->procs[p->nprocs] = (struct pt_proc){ .pid = pid, .first_ns = -1 };
	return &p->procs[p->nprocs++];
}

/* One tick of one process: who held the GIL, who wanted it. */
static void pt_flush_tick(struct pt *p, struct pt_proc *pr)
{
	if (!p->ntick)
		return;
	pr->ticks++;
	long holder = -1;
	int known = 0;
	for (size_t i = 0; i < p->ntick; i++) {
		known |= p->tick[i].gil >= 0;
		if (p->tick[i].gil == 1 && holder < 0)
			holder = (long)p->tick[i].thread;
	}
	if (known)
		pr->gil_ticks++;
	if (holder >= 0) {
		pr->held_ticks++;
		int contended = 0;
		for (size_t i = 0; i < p->ntick; i++) {
			const struct pt_sample *s = &p->tick[i];
			const struct pt_thread *th = &p->threads[s->thread];
			int gil_bound = th->gil_known && 2 * th->gil >= th->on_cpu;
			if (s->gil == 0 && s->on_cpu == 1 && gil_bound && (long)s->thread != holder) {
				p->threads[s->thread].wanted++;
				contended = 1;
			}
		}
		if (contended) {
			pr->contended_ticks++;
			p->threads[holder].held_contended++;
		}
	}
	p->ntick = 0;
}

/* Pass 0: each thread's counts and each process's span; pass 1: the ticks. */
static int pt_load(sqlite3 *db, struct pt *p, int64_t period_ns, int pass)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT pid, tid, t_ns, on_cpu, gil FROM samples WHERE source ="
			       " 'python' ORDER BY pid, t_ns, tid",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	struct pt_proc *pr = NULL;
	int64_t tick_start = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		int64_t t = sqlite3_column_int64(st, 2);
		/* 1 running, 2 queued for a CPU, 0 blocked (docs/recording.md) */
		int state = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1
								      : sqlite3_column_int(st, 3);
		int on_cpu = state < 0 ? -1 : state == 1;
		int gil = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1
								    : sqlite3_column_int(st, 4) != 0;
		if (!pr || pr->pid != pid || sat_sub_i64(t, tick_start) >= period_ns / 2) {
			if (pr && pass)
				pt_flush_tick(p, pr);
			pr = pt_proc_of(p, pid, pass);
			tick_start = t;
		}
		size_t ti = pt_thread_of(p, pid, tid);
		if (pass) {
			if (p->ntick == p->tick_alloc) {
				p->tick_alloc = p->tick_alloc ? 2 * p->tick_alloc : 16;
				p->tick = xrealloc(p->tick, p->tick_alloc * sizeof(*p->tick));
			}
			p->tick[p->ntick++] = (struct pt_sample){ ti, on_cpu, gil };
			continue;
		}
		if (pr->first_ns < 0)
			pr->first_ns = t;
		pr->last_ns = t;
		struct pt_thread *th = &p->threads[ti];
		if (!th->samples)
			pr->nthreads++;
		th->samples++;
		if (th->first_ns < 0)
			th->first_ns = t;
		th->last_ns = t;
		if (on_cpu >= 0) {
			th->cpu_known++;
			th->on_cpu += on_cpu;
			th->runq += state == 2;
		}
		if (gil >= 0) {
			th->gil_known++;
			th->gil += gil;
		}
	}
	if (pr && pass)
		pt_flush_tick(p, pr);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static void pt_release(struct pt *p)
{
	free(p->threads);
	free(p->procs);
	free(p->tick);
	hashmap_release(&p->index);
}

/* The thread's recorded name (threading's, else the kernel's), or "" (malloc'd). */
static char *thread_name(sqlite3 *db, int64_t pid, int64_t tid)
{
	sqlite3_stmt *st;
	char *name = NULL;
	if (recording_has_table(db, "threads") &&
	    sqlite3_prepare_v2(db, "SELECT name FROM threads WHERE pid = ? AND tid = ?", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, tid);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			name = xstrdup((const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	return name ? name : xstrdup("");
}

/* The CPython version of pid from the python probe's "found" note, or NULL. */
static json_t *python_version(sqlite3 *db, int64_t pid)
{
	sqlite3_stmt *st;
	json_t *v = NULL;
	if (!recording_has_table(db, "notes") ||
	    sqlite3_prepare_v2(db,
			       "SELECT text FROM notes WHERE probe = 'python' AND kind = 'found'"
			       " ORDER BY t_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return json_null();
	while (!v && sqlite3_step(st) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 0);
		int npid;
		char ver[32];
		if (text && sscanf(text, "pid %d: CPython %31s", &npid, ver) == 2 && npid == pid)
			v = json_string(ver);
	}
	sqlite3_finalize(st);
	return v ? v : json_null();
}

/* 1 when the standard library's frame fn of file waits for work done
 * elsewhere: a pool's results (multiprocessing.Pool's map and get,
 * concurrent.futures' result, wait and as_completed) or a child process
 * (subprocess's wait and communicate), as Thread.join waits for a thread. */
static int waits_for_results(const char *fn, const char *file)
{
	static const char *const files[] = { "/multiprocessing/pool.py",
					     "/concurrent/futures/_base.py", "/subprocess.py", NULL };
	static const char *const words[] = { "wait", "get", "result", "as_completed",
					     "communicate", NULL };
	size_t pl = file ? strlen(file) : 0;
	for (size_t i = 0; pl && files[i]; i++) {
		size_t n = strlen(files[i]);
		if (pl < n || strcmp(file + pl - n, files[i]) || !frame_is_python_stdlib(file))
			continue;
		for (size_t k = 0; words[k]; k++)
			if (strstr(fn, words[k]))
				return 1;
	}
	return 0;
}

/* Where a thread waits: its most frequent off-CPU stack, innermost frames
 * first ("f (file:line) < caller (...)"); *loc gets the innermost frame as a
 * location. Returns 1 when the stack is in threading's Thread.join (a thread
 * waiting for others to finish) or waits for a pool's results or a child
 * (waits_for_results), 2 when it runs a ThreadPoolExecutor's task (it waits
 * on that task's I/O, not for work) or when it is a helper thread a library
 * started for itself (multiprocessing's queue feeder and pool handlers,
 * ProcessPoolExecutor's manager: no frame of the program's own code, a frame
 * of those modules), 0 otherwise, -1 when there is none. */
static int wait_stack(sqlite3 *db, const struct pt_thread *th, struct strbuf *sb,
		      struct strbuf *loc)
{
	sqlite3_stmt *st, *nd;
	int64_t node = 0;
	int joins = 0, own = 0, helper = 0; /* own: the program's frame is in loc */
	int in_task = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT node, COUNT(*) FROM samples WHERE source = 'python' AND"
			       " pid = ? AND tid = ? AND on_cpu = 0 GROUP BY node ORDER BY 2 DESC,"
			       " 1 LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, th->pid);
	sqlite3_bind_int64(st, 2, th->tid);
	if (sqlite3_step(st) == SQLITE_ROW)
		node = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (!node || sqlite3_prepare_v2(db,
					"SELECT n.parent, f.function, f.file, f.line FROM stack_nodes n"
					" LEFT JOIN frames f ON f.id = n.frame WHERE n.id = ?",
					-1, &nd, NULL) != SQLITE_OK)
		return -1;
	for (int depth = 0; node && depth < 256; depth++) {
		sqlite3_reset(nd);
		sqlite3_bind_int64(nd, 1, node);
		if (sqlite3_step(nd) != SQLITE_ROW)
			break;
		node = sqlite3_column_int64(nd, 0);
		const char *fn = (const char *)sqlite3_column_text(nd, 1);
		const char *file = (const char *)sqlite3_column_text(nd, 2);
		int line = sqlite3_column_int(nd, 3);
		fn = fn ? fn : "[unknown]";
		size_t fl = strlen(fn), pl = file ? strlen(file) : 0;
		if ((fl >= 4 && !strcmp(fn + fl - 4, "join") && pl >= 12 &&
		     !strcmp(file + pl - 12, "threading.py")) ||
		    waits_for_results(fn, file))
			joins = 1;
		if (file && frame_is_python_stdlib(file) &&
		    (strstr(file, "/multiprocessing/") ||
		     strstr(file, "/concurrent/futures/process.py")))
			helper = 1;
		/* A ThreadPoolExecutor's worker inside a task (_WorkItem.run):
		 * it waits for its task's I/O, not for work; a pool too small or
		 * too large for its work is thread_pools' to say. */
		if (file && frame_is_python_stdlib(file) &&
		    strstr(file, "/concurrent/futures/thread.py") && strstr(fn, "run"))
			in_task = 1;
		/* The place is the program's own frame, not the standard
		 * library's wait under it (queue.get, Condition.wait). */
		int first_own = !own && (!file || !frame_is_python_stdlib(file));
		if (first_own || !loc->len) {
			strbuf_reset(loc);
			strbuf_addf(loc, "%s:%s", file ? file : "?", fn);
			if (line > 0)
				strbuf_addf(loc, ":%d", line);
			own |= first_own;
		}
		if (depth < WAIT_FRAMES_SHOWN) {
			strbuf_addf(sb, "%s%s (%s", depth ? " < " : "", fn, file ? file : "?");
			if (line > 0)
				strbuf_addf(sb, ":%d", line);
			strbuf_addch(sb, ')');
		}
	}
	sqlite3_finalize(nd);
	return (helper && !own) || in_task ? 2 : joins;
}

static void contention_finding(struct analysis_ctx *ctx, const struct pt *p,
			       const struct pt_proc *pr, double period_s)
{
	double share = pct(pr->contended_ticks, pr->gil_ticks);
	if (pr->contended_ticks < GIL_CONTENTION_MIN_TICKS || share < GIL_CONTENTION_MIN_PCT)
		return;
	double wall_s = report_wall_s(ctx->db);
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, loc = STRBUF_INIT;
	strbuf_addf(&title, "Python threads wait for the GIL in %.0f%% of the sampled time (GIL contention)",
		    share);
	strbuf_addf(&loc, "process %lld (Python threads)", (long long)pr->pid);
	strbuf_addf(&ev,
		    "in %.1f%% of the sampled moments (%lld of %lld ticks, one every %.0f ms) a "
		    "thread of process %lld was on the CPU with Python frames and without the "
		    "GIL while another thread held it; the GIL was held in %.1f%% of them. "
		    "Threads involved:",
		    share, (long long)pr->contended_ticks, (long long)pr->gil_ticks,
		    period_s * 1e3, (long long)pr->pid, pct(pr->held_ticks, pr->gil_ticks));
	int listed = 0;
	for (size_t i = 0; i < p->nthreads && listed < 8; i++) {
		const struct pt_thread *th = &p->threads[i];
		if (th->pid != pr->pid || (!th->wanted && !th->held_contended))
			continue;
		strbuf_addf(&ev, "%s tid %lld: held the GIL in %.0f%% of its samples, waited for it "
			    "in %lld contended ticks",
			    listed ? ";" : "", (long long)th->tid, pct(th->gil, th->gil_known),
			    (long long)th->wanted);
		listed++;
	}
	strbuf_addf(&ev, ". Estimated from sampled moments: a thread counts as wanting the GIL "
			 "when it used CPU time since its previous sample");
	struct finding f = {
		.id = "python.gil_contention",
		.title = title.buf,
		.dimension = "concurrency",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "GIL contention: CPU-bound Python threads take turns on one "
			     "interpreter lock, so threads add waiting, not speed",
		.next_step = "Run the CPU-bound work in processes (multiprocessing, "
			     "concurrent.futures.ProcessPoolExecutor), move the hot loop into C "
			     "code that releases the GIL (NumPy, a C/Cython extension with "
			     "Py_BEGIN_ALLOW_THREADS), or use fewer CPU-bound threads",
		.validation = "python.gil.contention_pct falls and target.wall_s falls",
		.impact_s = wall_s > 0 ? share / 100.0 * wall_s : -1,
		.impact_bytes = -1,
		.impact_pct = share,
	};
	findings_add(ctx->findings, &f);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&loc);
}

/* Threads off the CPU in > 90% of their samples over most of their process's
 * sampled span. A library's own helper thread is left out (wait_stack).
 * The main thread is left out when it waits in Thread.join or
 * the other threads of its process are busy (their on-CPU shares add up to
 * a fifth of a CPU or more, low enough to hold on a machine so busy that the
 * workers wait for a CPU): it is waiting for its workers, which is its job. A process
 * with one Python thread has none (the whole-run "off the CPU" finding covers
 * it). An idle thread costs memory and a little scheduling, not run time: the
 * impact is a tenth of its share of the process's thread time, so it ranks
 * below findings with time at stake. */
static void idle_finding(struct analysis_ctx *ctx, const struct pt *p, const struct pt_proc *pr)
{
	if (pr->nthreads < 2)
		return;
	double others_on_cpu = 0; /* the other threads' on-CPU shares, summed */
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct pt_thread *th = &p->threads[i];
		if (th->pid == pr->pid && th->tid != th->pid && th->cpu_known)
			others_on_cpu += pct(th->on_cpu, th->cpu_known);
	}
	int workers_busy = others_on_cpu >= BUSY_ON_CPU_PCT;
	struct strbuf ev = STRBUF_INIT, loc = STRBUF_INIT, title = STRBUF_INIT;
	int n = 0;
	double idle_sum = 0;
	int at_code = 0;
	int64_t span = sat_sub_i64(pr->last_ns, pr->first_ns);
	for (size_t i = 0; i < p->nthreads && n < IDLE_SHOWN_MAX; i++) {
		const struct pt_thread *th = &p->threads[i];
		if (th->pid != pr->pid || th->cpu_known < IDLE_MIN_SAMPLES)
			continue;
		double idle = pct(th->cpu_known - th->on_cpu - th->runq, th->cpu_known);
		if (idle <= IDLE_OFF_CPU_PCT || pct(sat_sub_i64(th->last_ns, th->first_ns), span) < IDLE_MIN_SPAN_PCT)
			continue;
		struct strbuf stack = STRBUF_INIT, where = STRBUF_INIT;
		int joins = wait_stack(ctx->db, th, &stack, &where);
		if (joins < 0 || joins == 2 || (th->tid == th->pid && (joins == 1 || workers_busy))) {
			strbuf_release(&stack);
			strbuf_release(&where);
			continue;
		}
		char *name = thread_name(ctx->db, th->pid, th->tid);
		/* A damaged recording: samples naming a stack node it does not have. */
		if (!stack.len)
			strbuf_addstr(&stack, "a place not recorded (its stack is missing)");
		if (!where.len)
			strbuf_addf(&where, "process %lld thread %lld", (long long)th->pid,
				    (long long)th->tid);
		else if (!n)
			at_code = 1; /* the first thread's waiting line names the location */
		strbuf_addf(&ev, "%sthread %lld%s%s%s off the CPU in %.0f%% of its %lld samples "
			    "(%.1f s sampled), waiting in %s",
			    n ? "; " : "", (long long)th->tid, *name ? " (" : "", name,
			    *name ? ")" : "", idle, (long long)th->cpu_known,
			    (double)sat_sub_i64(th->last_ns, th->first_ns) / 1e9,
			    stack.buf);
		if (!n)
			strbuf_addstr(&loc, where.buf);
		idle_sum += idle;
		n++;
		free(name);
		strbuf_release(&stack);
		strbuf_release(&where);
	}
	if (n) {
		strbuf_addf(&title, "%d Python thread%s of process %lld %s almost always idle", n,
			    n > 1 ? "s" : "", (long long)pr->pid, n > 1 ? "are" : "is");
		/* What is at stake is the idle threads' share of the process's threads. */
		double impact = idle_sum / (double)pr->nthreads / 10.0;
		struct finding f = {
			.id = "concurrency.idle_thread",
			.title = title.buf,
			.dimension = "concurrency",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Idle thread: a thread that waits (on a lock, a queue, I/O or "
				     "a sleep) nearly all the time does no work for the program",
			.next_step = "Check what it waits for at the stack shown: if it waits for "
				     "work, there may be more threads than work (shrink the pool); "
				     "if it waits for a lock or a result another thread holds, that "
				     "is serialisation to remove",
			.validation = "its python.threads[].idle_pct falls, or the thread goes away",
			.impact_s = -1,
			.impact_bytes = -1,
			.impact_pct = impact,
			/* Idle at a line: what waits there (a lock) is the same cause. */
			.blames_code = at_code ? FINDING_BLAMES_CODE : 0,
		};
		findings_add(ctx->findings, &f);
	}
	strbuf_release(&ev);
	strbuf_release(&loc);
	strbuf_release(&title);
}

static int python_threads_run(struct analysis_ctx *ctx)
{
	if (!recording_has_table(ctx->db, "samples"))
		return 0;
	int64_t hz = 99;
	if (recording_meta_int(ctx->db, "python_rate_hz", &hz) || hz <= 0)
		hz = 99;
	int64_t period_ns = 1000000000 / hz;
	struct pt p = { 0 };
	if (pt_load(ctx->db, &p, period_ns, 0) || pt_load(ctx->db, &p, period_ns, 1)) {
		pt_release(&p);
		return -1;
	}
	if (!p.nthreads) {
		pt_release(&p);
		return 0;
	}
	json_t *py = json_object(), *procs = json_array(), *threads = json_array();
	/* The mode the stack views used: an unknown one in meta reads as cpu. */
	json_object_set_new(py, "mode", json_string(stack_mode_name(stack_mode_of(ctx->db))));
	int64_t ticks = 0, held = 0, contended = 0;
	for (size_t i = 0; i < p.nprocs; i++) {
		const struct pt_proc *pr = &p.procs[i];
		json_t *o = json_object();
		json_object_set_new(o, "pid", json_integer(pr->pid));
		json_object_set_new(o, "version", python_version(ctx->db, pr->pid));
		json_object_set_new(o, "threads", json_integer((json_int_t)pr->nthreads));
		json_object_set_new(o, "gil_held_pct",
				    pr->gil_ticks ? json_real(pct(pr->held_ticks, pr->gil_ticks))
						  : json_null());
		json_object_set_new(o, "gil_contention_pct",
				    pr->gil_ticks
					? json_real(pct(pr->contended_ticks, pr->gil_ticks))
					: json_null());
		json_array_append_new(procs, o);
		ticks += pr->gil_ticks;
		held += pr->held_ticks;
		contended += pr->contended_ticks;
	}
	for (size_t i = 0; i < p.nthreads && i < THREADS_LISTED_MAX; i++) {
		const struct pt_thread *th = &p.threads[i];
		json_t *o = json_object();
		char *name = thread_name(ctx->db, th->pid, th->tid);
		json_object_set_new(o, "pid", json_integer(th->pid));
		json_object_set_new(o, "tid", json_integer(th->tid));
		json_object_set_new(o, "name", report_string(name, strlen(name)));
		json_object_set_new(o, "samples", json_integer(th->samples));
		json_object_set_new(o, "on_cpu_pct",
				    th->cpu_known ? json_real(pct(th->on_cpu, th->cpu_known))
						  : json_null());
		json_object_set_new(o, "gil_pct",
				    th->gil_known ? json_real(pct(th->gil, th->gil_known))
						  : json_null());
		json_object_set_new(o, "idle_pct",
				    th->cpu_known ? json_real(pct(th->cpu_known - th->on_cpu - th->runq,
								  th->cpu_known))
						  : json_null());
		json_object_set_new(o, "runq_pct",
				    th->cpu_known ? json_real(pct(th->runq, th->cpu_known)) : json_null());
		/* Coverage: the ticks of its sampled span that a read stood for;
		 * a late read stands for its own tick only (docs/python.md). */
		int64_t span_ticks = (th->last_ns - th->first_ns + period_ns / 2) / period_ns + 1;
		int64_t missed = span_ticks > th->samples ? span_ticks - th->samples : 0;
		json_object_set_new(o, "ticks_missed", json_integer(missed));
		json_object_set_new(o, "coverage_pct",
				    json_real(pct(span_ticks - missed, span_ticks)));
		json_array_append_new(threads, o);
		free(name);
	}
	json_t *gil = json_object();
	json_object_set_new(gil, "held_pct", ticks ? json_real(pct(held, ticks)) : json_null());
	json_object_set_new(gil, "contention_pct",
			    ticks ? json_real(pct(contended, ticks)) : json_null());
	json_object_set_new(gil, "ticks", json_integer(ticks));
	json_object_set_new(py, "processes", procs);
	json_object_set_new(py, "threads", threads);
	json_object_set_new(py, "threads_total", json_integer((json_int_t)p.nthreads));
	json_object_set_new(py, "gil", gil);
	/* Stacks the probe could not read consistently: dropped, never guessed. */
	int64_t samples = 0, dropped = 0;
	if (!recording_meta_int(ctx->db, "python_samples", &samples) &&
	    !recording_meta_int(ctx->db, "python_stacks_dropped", &dropped)) {
		json_object_set_new(py, "stacks_dropped", json_integer(dropped));
		json_object_set_new(py, "stacks_dropped_pct",
				    samples + dropped ? json_real(pct(dropped, samples + dropped))
						      : json_null());
	}
	json_object_set_new(ctx->report, "python", py);
	for (size_t i = 0; i < p.nprocs; i++) {
		contention_finding(ctx, &p, &p.procs[i], (double)period_ns / 1e9);
		idle_finding(ctx, &p, &p.procs[i]);
	}
	pt_release(&p);
	return 0;
}

static const char *const python_threads_provides[] = { "python", NULL };

static const char *const python_threads_findings[] = {
	"python.gil_contention",
	"concurrency.idle_thread",
	NULL,
};

const struct analysis_ops analysis_python_threads = {
	.name = "python_threads",
	.findings = python_threads_findings,
	.provides = python_threads_provides,
	.run = python_threads_run,
};
