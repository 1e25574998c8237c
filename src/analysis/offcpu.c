/* offcpu (analysis): the report's `offcpu` section (blocked time by state, by
 * thread, and the heaviest waits) and the top wait that cpu_usage's off-CPU
 * finding names. See offcpu.h. */
#include "offcpu.h"
#include "analysis.h"
#include "frames.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/satmath.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define OFFCPU_NODES_MAX 400 /* heaviest stacks looked at */
#define OFFCPU_WAITS_SHOWN 5
#define OFFCPU_THREADS_SHOWN 10
#define OFFCPU_DEPTH_MAX 256

struct wait_acc {
	struct offcpu_wait w;
	struct hashmap nodes; /* the stack nodes of this wait (value unused) */
	double state_s[8]; /* by index in state_letters */
	struct hashmap tids; /* tid -> index in tid_ns */
	int64_t *tid_ns, *tid_ids;
	size_t ntids;
};

static const char state_letters[] = "SDRITX?";

static char *dup_col(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? xstrdup((const char *)t) : NULL;
}

int offcpu_waits_for_others(const char *fn)
{
	static const char *const names[] = { "pthread_join", "__pthread_clockjoin_ex",
					      "pthread_timedjoin_np", "pthread_clockjoin_np",
					      "waitpid", "__waitpid", "wait4", "__wait4", "wait",
					      "waitid", NULL };
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(fn, names[i]))
			return 1;
	return 0;
}

/* Fills the wait fields of w from the stack ending at node. 0, or -1 when the
 * stack has no user frame. */
static int describe_node(sqlite3 *db, int64_t node, struct offcpu_wait *w)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT n.parent, f.function, f.file, f.line, f.module, f.kind"
			       " FROM stack_nodes n LEFT JOIN frames f ON f.id = n.frame"
			       " WHERE n.id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	memset(w, 0, sizeof(*w));
	int found_user = 0, others = 0, bline = 0;
	char *bfile = NULL, *bmodule = NULL; /* the blocking call's */
	for (int depth = 0; node > 0 && depth < OFFCPU_DEPTH_MAX; depth++) {
		sqlite3_bind_int64(st, 1, node);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		node = sqlite3_column_int64(st, 0);
		const char *fn = (const char *)sqlite3_column_text(st, 1);
		const char *module = (const char *)sqlite3_column_text(st, 4);
		const char *kind = (const char *)sqlite3_column_text(st, 5);
		if (!fn) {
			sqlite3_reset(st);
			continue;
		}
		if (kind && !strcmp(kind, "kernel")) {
			/* innermost first: the first syscall entry frame is the call */
			const char *call = w->syscall ? NULL : frame_syscall(fn);
			if (call)
				w->syscall = xstrdup(call);
		} else {
			if (!w->blocking) {
				w->blocking = xstrdup(fn);
				bfile = dup_col(st, 2);
				bline = sqlite3_column_int(st, 3);
				bmodule = dup_col(st, 4);
			}
			others |= offcpu_waits_for_others(fn) || frame_is_launcher(module);
			if (!found_user && !frame_is_system(module, kind)) {
				w->function = xstrdup(fn);
				w->file = dup_col(st, 2);
				w->line = sqlite3_column_int(st, 3);
				w->module = dup_col(st, 4);
				found_user = 1;
			}
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (!w->blocking) {
		offcpu_wait_release(w);
		return -1;
	}
	if (!found_user) { /* all in libraries: name the blocking call itself */
		w->function = xstrdup(w->blocking);
		w->file = bfile;
		w->module = bmodule;
		w->line = bline;
	} else {
		free(bfile);
		free(bmodule);
	}
	w->waits_for_others = others;
	return 0;
}

void offcpu_wait_release(struct offcpu_wait *w)
{
	free(w->function);
	free(w->file);
	free(w->module);
	free(w->blocking);
	free(w->syscall);
	free(w->thread_name);
	free(w->py_function);
	free(w->py_file);
	free(w->py_own_function);
	free(w->py_own_file);
	memset(w, 0, sizeof(*w));
}

static void acc_release(struct wait_acc *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		offcpu_wait_release(&a[i].w);
		hashmap_release(&a[i].nodes);
		hashmap_release(&a[i].tids);
		free(a[i].tid_ns);
		free(a[i].tid_ids);
	}
	free(a);
}

