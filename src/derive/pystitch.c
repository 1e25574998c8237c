/* pystitch: the derive pass that joins Python stacks with the native frames
 * below them, into one picture of a Python program.
 *
 * The cpu probe samples native stacks (where Python code shows as the
 * interpreter's own functions); the python probe samples Python stacks (which
 * do not show time inside C extensions). For every cpu sample, the pass finds
 * the python sample of the same thread nearest in time (within 1.5 periods of
 * the python probe, from meta python_rate_hz) and writes a "mixed" sample: the
 * Python frames, then the native frames below the innermost frame of the
 * interpreter's evaluation machinery (the eval loop, call dispatch, frame
 * set-up: pyframes_is_machinery), kind "native": the C code a Python line
 * calls stays visible (the compiler and parser, json, re, a C extension, a
 * system call), the machinery that runs Python code does not. A cpu sample of
 * a thread with no Python frame at that time keeps its native stack. Analyses
 * and renderers prefer "mixed" when it exists (stackread.h). Writes meta
 * mixed_samples_stitched (the cpu samples given a Python stack) when it ran.
 *
 * Reads samples:cpu and samples:python; writes samples:mixed (derive.h). */
#define LOG_DOMAIN "python"
#include "derive.h"
#include "../record/reader.h"
#include "../record/recorder.h"
#include "../record/stacks.h"
#include "../symbols/pyframes.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define STITCH_DEPTH_MAX 4096

struct node_rec {
	int64_t parent, frame;
};

struct tick {
	int64_t t_ns, pid, tid, node;
	int waited; /* a python sample taken while its thread was off the CPU */
};

struct stitch {
	sqlite3 *db;
	struct node_rec *nodes; /* indexed by id */
	int64_t nnodes;
	unsigned char *interp;	/* indexed by frame id: INTERP_* */
	int64_t nframes;
	int64_t path[STITCH_DEPTH_MAX];
};

enum { INTERP_NO = 0, INTERP_CODE = 1, INTERP_MACHINERY = 2 };

