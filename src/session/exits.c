/* exits: taskstats records filtered to the target's process tree. */
#include "exits.h"
#include "../record/recorder.h"
#include "../target/proctree.h"
#include "../target/taskstats.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records whose parent is not known yet wait this long for it to show up
 * (a short-lived child usually exits before its short-lived parent). */
#define EXITS_PENDING_MAX 1024
#define EXITS_PENDING_NS (5 * 1000000000LL)

static const char exits_schema[] =
	"CREATE TABLE IF NOT EXISTS task_exits(t_ns INTEGER, pid INTEGER, tid INTEGER,"
	" ppid INTEGER, comm TEXT, exit_code INTEGER, user_ns INTEGER, sys_ns INTEGER,"
	" runq_wait_ns INTEGER, vcsw INTEGER, ivcsw INTEGER, minflt INTEGER, majflt INTEGER,"
	" hiwater_rss_bytes INTEGER, rchar INTEGER, wchar INTEGER, read_bytes INTEGER,"
	" write_bytes INTEGER, cpu_exact INTEGER, syscr INTEGER, syscw INTEGER);";

struct pending {
	struct task_exit e;
	int64_t seen_ns;
};

struct exits {
	struct taskstats_listener *ts;
	struct recorder *rec;
	struct proctree *tree;
	sqlite3_stmt *insert;
	int64_t start_ns, now_ns, lost;
	struct pending pending[EXITS_PENDING_MAX];
	size_t npending;
	exits_added_fn added;
	void *added_data;
	int found_by_exit; /* set by claim() for a process it added */
};

int exits_open(struct exits **out, struct recorder *rec, struct proctree *tree,
	       int64_t start_ns, struct strbuf *why)
{
	struct exits *ex = xcalloc(1, sizeof(*ex));
	ex->rec = rec;
	ex->tree = tree;
	ex->start_ns = start_ns;
	if (taskstats_open(&ex->ts, why))
		goto fail;
	if (recorder_schema(rec, exits_schema) || !recorder_db(rec) ||
	    sqlite3_prepare_v2(recorder_db(rec),
			       "INSERT INTO task_exits VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &ex->insert, NULL) != SQLITE_OK) {
		strbuf_addstr(why, "cannot create the task_exits table");
		goto fail;
	}
	*out = ex;
	return 0;
fail:
	exits_close(ex);
	return -1;
}

void exits_close(struct exits *ex)
{
	if (!ex)
		return;
	taskstats_close(ex->ts);
	sqlite3_finalize(ex->insert);
	free(ex);
}

int64_t exits_lost(const struct exits *ex)
{
	return ex->lost;
}

static void write_exit(struct exits *ex, const struct task_exit *e)
{
	sqlite3_stmt *q = ex->insert;
	int64_t v[] = { e->user_ns, e->sys_ns,	   e->runq_wait_ns,	 e->vcsw,
			e->ivcsw,   e->minflt,	   e->majflt,		 e->hiwater_rss_bytes,
			e->rchar,   e->wchar,	   e->read_bytes,	 e->write_bytes };
	sqlite3_bind_int64(q, 1, ex->now_ns - ex->start_ns);
	/* Keyed here (process_key.h): the record comes after its process
	 * ended, maybe after its pid was given again. */
	const struct proc_entry *pe =
		proctree_find_exited(ex->tree, e->pid, e->elapsed_ns, ex->now_ns);
	const struct proc_entry *parent = proctree_find(ex->tree, e->ppid);
	sqlite3_bind_int(q, 2, pe ? pe->key : e->pid);
	sqlite3_bind_int(q, 3, e->tid);
	sqlite3_bind_int(q, 4, parent ? parent->key : e->ppid);
	sqlite3_bind_text(q, 5, e->comm, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(q, 6, e->exit_code);
	for (int i = 0; i < 12; i++)
		sqlite3_bind_int64(q, 7 + i, v[i]);
	sqlite3_bind_int(q, 19, e->cpu_exact);
	sqlite3_bind_int64(q, 20, e->syscr);
	sqlite3_bind_int64(q, 21, e->syscw);
	recorder_step(ex->rec, q);
}

/* 1 when the record belongs to the tree (adding its process if it is new). */
static int claim(struct exits *ex, const struct task_exit *e)
{
	if (proctree_find(ex->tree, e->pid))
		return 1;
	int parent_known = e->ppid == ex->tree->root || proctree_find(ex->tree, e->ppid);
	if (!parent_known || e->tid != e->pid)
		return 0;
	if (ex->tree->no_descendants && (ex->tree->include_root || e->ppid != ex->tree->root))
		return 0;
	/* A process that came and went between two /proc scans. */
	struct proc_entry *pe = proctree_add(ex->tree, e->pid, e->ppid, ex->now_ns);
	if (!pe)
		return 0;
	snprintf(pe->comm, sizeof(pe->comm), "%s", e->comm);
	pe->gone_ns = ex->now_ns;
	ex->found_by_exit = 1;
	return 1;
}

static void take(struct exits *ex, const struct task_exit *e)
{
	write_exit(ex, e);
	if (e->tid == e->pid && ex->added)
		ex->added(ex->added_data, e, ex->found_by_exit);
	ex->found_by_exit = 0;
}

static void on_exit_record(void *data, const struct task_exit *e)
{
	struct exits *ex = data;
	if (claim(ex, e)) {
		take(ex, e);
		return;
	}
	if (ex->npending == EXITS_PENDING_MAX) {
		/* Mostly other programs' exits: drop the older half at once. */
		size_t half = EXITS_PENDING_MAX / 2;
		memmove(ex->pending, ex->pending + half, half * sizeof(ex->pending[0]));
		ex->npending = half;
	}
	ex->pending[ex->npending++] = (struct pending){ *e, ex->now_ns };
}

void exits_drain(struct exits *ex, int64_t now_ns, exits_added_fn added, void *data)
{
	ex->now_ns = now_ns;
	ex->added = added;
	ex->added_data = data;
	if (taskstats_drain(ex->ts, on_exit_record, ex) < 0)
		ex->lost++;
	/* Waiting records: claimed once their parent is known, dropped when old.
	 * Repeat while claims happen: a claimed parent may make its children known. */
	for (int changed = 1; changed;) {
		changed = 0;
		size_t keep = 0;
		for (size_t i = 0; i < ex->npending; i++) {
			struct pending *p = &ex->pending[i];
			if (claim(ex, &p->e)) {
				take(ex, &p->e);
				changed = 1;
			} else if (now_ns - p->seen_ns < EXITS_PENDING_NS) {
				ex->pending[keep++] = *p;
			}
		}
		ex->npending = keep;
	}
}