static int acc_cmp(const void *x, const void *y)
{
	const struct wait_acc *a = x, *b = y;
	if (a->w.seconds != b->w.seconds)
		return a->w.seconds > b->w.seconds ? -1 : 1;
	return strcmp(a->w.function, b->w.function);
}

/* The waits, heaviest first, in *out (n of them). -1 when there is no data. */
static int load_waits(sqlite3 *db, struct wait_acc **out, size_t *nout)
{
	if (!recording_has_table(db, "offcpu_states") || !recording_has_table(db, "stack_nodes"))
		return -1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT node, tid, state, SUM(ns), SUM(intervals) FROM offcpu_states"
			       " WHERE node IN"
			       " (SELECT node FROM offcpu_states WHERE state <> 'R'"
			       "  GROUP BY node ORDER BY SUM(ns) DESC LIMIT ?)"
			       " AND state <> 'R' GROUP BY node, tid, state",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int(st, 1, OFFCPU_NODES_MAX);
	struct wait_acc *acc = NULL;
	size_t n = 0, alloc = 0;
	struct hashmap by_key = HASHMAP_INIT, by_node = HASHMAP_INIT;
	struct strbuf key = STRBUF_INIT;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t node = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		const char *state = (const char *)sqlite3_column_text(st, 2);
		double s = (double)sqlite3_column_int64(st, 3) / 1e9;
		int64_t *idx = hashmap_get(&by_node, &node, sizeof(node));
		if (!idx) {
			struct offcpu_wait w;
			if (describe_node(db, node, &w)) {
				hashmap_put(&by_node, &node, sizeof(node), -1);
				continue;
			}
			strbuf_reset(&key);
			strbuf_addf(&key, "%s%c%s%c%s%c%d%c%s", w.function, 0, w.file ? w.file : "",
				    0, w.module ? w.module : "", 0, w.line, 0, w.blocking);
			idx = hashmap_get(&by_key, key.buf, key.len);
			if (!idx) {
				if (n == alloc) {
					alloc = alloc ? 2 * alloc : 16;
					acc = xrealloc(acc, alloc * sizeof(*acc));
				}
				memset(&acc[n], 0, sizeof(acc[n]));
				acc[n].w = w;
				idx = hashmap_put(&by_key, key.buf, key.len, (int64_t)n++);
			} else {
				acc[*idx].w.waits_for_others |= w.waits_for_others;
				offcpu_wait_release(&w);
			}
			idx = hashmap_put(&by_node, &node, sizeof(node), *idx);
		}
		if (*idx < 0)
			continue;
		struct wait_acc *a = &acc[*idx];
		hashmap_put(&a->nodes, &node, sizeof(node), 1);
		a->w.seconds += s;
		a->w.count = sat_add_i64(a->w.count, sqlite3_column_int64(st, 4));
		const char *at = state ? strchr(state_letters, state[0]) : NULL;
		a->state_s[at && *at ? at - state_letters : 6] += s;
		int64_t *ti = hashmap_get(&a->tids, &tid, sizeof(tid));
		if (!ti) {
			a->tid_ns = xrealloc(a->tid_ns, (a->ntids + 1) * sizeof(*a->tid_ns));
			a->tid_ids = xrealloc(a->tid_ids, (a->ntids + 1) * sizeof(*a->tid_ids));
			a->tid_ns[a->ntids] = 0;
			a->tid_ids[a->ntids] = tid;
			ti = hashmap_put(&a->tids, &tid, sizeof(tid), (int64_t)a->ntids++);
		}
		a->tid_ns[*ti] = sat_add_i64(a->tid_ns[*ti], sqlite3_column_int64(st, 3));
	}
	sqlite3_finalize(st);
	hashmap_release(&by_key);
	hashmap_release(&by_node);
	strbuf_release(&key);
	if (!n) {
		free(acc);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct wait_acc *a = &acc[i];
		size_t best = 0, bt = 0;
		for (size_t k = 1; k < 7; k++)
			best = a->state_s[k] > a->state_s[best] ? k : best;
		a->w.state = state_letters[best];
		for (size_t k = 1; k < a->ntids; k++)
			bt = a->tid_ns[k] > a->tid_ns[bt] ? k : bt;
		a->w.tid = a->tid_ids[bt];
	}
	qsort(acc, n, sizeof(*acc), acc_cmp);
	*out = acc;
	*nout = n;
	return 0;
}

