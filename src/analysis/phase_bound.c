/* phase_bound: findings about whole phases, from the phase table the phases
 * analysis put in the report model (`phases`). Findings "phase.cpu_bound"
 * and "phase.io_bound".
 *
 * A phase counts when it lasted at least PHASE_MIN_S and PHASE_MIN_SHARE of
 * the run. What it asked of the CPUs is its CPU time plus its time runnable
 * but queued for a CPU (on a busy machine a phase that computes gets less
 * than a core and queues for the rest). It is CPU-bound when that was at
 * least CPU_BOUND_UTIL of a core and one function of the program's own (with the
 * comprehensions and nested functions inside it) took at least
 * CPU_BOUND_TOP_PCT of its samples: the finding names that function's
 * hottest line in the phase. Else it is I/O-bound when its own CPU time
 * was at most IO_BOUND_UTIL of a core (its demand would count the queueing
 * after each wait on a busy machine) and the threads that did its work (those with
 * samples on the CPU in it) were blocked at one place of the program's own
 * for at least IO_BOUND_SHARE of it: from the Python samples taken off the
 * CPU for a Python target, from the offcpu probe's intervals (with the
 * system call, when kernel frames were sampled) for a native one. A thread
 * that never ran in the phase (a server's accept loop, a sleeping helper) is
 * not what the phase waited for; a join or waitpid, or an asyncio loop's
 * wait for its tasks, is work elsewhere, said by other findings. */
#include "analysis.h"
#include "findings.h"
#include "frames.h"
#include "offcpu.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PHASE_MIN_S 1.0
#define PHASE_MIN_SHARE 0.10
#define CPU_BOUND_UTIL 0.7
#define CPU_BOUND_TOP_PCT 40.0
#define CPU_BOUND_MIN_SAMPLES 30
#define IO_BOUND_UTIL 0.3
#define IO_BOUND_SHARE 0.5

static const char *json_str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int is_python_file(const char *file)
{
	size_t n = file ? strlen(file) : 0;
	return n > 3 && !strcmp(file + n - 3, ".py");
}

/* The share (percent) of the phase's samples in top_functions[0] and the
 * code nested in it ("F.<locals>.g", "F.<locals>.<genexpr>"). */
static double top_share_pct(json_t *top, const char **nested)
{
	json_t *first = json_array_get(top, 0);
	const char *fn = json_str(first, "function"), *file = json_str(first, "file");
	double pct = json_number_value(json_object_get(first, "pct"));
	size_t n = fn ? strlen(fn) : 0;
	*nested = NULL;
	for (size_t i = 1; fn && i < json_array_size(top); i++) {
		json_t *o = json_array_get(top, i);
		const char *g = json_str(o, "function"), *gfile = json_str(o, "file");
		if (g && !strncmp(g, fn, n) && !strncmp(g + n, ".<locals>.", 10) &&
		    (!file || (gfile && !strcmp(file, gfile)))) {
			pct += json_number_value(json_object_get(o, "pct"));
			if (!*nested)
				*nested = g;
		}
	}
	return pct;
}

/* A finding's words, built up then handed to findings_add (which copies them). */
struct words {
	struct strbuf loc, title, ev, next, val;
};

#define WORDS_INIT { STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT }

/* Adds f with the words w (f's own strings are ignored), then frees w. */
static void add_with_words(struct analysis_ctx *ctx, struct finding *f, struct words *w)
{
	f->location = w->loc.buf;
	f->title = w->title.buf;
	f->evidence = w->ev.buf;
	f->next_step = w->next.buf;
	f->validation = w->val.buf;
	f->blames_code = FINDING_BLAMES_CODE;
	findings_add(ctx->findings, f);
	strbuf_release(&w->loc);
	strbuf_release(&w->title);
	strbuf_release(&w->ev);
	strbuf_release(&w->next);
	strbuf_release(&w->val);
}