static int64_t max_id(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int load_tables(struct stitch *sx)
{
	sqlite3_stmt *st;
	sx->nnodes = max_id(sx->db, "SELECT coalesce(max(id), 0) FROM stack_nodes") + 1;
	sx->nframes = max_id(sx->db, "SELECT coalesce(max(id), 0) FROM frames") + 1;
	if (sx->nnodes <= 0 || sx->nframes <= 0)
		return -1;
	sx->nodes = xcalloc((size_t)sx->nnodes, sizeof(*sx->nodes));
	sx->interp = xcalloc((size_t)sx->nframes, 1);
	if (sqlite3_prepare_v2(sx->db, "SELECT id, parent, frame FROM stack_nodes", -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		if (id > 0 && id < sx->nnodes)
			sx->nodes[id] = (struct node_rec){ sqlite3_column_int64(st, 1),
							  sqlite3_column_int64(st, 2) };
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(sx->db,
			       "SELECT id, module, function FROM frames WHERE kind != 'python'", -1,
			       &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		if (id <= 0 || id >= sx->nframes ||
		    !pyframes_is_interpreter((const char *)sqlite3_column_text(st, 1)))
			continue;
		sx->interp[id] = pyframes_is_machinery((const char *)sqlite3_column_text(st, 2))
					 ? INTERP_MACHINERY
					 : INTERP_CODE;
	}
	sqlite3_finalize(st);
	return 0;
}

/* Frame ids of node's stack, outermost first, into sx->path; the count. */
static size_t node_path(struct stitch *sx, int64_t node, int64_t *out, size_t cap)
{
	size_t n = 0;
	for (int64_t cur = node; cur > 0 && cur < sx->nnodes && n < cap; cur = sx->nodes[cur].parent)
		out[n++] = sx->nodes[cur].frame;
	for (size_t i = 0; i < n / 2; i++) {
		int64_t t = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = t;
	}
	return n;
}

static struct tick *load_ticks(sqlite3 *db, const char *source, size_t *n)
{
	sqlite3_stmt *st;
	size_t alloc = 1024;
	struct tick *v = xmalloc(alloc * sizeof(*v));
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT t_ns, pid, tid, node, coalesce(on_cpu, 1) != 1"
				   " FROM samples WHERE source = ? ORDER BY tid, t_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return v;
	sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (*n == alloc) {
			alloc *= 2;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		v[(*n)++] = (struct tick){ sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
					   sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
					   sqlite3_column_int(st, 4) };
	}
	sqlite3_finalize(st);
	return v;
}

/* The python tick of c's thread nearest in time, within max_gap, of those
 * taken while the thread ran; failing those, of any; NULL if none. A
 * thread waiting for a CPU on a busy machine was mostly preempted where the
 * kernel checks its time slice (a system call that reads a clock), and its
 * stack there, read again and again while it waits, is not where it runs:
 * on a loaded run it took a third of the cpu samples of a json-bound
 * method. *j walks py forward as c moves forward (both sorted by tid, then
 * time). */
static const struct tick *nearest(const struct tick *py, size_t npy, size_t *j,
				  const struct tick *c, int64_t max_gap)
{
	while (*j < npy && (py[*j].tid < c->tid || (py[*j].tid == c->tid && py[*j].t_ns < c->t_ns)))
		(*j)++;
	const struct tick *best[2] = { NULL, NULL }; /* ran, waited */
	int64_t gap_of[2] = { max_gap + 1, max_gap + 1 };
	for (int dir = -1; dir <= 1; dir += 2)
		for (size_t k = dir < 0 ? *j - 1 : *j; k < npy; k += (size_t)(ptrdiff_t)dir) {
			/* k wraps past 0 to SIZE_MAX: the loop ends */
			if (py[k].tid != c->tid)
				break;
			int64_t gap = py[k].t_ns > c->t_ns ? py[k].t_ns - c->t_ns
							   : c->t_ns - py[k].t_ns;
			if (gap > max_gap)
				break;
			int w = py[k].waited != 0;
			if (gap < gap_of[w]) {
				gap_of[w] = gap;
				best[w] = &py[k];
			}
			if (!w)
				break; /* the nearest that ran, on this side */
		}
	return best[0] ? best[0] : best[1];
}

/* Returns the number of mixed samples written (0 when there is nothing to
 * stitch: no cpu or no python samples), or -1 on a recording error. */
static int64_t python_stitch(struct recorder *rec, int64_t max_gap_ns)
{
	struct stack_writer *sw = recorder_stacks(rec);
	struct stitch sx = { .db = recorder_db(rec) };
	struct tick *py = NULL, *cpu = NULL;
	size_t npy = 0, ncpu = 0;
	int64_t written = -1, matched = 0;
	if (!sw || !sx.db)
		return -1;
	py = load_ticks(sx.db, "python", &npy);
	if (npy) /* a native program's cpu samples are not loaded for nothing */
		cpu = load_ticks(sx.db, "cpu", &ncpu);
	if (!npy || !ncpu) {
		written = 0;
		goto out;
	}
	if (load_tables(&sx))
		goto out;
	int64_t *mixed = xmalloc(2 * STITCH_DEPTH_MAX * sizeof(*mixed));
	size_t j = 0;
	written = 0;
	for (size_t i = 0; i < ncpu; i++) {
		const struct tick *c = &cpu[i];
		const struct tick *p = nearest(py, npy, &j, c, max_gap_ns);
		int64_t node = c->node;
		if (p) {
			size_t n = node_path(&sx, p->node, mixed, STITCH_DEPTH_MAX);
			size_t nn = node_path(&sx, c->node, sx.path, STITCH_DEPTH_MAX);
			/* The native frames below the innermost frame of the
			 * interpreter's machinery (or, when no frame is known as
			 * machinery, below its innermost frame). */
			size_t tail = 0, tail_any = 0;
			for (size_t k = nn; k-- > 0;) {
				int64_t f = sx.path[k];
				if (f <= 0 || f >= sx.nframes || !sx.interp[f])
					continue;
				if (!tail_any)
					tail_any = k + 1;
				if (sx.interp[f] == INTERP_MACHINERY) {
					tail = k + 1;
					break;
				}
			}
			if (tail == 0)
				tail = tail_any;
			if (tail == 0)
				tail = nn; /* no interpreter frame: the native stack is cut */
			for (size_t k = tail; k < nn && n < 2 * STITCH_DEPTH_MAX; k++)
				mixed[n++] = sx.path[k];
			node = stack_intern(sw, mixed, n);
			matched++;
		}
		if (!node)
			continue;
		struct sample_info si = { .t_ns = c->t_ns, .pid = (pid_t)c->pid, .tid = (pid_t)c->tid,
					  .node = node, .source = "mixed", .weight = 1,
					  .on_cpu = 1, .gil = -1 };
		stack_sample(sw, &si);
		written++;
	}
	free(mixed);
	log_info("stitched %lld of %zu cpu samples with Python stacks", (long long)matched, ncpu);
	record_meta_int(rec, "mixed_samples_stitched", matched);
out:
	free(py);
	free(cpu);
	free(sx.nodes);
	free(sx.interp);
	return written;
}

static int64_t pystitch_run(const struct derive_ctx *ctx, struct strbuf *why)
{
	/* The python probe's period (py_start); absent: the probe did not start. */
	int64_t hz;
	if (recording_meta_int(ctx->db, "python_rate_hz", &hz) || hz <= 0)
		return 0;
	int64_t period_ns = NS_PER_S / hz;
	int64_t n = python_stitch(ctx->rec, period_ns + period_ns / 2);
	if (n < 0)
		strbuf_addstr(why, "the recording could not be read or written");
	return n;
}

static const char *const pystitch_reads[] = { "samples:cpu", "samples:python", NULL };
static const char *const pystitch_writes[] = { "samples:mixed", NULL };

const struct derive_pass derive_pystitch = {
	.name = "pystitch",
	.summary = "Python stacks joined with the native frames below them (samples 'mixed')",
	.reads = pystitch_reads,
	.writes = pystitch_writes,
	.run = pystitch_run,
};