/* The thread's name, life and blocked time. */
static void thread_facts(sqlite3 *db, struct offcpu_wait *w)
{
	sqlite3_stmt *st;
	w->thread_wall_s = w->thread_off_s = -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT MAX(last_ns) - MIN(first_ns), SUM(off_cpu_ns) FROM offcpu_threads"
			       " WHERE tid = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, w->tid);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
			w->thread_wall_s = (double)sqlite3_column_int64(st, 0) / 1e9;
			w->thread_off_s = (double)sqlite3_column_int64(st, 1) / 1e9;
		}
		sqlite3_finalize(st);
	}
	if (recording_has_table(db, "threads") &&
	    sqlite3_prepare_v2(db, "SELECT name FROM threads WHERE tid = ? LIMIT 1", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, w->tid);
		if (sqlite3_step(st) == SQLITE_ROW)
			w->thread_name = dup_col(st, 0);
		sqlite3_finalize(st);
	}
}

struct timed_node {
	int64_t t_ns, ns, node;
};

/* The samples of one source and thread, in time order (offcpu ones with their
 * length), in a malloc'd array; *n their count. */
static struct timed_node *thread_samples(sqlite3 *db, const char *source, int64_t tid, size_t *n)
{
	sqlite3_stmt *st;
	struct timed_node *v = NULL;
	size_t alloc = 0;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT t_ns, weight, node FROM samples WHERE source = ?"
				   " AND tid = ? ORDER BY t_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, tid);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (*n == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		v[(*n)++] = (struct timed_node){ sqlite3_column_int64(st, 0),
						 sqlite3_column_int64(st, 1),
						 sqlite3_column_int64(st, 2) };
	}
	sqlite3_finalize(st);
	return v;
}

/* The first Python frame outward from node's that is not the standard
 * library's, into w's py_own_*. */
static void wait_python_own(sqlite3 *db, int64_t node, struct offcpu_wait *w)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT n.parent, f.function, f.file, f.line, f.kind FROM"
				   " stack_nodes n JOIN frames f ON f.id = n.frame WHERE n.id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	for (int depth = 0; node > 0 && depth < STACK_DEPTH_MAX; depth++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, node);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		node = sqlite3_column_int64(st, 0);
		const char *kind = (const char *)sqlite3_column_text(st, 4);
		const char *file = (const char *)sqlite3_column_text(st, 2);
		if (!kind || strcmp(kind, "python") || !file || frame_is_python_stdlib(file) ||
		    !sqlite3_column_text(st, 1))
			continue;
		w->py_own_function = dup_col(st, 1);
		w->py_own_file = dup_col(st, 2);
		w->py_own_line = sqlite3_column_int(st, 3);
		break;
	}
	sqlite3_finalize(st);
}

/* The Python function and line the waiting thread was at during the wait's
 * intervals: the python probe samples waiting threads too, so the Python
 * samples of that thread inside the intervals tell the line that waited
 * ("Connection.get, py_pipeline.py:98"), where the native stack only shows
 * the interpreter's sleep. Left unset without Python samples there. */
static void wait_python(sqlite3 *db, const struct hashmap *nodes, struct offcpu_wait *w)
{
	size_t noff, npy;
	struct timed_node *off = thread_samples(db, "offcpu", w->tid, &noff);
	struct timed_node *py = noff ? thread_samples(db, "python", w->tid, &npy) : NULL;
	struct hashmap count = HASHMAP_INIT;
	int64_t best = -1, best_n = 0;
	for (size_t i = 0, k = 0; py && i < noff; i++) {
		if (!hashmap_get(nodes, &off[i].node, sizeof(off[i].node)))
			continue;
		while (k < npy && py[k].t_ns < off[i].t_ns)
			k++;
		int64_t end_ns = sat_add_i64(off[i].t_ns, off[i].ns); /* a damaged recording */
		for (size_t j = k; j < npy && py[j].t_ns < end_ns; j++) {
			int64_t *c = hashmap_get(&count, &py[j].node, sizeof(py[j].node));
			int64_t v = c ? ++*c : *hashmap_put(&count, &py[j].node, sizeof(py[j].node), 1);
			if (v > best_n) {
				best_n = v;
				best = py[j].node;
			}
		}
	}
	sqlite3_stmt *st;
	if (best >= 0 &&
	    sqlite3_prepare_v2(db, "SELECT f.function, f.file, f.line FROM stack_nodes n JOIN"
				   " frames f ON f.id = n.frame WHERE n.id = ? AND f.kind = 'python'",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, best);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
			w->py_function = dup_col(st, 0);
			w->py_file = dup_col(st, 1);
			w->py_line = sqlite3_column_int(st, 2);
		}
		sqlite3_finalize(st);
		if (w->py_file && frame_is_python_stdlib(w->py_file))
			wait_python_own(db, best, w);
	}
	hashmap_release(&count);
	free(off);
	free(py);
}