/* 1 when it added the finding. */
static int cpu_bound_finding(struct analysis_ctx *ctx, json_t *p, double dur_s, double util,
			     double wall_s)
{
	json_t *top = json_object_get(p, "top_functions");
	json_t *first = json_array_get(top, 0);
	const char *fn = json_str(first, "function"), *file = json_str(first, "file");
	const char *name = json_str(p, "name"), *nested;
	json_int_t samples = json_integer_value(json_object_get(p, "samples"));
	if (!fn || !name || samples < CPU_BOUND_MIN_SAMPLES)
		return 0;
	double pct = top_share_pct(top, &nested);
	if (pct < CPU_BOUND_TOP_PCT)
		return 0;
	json_int_t line = json_integer_value(json_object_get(first, "line"));
	int py = is_python_file(file);
	double core = util < 1 ? util : 1;
	struct words words = WORDS_INIT;
	strbuf_addf(&words.loc, "%s:%s", file ? file : json_str(first, "module") ? json_str(first, "module")
									  : "?",
		    fn);
	if (line > 0)
		strbuf_addf(&words.loc, ":%lld", (long long)line);
	strbuf_addf(&words.title, "Phase %s is CPU-bound: %s takes %.0f%% of its %.1f s", name, fn, pct,
		    dur_s);
	strbuf_addf(&words.ev, "phase %s lasted %.2f s with %.2f s of CPU (%.0f%% of a core); of its "
			 "%lld CPU samples %.0f%% were charged to %s",
		    name, dur_s, util * dur_s, 100 * util, (long long)samples, pct, fn);
	if (nested)
		strbuf_addf(&words.ev, " (with the code nested in it, %s)", nested);
	if (line > 0)
		strbuf_addf(&words.ev, "; its hottest line in the phase is %lld", (long long)line);
	if (py)
		strbuf_addf(&words.next, "Make %s cheaper or call it less in phase %s: if it sees the "
				   "same inputs again, compute each result once (a dict built "
				   "before the loop, functools.lru_cache); if its caller scans a "
				   "collection for each item, index the collection once (a dict or "
				   "set); move work that does not change out of its loop",
			    fn, name);
	else
		strbuf_addf(&words.next, "Make %s cheaper or call it less in phase %s: replace a scan "
				   "per item with an index built once (a hash table, a sorted "
				   "array), hoist work that does not change out of its loops, and "
				   "check that it is built with optimisation (-O2)",
			    fn, name);
	strbuf_addf(&words.val, "phases[name=%s].duration_s falls, and the share of %s in its "
			  "top_functions",
		    name, fn);
	struct finding f = {
		.id = "phase.cpu_bound",
		.dimension = "cpu",
		.diagnosis = "CPU-bound phase with a dominant hotspot: the phase lasts as long as "
			     "this function computes",
		.impact_s = dur_s * core * pct / 100.0,
		.impact_bytes = -1,
		.impact_pct = 100.0 * dur_s * core * pct / 100.0 / wall_s,
	};
	add_with_words(ctx, &f, &words);
	return 1;
}

/* Where a phase's working threads waited in [from, to): from the Python
 * samples off the CPU (each stands for 1 / the Python rate), or for a native
 * target from the offcpu probe's intervals (each weighs its nanoseconds). */
struct wait_tally {
	int native;
	const struct stack_set *off; /* the waits' stacks, loaded once per run */
	struct hashmap active; /* tid -> 1: ran on the CPU in the window */
	struct hashmap at;     /* own frame index -> samples, or ns */
	struct hashmap leaf;   /* own frame index -> the innermost user frame under it */
	struct hashmap call;   /* own frame index -> the system call's kernel frame, if seen */
	size_t *path;
};

static int is_kernel(const struct stack_frame_rec *f)
{
	return f->kind && !strcmp(f->kind, "kernel");
}

