/* syscall_python: the Python line behind each busy system-call site.
 *
 * The syscalls probe charges a call to its native stack, which in a Python
 * program ends in the interpreter (_Py_read under FileIO.readline). The
 * python probe's samples of the same thread while that site was making its
 * calls (between its first and last call) say which Python line was running:
 * the innermost frame of the program's own code (frames.h) most of those
 * samples were in. Only a site busy enough that every sample of the window
 * likely fell while it was calling (at least SYSCALL_PY_MIN_CALLS calls, and
 * SYSCALL_PY_PER_PERIOD per sampling period of the window: a tight loop of
 * tiny reads, not a file read now and then over a long run) gets a row. */
#include "derive.h"
#include "../analysis/frames.h"
#include "../record/reader.h"
#include "../record/recorder.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define SYSCALL_PY_MIN_CALLS 100
#define SYSCALL_PY_PER_PERIOD 2
#define SYSCALL_PY_DEPTH 256

static const char syscall_python_schema[] =
    "CREATE TABLE IF NOT EXISTS syscall_python(pid INTEGER, name TEXT, node INTEGER,"
    " function TEXT, file TEXT, line INTEGER, samples INTEGER);";

/* The frame row of the innermost own Python frame of node (else its
 * innermost Python frame); 0 when it has none. */
static int64_t own_frame(sqlite3_stmt *walk, int64_t node)
{
	int64_t first_py = 0;
	for (int depth = 0; node > 0 && depth < SYSCALL_PY_DEPTH; depth++) {
		sqlite3_reset(walk);
		sqlite3_bind_int64(walk, 1, node);
		if (sqlite3_step(walk) != SQLITE_ROW)
			break;
		node = sqlite3_column_int64(walk, 0);
		const char *kind = (const char *)sqlite3_column_text(walk, 2);
		const char *file = (const char *)sqlite3_column_text(walk, 3);
		if (!kind || strcmp(kind, "python"))
			continue;
		int64_t frame = sqlite3_column_int64(walk, 1);
		if (!first_py)
			first_py = frame;
		if (file && frame_python_is_own(file))
			return frame;
	}
	return first_py;
}

/* The frame most of the thread's Python samples in [from, to] were in; its
 * sample count in *count. 0 when none. */
static int64_t busiest_frame(sqlite3_stmt *samples, sqlite3_stmt *walk, int64_t pid, int64_t tid,
			     int64_t from, int64_t to, int64_t *count)
{
	struct hashmap per_frame = HASHMAP_INIT;
	int64_t best = 0, best_n = 0;
	sqlite3_reset(samples);
	sqlite3_bind_int64(samples, 1, pid);
	sqlite3_bind_int64(samples, 2, tid);
	sqlite3_bind_int64(samples, 3, from);
	sqlite3_bind_int64(samples, 4, to);
	while (sqlite3_step(samples) == SQLITE_ROW) {
		int64_t frame = own_frame(walk, sqlite3_column_int64(samples, 0));
		int64_t n = sqlite3_column_int64(samples, 1);
		if (!frame)
			continue;
		int64_t *at = hashmap_get(&per_frame, &frame, sizeof(frame));
		int64_t total = (at ? *at : 0) + n;
		hashmap_put(&per_frame, &frame, sizeof(frame), total);
		if (total > best_n) {
			best_n = total;
			best = frame;
		}
	}
	hashmap_release(&per_frame);
	*count = best_n;
	return best;
}

static int64_t syscall_python_run(const struct derive_ctx *ctx, struct strbuf *why)
{
	sqlite3_stmt *sites = NULL, *samples = NULL, *walk = NULL, *frame = NULL, *ins = NULL;
	int64_t rows = 0;
	(void)why;
	int64_t rate_hz = 0;
	if (recording_meta_int(ctx->db, "python_rate_hz", &rate_hz) || rate_hz <= 0)
		goto out; /* no Python sampled */
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT pid, tid, name, node, first_ns, last_ns FROM syscalls"
			       " WHERE calls >= ? AND node > 0"
			       " AND calls * 1e9 >= ? * (last_ns - first_ns + 1)",
			       -1, &sites, NULL) != SQLITE_OK)
		goto out; /* no syscalls table: the probe did not run */
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT node, count(*) FROM samples WHERE source = 'python'"
			       " AND pid = ? AND tid = ? AND t_ns BETWEEN ? AND ? GROUP BY node",
			       -1, &samples, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ctx->db,
			       "SELECT n.parent, n.frame, f.kind, f.file FROM stack_nodes n"
			       " JOIN frames f ON f.id = n.frame WHERE n.id = ?",
			       -1, &walk, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ctx->db, "SELECT function, file, line FROM frames WHERE id = ?", -1,
			       &frame, NULL) != SQLITE_OK)
		goto out; /* no Python samples */
	if (recorder_schema(ctx->rec, syscall_python_schema) ||
	    sqlite3_prepare_v2(ctx->db, "INSERT INTO syscall_python VALUES(?,?,?,?,?,?,?)", -1,
			       &ins, NULL) != SQLITE_OK) {
		strbuf_addstr(why, "cannot write the syscall_python table");
		rows = -1;
		goto out;
	}
	sqlite3_bind_int64(sites, 1, SYSCALL_PY_MIN_CALLS);
	sqlite3_bind_int64(sites, 2, SYSCALL_PY_PER_PERIOD * rate_hz);
	while (sqlite3_step(sites) == SQLITE_ROW) {
		int64_t n = 0;
		int64_t best = busiest_frame(
		    samples, walk, sqlite3_column_int64(sites, 0), sqlite3_column_int64(sites, 1),
		    sqlite3_column_int64(sites, 4), sqlite3_column_int64(sites, 5), &n);
		if (!best)
			continue;
		sqlite3_reset(frame);
		sqlite3_bind_int64(frame, 1, best);
		if (sqlite3_step(frame) != SQLITE_ROW)
			continue;
		sqlite3_reset(ins);
		sqlite3_bind_int64(ins, 1, sqlite3_column_int64(sites, 0));
		sqlite3_bind_value(ins, 2, sqlite3_column_value(sites, 2));
		sqlite3_bind_int64(ins, 3, sqlite3_column_int64(sites, 3));
		sqlite3_bind_value(ins, 4, sqlite3_column_value(frame, 0));
		sqlite3_bind_value(ins, 5, sqlite3_column_value(frame, 1));
		sqlite3_bind_value(ins, 6, sqlite3_column_value(frame, 2));
		sqlite3_bind_int64(ins, 7, n);
		recorder_step(ctx->rec, ins);
		rows++;
	}
out:
	sqlite3_finalize(sites);
	sqlite3_finalize(samples);
	sqlite3_finalize(walk);
	sqlite3_finalize(frame);
	sqlite3_finalize(ins);
	return rows;
}

static const char *const syscall_python_reads[] = {"syscalls", "samples:python", NULL};
static const char *const syscall_python_writes[] = {"syscall_python", NULL};

const struct derive_pass derive_syscall_python = {
    .name = "syscall_python",
    .summary = "the Python line behind each busy system-call site",
    .reads = syscall_python_reads,
    .writes = syscall_python_writes,
    .run = syscall_python_run,
};