/* A Python thread joining others (Thread.join, a pool's shutdown): its wait
 * is their work, like pthread_join's. */
int offcpu_python_joins(const char *function, const char *file)
{
	if (!function || !file)
		return 0;
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	return (!strcmp(base, "threading.py") &&
		(strstr(function, "join") || strstr(function, "_wait_for_tstate_lock"))) ||
	       strstr(file, "concurrent/futures/") != NULL;
}

static int python_join(const struct offcpu_wait *w)
{
	return offcpu_python_joins(w->py_function, w->py_file);
}

int offcpu_top_wait(sqlite3 *db, struct offcpu_wait *w)
{
	struct wait_acc *acc;
	size_t n;
	if (load_waits(db, &acc, &n))
		return -1;
	size_t pick = 0;
	for (; pick < n; pick++) {
		if (acc[pick].w.waits_for_others)
			continue;
		wait_python(db, &acc[pick].nodes, &acc[pick].w);
		if (!python_join(&acc[pick].w))
			break;
		acc[pick].w.waits_for_others = 1; /* Thread.join: the time is the workers' */
	}
	if (pick == n)
		pick = 0;
	*w = acc[pick].w;
	memset(&acc[pick].w, 0, sizeof(acc[pick].w));
	acc_release(acc, n);
	thread_facts(db, w);
	return 0;
}

void offcpu_wait_location(const struct offcpu_wait *w, struct strbuf *sb)
{
	if (w->py_own_function) {
		strbuf_addf(sb, "%s:%s", w->py_own_file, w->py_own_function);
		if (w->py_own_line > 0)
			strbuf_addf(sb, ":%d", w->py_own_line);
		return;
	}
	if (w->py_function) {
		if (w->py_file)
			strbuf_addf(sb, "%s:", w->py_file);
		strbuf_addstr(sb, w->py_function);
		if (w->py_line > 0)
			strbuf_addf(sb, ":%d", w->py_line);
		return;
	}
	if (w->file)
		strbuf_addf(sb, "%s:", w->file);
	else if (w->module)
		strbuf_addf(sb, "%s:", w->module);
	strbuf_addstr(sb, w->function);
	if (w->line > 0)
		strbuf_addf(sb, ":%d", w->line);
}

const char *offcpu_wait_function(const struct offcpu_wait *w)
{
	return w->py_own_function ? w->py_own_function
	       : w->py_function	  ? w->py_function
				  : w->function;
}