static void on_off_sample(void *arg, int64_t t_ns, int64_t tid, size_t node, int64_t weight)
{
	struct wait_tally *w = arg;
	(void)t_ns;
	if (!hashmap_get(&w->active, &tid, sizeof(tid)))
		return;
	size_t n = stack_set_path(w->off, node, w->path, STACK_DEPTH_MAX);
	size_t k = frame_own_index(w->off, w->path, n);
	if (k >= n)
		return;
	int64_t fr = (int64_t)w->path[k], leaf = fr, call = -1;
	for (size_t i = k; i < n; i++) {
		const struct stack_frame_rec *f = &w->off->frames[w->path[i]];
		if (w->native && offcpu_waits_for_others(f->function))
			return; /* a join or waitpid: the time is spent elsewhere */
		if (!is_kernel(f))
			leaf = (int64_t)w->path[i];
		else if (call < 0 && frame_syscall(f->function))
			call = (int64_t)w->path[i];
	}
	int64_t add = w->native ? weight : 1;
	int64_t *c = hashmap_get(&w->at, &fr, sizeof(fr));
	if (c)
		*c += add;
	else
		hashmap_put(&w->at, &fr, sizeof(fr), add);
	hashmap_put(&w->leaf, &fr, sizeof(fr), leaf);
	if (call >= 0)
		hashmap_put(&w->call, &fr, sizeof(fr), call);
}

/* Adds the thread of each process that ran in [from, to) by its /proc
 * readings (its CPU time or its voluntary context switches moved: it woke
 * and blocked again) when its Python samples there are of that one thread
 * and none of its threads is in out already: on a busy machine a process
 * that wakes for a moment after each line it reads from a pipe may get no
 * sample on the CPU or queued in a whole phase, yet it is what the phase
 * waited in (a process that only sleeps moves neither). */
static void woken_threads(sqlite3 *db, int64_t from, int64_t to, const struct hashmap *pids,
			  struct hashmap *out)
{
	sqlite3_stmt *st;
	if (!recording_has_table(db, "proc_samples") ||
	    sqlite3_prepare_v2(db,
			       "SELECT pid, MIN(tid) FROM samples WHERE source = 'python' AND"
			       " t_ns >= ?1 AND t_ns < ?2 AND pid IN (SELECT pid FROM proc_samples"
			       " WHERE t_ns >= ?1 AND t_ns < ?2 GROUP BY pid HAVING"
			       " MAX(user_ns + sys_ns) > MIN(user_ns + sys_ns) OR MAX(vcsw) > MIN(vcsw))"
			       " GROUP BY pid HAVING COUNT(DISTINCT tid) = 1",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		if (!hashmap_get(pids, &pid, sizeof(pid)))
			hashmap_put(out, &tid, sizeof(tid), 1);
	}
	sqlite3_finalize(st);
}

/* The threads that ran in [from, to): with a Python sample on the CPU or
 * queued for one (a thread that wakes for a moment now and then, reading a
 * pipe line by line, may get no on-CPU sample on a busy machine, where it
 * waits for a CPU after each wake-up; woken_threads() adds such a one), or a
 * native target's cpu samples. */
static int active_threads(sqlite3 *db, int native, int64_t from, int64_t to,
			  struct hashmap *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       native ? "SELECT DISTINCT pid, tid FROM samples WHERE source = 'cpu'"
					" AND t_ns >= ? AND t_ns < ?"
				      : "SELECT DISTINCT pid, tid FROM samples WHERE source = 'python'"
					" AND on_cpu IN (1, 2) AND t_ns >= ? AND t_ns < ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	struct hashmap pids = HASHMAP_INIT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		hashmap_put(out, &tid, sizeof(tid), 1);
		hashmap_put(&pids, &pid, sizeof(pid), 1);
	}
	sqlite3_finalize(st);
	if (!native)
		woken_threads(db, from, to, &pids, out);
	hashmap_release(&pids);
	return 0;
}

/* 1 when the wait is work done elsewhere: a join (threading, a pool's
 * futures) or an asyncio loop's wait for its tasks' I/O. */
static int waits_elsewhere(const struct stack_frame_rec *leaf)
{
	const char *file = leaf->file ? leaf->file : "";
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	return !strcmp(base, "selectors.py") || strstr(file, "/asyncio/") ||
	       offcpu_python_joins(leaf->function, leaf->file);
}