void offcpu_wait_advice(const struct offcpu_wait *w, struct strbuf *sb)
{
	const char *call = w->syscall ? w->syscall : w->blocking;
	int py = w->py_function != NULL;
	strbuf_addf(sb, "Make %s wait less: ", offcpu_wait_function(w));
	if (call && (strstr(call, "fsync") || strstr(call, "fdatasync") || strstr(call, "msync")) &&
	    w->count >= OFFCPU_MANY_WAITS)
		strbuf_addf(sb, py ? "it waits in %s for the disk to make each write durable (a "
				     "commit or an fsync per item); make one durable write for many "
				     "items: one transaction around many inserts (sqlite3: "
				     "executemany, then a single commit), or flush and fsync once per "
				     "batch"
				   : "it waits in %s for the disk to make each write durable (a "
				     "commit or an fsync per item); make one durable write for many "
				     "items: one transaction per batch, or one fsync after many "
				     "writes",
			    call);
	else if (w->state == 'D')
		strbuf_addstr(sb, py ? "it waits for disk or other I/O; read or write in bigger "
				       "batches, cache what is read again, or overlap the I/O with "
				       "work (a thread pool, asyncio)"
				     : "it waits for disk or other I/O; read or write in bigger "
				       "batches, cache what is read again, or issue the I/O "
				       "asynchronously (a thread, io_uring) and overlap it with work");
	else if (strstr(call, "sleep"))
		strbuf_addstr(sb, py ? "it sleeps on purpose (time.sleep); wait on the event itself "
				       "(threading.Event.wait, queue.Queue.get, an asyncio.Event) "
				       "instead of polling, or shorten the sleeps"
				     : "it sleeps on purpose; replace fixed sleeps and polling "
				       "loops with waiting on the event itself (a condition, a pipe, "
				       "epoll), or shorten them");
	else if (strstr(call, "futex") || strstr(call, "pthread") || strstr(call, "sem_"))
		strbuf_addstr(sb, py ? "it waits on a lock, condition or queue another thread holds "
				       "or fills (threading.Lock, Condition, Queue, the GIL); shorten "
				       "the critical section, or hand work over in batches"
				     : "it waits on a lock or condition another thread holds; shorten "
				       "the critical section, split the lock, or hand work over in "
				       "batches");
	else
		strbuf_addf(sb, py ? "it blocks in %s (network, pipe or file); overlap the waits "
				     "(a thread pool, or asyncio.gather bounded by a Semaphore) or "
				     "make fewer round trips"
				   : "it blocks in %s (network, pipe or device); overlap the waits "
				     "(concurrent requests, non-blocking I/O) or make fewer round trips",
			    call);
	strbuf_addstr(sb, "; offcpu.svg and report.json offcpu.waits show every waiting stack");
}

static const char *state_words(char s)
{
	switch (s) {
	case 'S': return "sleeping (S: a wait the program asked for)";
	case 'D': return "uninterruptible (D: disk or other I/O)";
	case 'I': return "idle (I)";
	case 'T': return "stopped (T)";
	case 'X': return "exiting";
	default: return "state unknown";
	}
}

void offcpu_wait_describe(const struct offcpu_wait *w, struct strbuf *sb)
{
	if (w->py_own_function) {
		const char *base = strrchr(w->py_own_file, '/');
		strbuf_addstr(sb, w->py_own_function);
		if (w->py_own_line > 0)
			strbuf_addf(sb, " (%s:%d)", base ? base + 1 : w->py_own_file,
				    w->py_own_line);
		strbuf_addstr(sb, " through ");
	}
	if (w->py_function) {
		const char *base = w->py_file ? strrchr(w->py_file, '/') : NULL;
		strbuf_addstr(sb, w->py_function);
		if (w->py_file && w->py_line > 0)
			strbuf_addf(sb, " (%s:%d), in ", base ? base + 1 : w->py_file, w->py_line);
		else
			strbuf_addstr(sb, ", in ");
	}
	strbuf_addstr(sb, w->function);
	if (w->file && w->line > 0) {
		const char *base = strrchr(w->file, '/');
		strbuf_addf(sb, " (%s:%d)", base ? base + 1 : w->file, w->line);
	}
	if (strcmp(w->blocking, w->function))
		strbuf_addf(sb, " blocked in %s", w->blocking);
	if (w->syscall && strcmp(w->syscall, w->blocking))
		strbuf_addf(sb, " (%s system call)", w->syscall);
	strbuf_addf(sb, ", %s", state_words(w->state));
}

/* ---- the report section ---- */

static json_t *str_or_null(const char *s)
{
	return s ? report_string(s, strlen(s)) : json_null();
}

static json_t *states_json(sqlite3 *db)
{
	json_t *o = json_object();
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT state, SUM(ns) FROM offcpu_states GROUP BY state", -1,
			       &st, NULL) != SQLITE_OK)
		return o;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		if (s)
			json_object_set_new(o, s, json_real((double)sqlite3_column_int64(st, 1) / 1e9));
	}
	sqlite3_finalize(st);
	return o;
}

/* The threads with most time off the CPU; with states known, that time
 * split into runnable (preempted, queued for a CPU) and blocked (a wait of
 * its own). */