/* The waits' stacks: a Python target's samples off the CPU, or the offcpu
 * probe's intervals (rate_hz 0), loaded into off on the first call. 0 when
 * there are some. */
static int waits_load(sqlite3 *db, double rate_hz, struct stack_set *off, int *loaded)
{
	struct strbuf err = STRBUF_INIT;
	if (!*loaded) {
		*loaded = 1;
		if (rate_hz <= 0 ? stack_set_load(db, "offcpu", off, &err)
				 : stack_set_load_filtered(db, "python", "on_cpu = 0", off, &err))
			*off = (struct stack_set)STACK_SET_INIT;
	}
	strbuf_release(&err);
	return off->total_samples ? 0 : -1;
}

/* The system call and file that took most time in [from, to) in the calls
 * of the threads that did the phase's work (the syscalls probe's stretches
 * of the rows those threads began; summed over threads), when the probe
 * ran. Waits that are not I/O (a lock, a sleep, a child, an event loop's
 * poll) are the other findings'. */
struct phase_call {
	char name[32];
	struct strbuf path;
	double seconds, bytes;
	int64_t calls;
};

static int phase_call_top(sqlite3 *db, int64_t from, int64_t to, const struct hashmap *tids,
			  struct phase_call *out)
{
	struct strbuf sql = STRBUF_INIT;
	strbuf_addstr(&sql, "SELECT s.name, coalesce(s.path, ''), sum(t.total_ns), sum(t.calls),"
			    " sum(t.bytes) FROM syscall_timeline t JOIN syscalls s ON s.pid = t.pid"
			    " AND s.id = t.id WHERE t.t_ns >= ? AND t.t_ns < ? AND s.name NOT IN"
			    " ('futex', 'nanosleep', 'clock_nanosleep', 'wait4', 'waitid', 'pause',"
			    " 'sched_yield', 'rt_sigtimedwait', 'rt_sigsuspend', 'poll', 'ppoll',"
			    " 'select', 'pselect6', 'epoll_wait', 'epoll_pwait', 'epoll_pwait2')"
			    " AND s.tid IN (-1");
	for (size_t i = 0; i < tids->cap; i++) {
		int64_t tid;
		if (!tids->slots[i].key)
			continue;
		memcpy(&tid, tids->slots[i].key, sizeof(tid));
		strbuf_addf(&sql, ", %lld", (long long)tid);
	}
	strbuf_addstr(&sql, ") GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1");
	sqlite3_stmt *st = recording_prepare(db, "syscall_timeline", sql.buf);
	strbuf_release(&sql);
	int rc = -1;
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 2) > 0) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *path = (const char *)sqlite3_column_text(st, 1);
		snprintf(out->name, sizeof(out->name), "%s", name ? name : "?");
		strbuf_addstr(&out->path, path ? path : "");
		out->seconds = (double)sqlite3_column_int64(st, 2) / 1e9;
		out->calls = sqlite3_column_int64(st, 3);
		out->bytes = (double)sqlite3_column_int64(st, 4);
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b && b[1] ? b + 1 : path;
}

static void io_bound_finding(struct analysis_ctx *ctx, json_t *p, double dur_s, double util,
			     double rate_hz, double wall_s, const struct stack_set *off)
{
	const char *name = json_str(p, "name");
	double start_s = json_number_value(json_object_get(p, "start_s"));
	int64_t from = (int64_t)(start_s * 1e9), to = from + (int64_t)(dur_s * 1e9);
	struct wait_tally w = { .native = rate_hz <= 0, .off = off, .active = HASHMAP_INIT,
				.at = HASHMAP_INIT,
				.leaf = HASHMAP_INIT, .call = HASHMAP_INIT };
	struct strbuf err = STRBUF_INIT;
	struct phase_call top = { .path = STRBUF_INIT };
	if (!name || active_threads(ctx->db, w.native, from, to, &w.active))
		goto out;
	w.path = xmalloc(STACK_DEPTH_MAX * sizeof(*w.path));
	if (stack_set_each_sample(ctx->db, off, from, to, on_off_sample, &w, &err))
		goto out;
	int64_t best = -1, best_n = 0;
	for (size_t i = 0; i < w.at.cap; i++) {
		const struct hashmap_slot *sl = &w.at.slots[i];
		if (sl->key && sl->value > best_n) {
			memcpy(&best, sl->key, sizeof(best));
			best_n = sl->value;
		}
	}
	double blocked_s = w.native ? (double)best_n / 1e9 : (double)best_n / rate_hz;
	if (best < 0 || blocked_s < IO_BOUND_SHARE * dur_s)
		goto out;
	const struct stack_frame_rec *own = &off->frames[best];
	const struct stack_frame_rec *leaf =
	    &off->frames[*hashmap_get(&w.leaf, &best, sizeof(best))];
	int64_t *call_at = hashmap_get(&w.call, &best, sizeof(best));
	const char *call = call_at ? frame_syscall(off->frames[*call_at].function) : NULL;
	const char *own_file = own->file ? own->file : own->module;
	if ((!w.native && waits_elsewhere(leaf)) || !own_file)
		goto out;
	int have_top = !phase_call_top(ctx->db, from, to, &w.active, &top);
	if (have_top && !call)
		call = top.name; /* no kernel frames: the calls say which */
	struct words words = WORDS_INIT;
	strbuf_addf(&words.loc, "%s:%s", own_file, own->function);
	if (own->line > 0)
		strbuf_addf(&words.loc, ":%d", own->line);
	if (have_top && top.seconds >= IO_BOUND_SHARE * dur_s) {
		double share = top.seconds < dur_s ? top.seconds / dur_s : 1;
		strbuf_addf(&words.title, "Phase %s is I/O-bound: %.0f%% of its %.1f s in %s(2)", name,
			    100 * share, dur_s, top.name);
		if (top.path.len)
			strbuf_addf(&words.title, " on %s", base_name(top.path.buf));
	} else {
		strbuf_addf(&words.title, "Phase %s waits: %.1f s of its %.1f s blocked in %s", name,
			    blocked_s, dur_s, own->function);
	}
	strbuf_addf(&words.ev, "phase %s lasted %.2f s with %.2f s of CPU (%.0f%% of a core); its "
			 "threads that ran were off the CPU in %s for %.2f s (%.0f%% of the phase",
		    name, dur_s, util * dur_s, 100 * util, own->function, blocked_s,
		    100 * blocked_s / dur_s);
	if (!w.native)
		strbuf_addf(&words.ev, ", %lld samples at %.0f Hz", (long long)best_n, rate_hz);
	strbuf_addch(&words.ev, ')');
	if (leaf != own) {
		const char *lf = leaf->file ? strrchr(leaf->file, '/') : NULL;
		strbuf_addf(&words.ev, ", inside %s", leaf->function);
		if (leaf->file)
			strbuf_addf(&words.ev, " of %s", lf ? lf + 1 : leaf->file);
	}
	if (call && !have_top)
		strbuf_addf(&words.ev, ", in the %s system call", call);
	if (have_top) {
		strbuf_addf(&words.ev, "; its system calls: %.2f s in %lld %s calls", top.seconds,
			    (long long)top.calls, top.name);
		if (top.path.len)
			strbuf_addf(&words.ev, " on %s", top.path.buf);
		if (top.bytes > 0 && top.calls > 0)
			strbuf_addf(&words.ev, " (%.0f bytes each on average)",
				    top.bytes / (double)top.calls);
		if (top.seconds > dur_s)
			strbuf_addstr(&words.ev, ", summed over its threads");
	}
	double runq_s = json_number_value(json_object_get(p, "runq_wait_s"));
	if (runq_s >= 0.1 * dur_s)
		strbuf_addf(&words.ev, "; the machine was busy: the phase also spent %.2f s runnable, "
				       "queued for a CPU (after its waits, counted in them)",
			    runq_s);
	if (!w.native)
		strbuf_addf(&words.next, "Make fewer blocking calls from %s in phase %s, or overlap "
					 "them: ask for many items per call (a batch endpoint or "
					 "query), or issue the calls concurrently "
					 "(concurrent.futures.ThreadPoolExecutor, or asyncio.gather "
					 "bounded by a Semaphore); if it sleeps or polls, wait on the "
					 "event itself instead",
			    own->function, name);
	else if (call && (strstr(call, "sync") || strstr(call, "msync")))
		strbuf_addf(&words.next, "Flush to disk less often from %s in phase %s: %s once "
					 "per batch of records (or at the end, or from a writer "
					 "thread), not after each one; each call waits for the disk",
			    own->function, name, call);
	else if (call && strstr(call, "sleep"))
		strbuf_addf(&words.next, "%s sleeps in phase %s: wait on the event itself (a "
					 "condition variable, a pipe, epoll) instead of sleeping and "
					 "polling, or shorten the sleeps",
			    own->function, name);
	else
		strbuf_addf(&words.next, "Make fewer blocking calls from %s in phase %s, or overlap "
					 "them: bigger reads and writes, more requests in flight "
					 "(non-blocking I/O, io_uring, a thread per connection)",
			    own->function, name);
	strbuf_addf(&words.val, "phases[name=%s].duration_s falls with its cpu_utilization rising",
		    name);
	struct finding f = {
		.id = "phase.io_bound",
		.dimension = "io",
		.diagnosis = "I/O-bound phase: it waits on one blocking call after another instead "
			     "of computing",
		.impact_s = blocked_s,
		.impact_bytes = -1,
		.impact_pct = 100.0 * blocked_s / wall_s,
	};
	add_with_words(ctx, &f, &words);
out:
	free(w.path);
	hashmap_release(&w.active);
	hashmap_release(&w.at);
	hashmap_release(&w.leaf);
	hashmap_release(&w.call);
	strbuf_release(&err);
	strbuf_release(&top.path);
}