static json_t *threads_json(sqlite3 *db, int states)
{
	json_t *list = json_array();
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT o.pid, o.tid, (SELECT name FROM threads t WHERE t.tid = o.tid"
			       " LIMIT 1), last_ns - first_ns, on_cpu_ns, off_cpu_ns,"
			       " (SELECT coalesce(sum(ns), 0) FROM offcpu_states s WHERE s.tid = o.tid"
			       " AND s.pid = o.pid AND s.state = 'R') FROM"
			       " offcpu_threads o ORDER BY off_cpu_ns DESC LIMIT ?",
			       -1, &st, NULL) != SQLITE_OK)
		return list;
	sqlite3_bind_int(st, 1, OFFCPU_THREADS_SHOWN);
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *o = json_object();
		double life = (double)sqlite3_column_int64(st, 3) / 1e9;
		double off = (double)sqlite3_column_int64(st, 5) / 1e9;
		json_object_set_new(o, "pid", json_integer(sqlite3_column_int64(st, 0)));
		json_object_set_new(o, "tid", json_integer(sqlite3_column_int64(st, 1)));
		const char *name = (const char *)sqlite3_column_text(st, 2);
		json_object_set_new(o, "name", str_or_null(name));
		json_object_set_new(o, "observed_s", json_real(life));
		json_object_set_new(o, "on_cpu_s", json_real((double)sqlite3_column_int64(st, 4) / 1e9));
		json_object_set_new(o, "off_cpu_s", json_real(off));
		json_object_set_new(o, "off_cpu_pct", life > 0 ? json_real(100.0 * off / life)
							       : json_null());
		if (states) {
			double runnable = (double)sqlite3_column_int64(st, 6) / 1e9;
			json_object_set_new(o, "runnable_s", json_real(runnable));
			json_object_set_new(o, "blocked_s",
					    json_real(off > runnable ? off - runnable : 0));
		}
		json_array_append_new(list, o);
	}
	sqlite3_finalize(st);
	return list;
}

static int offcpu_run(struct analysis_ctx *ctx)
{
	sqlite3 *db = ctx->db;
	if (!recording_has_table(db, "offcpu_threads"))
		return 0;
	json_t *o = json_object();
	char *event = recording_meta_text(db, "offcpu_event");
	json_object_set_new(o, "event", str_or_null(event));
	free(event);
	json_object_set_new(o, "by_state_s", states_json(db));
	int64_t known = 1;
	recording_meta_int(db, "offcpu_state_known", &known);
	json_object_set_new(o, "threads", threads_json(db, known != 0));
	json_t *waits = json_array();
	struct wait_acc *acc;
	size_t n;
	double wall_s = report_wall_s(db);
	if (!load_waits(db, &acc, &n)) {
		for (size_t i = 0; i < n && i < OFFCPU_WAITS_SHOWN; i++) {
			const struct offcpu_wait *w = &acc[i].w;
			json_t *x = json_object();
			json_object_set_new(x, "function", str_or_null(w->function));
			json_object_set_new(x, "file", str_or_null(w->file));
			json_object_set_new(x, "line", w->line > 0 ? json_integer(w->line) : json_null());
			json_object_set_new(x, "module", str_or_null(w->module));
			json_object_set_new(x, "blocking_call", str_or_null(w->blocking));
			json_object_set_new(x, "syscall", str_or_null(w->syscall));
			char st[2] = { w->state, 0 };
			json_object_set_new(x, "state", json_string(st));
			json_object_set_new(x, "seconds", json_real(w->seconds));
			json_object_set_new(x, "count", json_integer(w->count));
			json_object_set_new(x, "wall_pct", wall_s > 0 ? json_real(100.0 * w->seconds / wall_s)
								      : json_null());
			json_object_set_new(x, "tid", json_integer(acc[i].w.tid));
			json_object_set_new(x, "waits_for_others", json_boolean(w->waits_for_others));
			json_array_append_new(waits, x);
		}
		acc_release(acc, n);
	}
	json_object_set_new(o, "waits", waits);
	json_object_set_new(ctx->report, "offcpu", o);
	return 0;
}

const struct analysis_ops analysis_offcpu = { .name = "offcpu", .run = offcpu_run };