static int phase_bound_run(struct analysis_ctx *ctx)
{
	json_t *phases = json_object_get(ctx->report, "phases");
	double wall_s = report_wall_s(ctx->db);
	int64_t rate = 0, nsamples = 0;
	if (!json_is_array(phases) || wall_s <= 0)
		return 0;
	if (recording_meta_int(ctx->db, "python_rate_hz", &rate) || rate <= 0)
		rate = 0;
	int python = rate > 0 && recording_meta_int(ctx->db, "python_samples", &nsamples) == 0 &&
		     nsamples > 0;
	struct stack_set off = STACK_SET_INIT;
	int loaded = 0;
	size_t i;
	json_t *p;
	json_array_foreach(phases, i, p) {
		double dur_s = json_number_value(json_object_get(p, "duration_s"));
		json_t *u = json_object_get(p, "cpu_utilization");
		if (dur_s < PHASE_MIN_S || dur_s < PHASE_MIN_SHARE * wall_s || !json_is_number(u))
			continue;
		double util = json_number_value(u);
		double demand = util + json_number_value(json_object_get(p, "runq_wait_s")) / dur_s;
		if (demand >= CPU_BOUND_UTIL && cpu_bound_finding(ctx, p, dur_s, util, wall_s))
			continue;
		/* Its own CPU time, not its demand: on a busy machine a thread
		 * that wakes from each wait queues for a CPU before it runs. */
		double hz = python ? (double)rate : 0;
		if (util <= IO_BOUND_UTIL && !waits_load(ctx->db, hz, &off, &loaded))
			io_bound_finding(ctx, p, dur_s, util, hz, wall_s, &off);
	}
	stack_set_release(&off);
	return 0;
}

static const char *const phase_bound_needs[] = { "phases", NULL };

static const char *const phase_bound_findings[] = {
	"phase.cpu_bound",
	"phase.io_bound",
	NULL,
};

const struct analysis_ops analysis_phase_bound = {
	.name = "phase_bound",
	.findings = phase_bound_findings,
	.needs = phase_bound_needs,
	.run = phase_bound_run,
};
