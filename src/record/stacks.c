/* stacks: interned frames and prefix-tree stacks in the recording. */
#include "stacks.h"
#include "recorder.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

static const char stacks_schema[] =
	"CREATE TABLE IF NOT EXISTS frames(id INTEGER PRIMARY KEY, function TEXT, file TEXT,"
	" line INTEGER, module TEXT, kind TEXT);"
	"CREATE TABLE IF NOT EXISTS stack_nodes(id INTEGER PRIMARY KEY, parent INTEGER,"
	" frame INTEGER, depth INTEGER);"
	"CREATE TABLE IF NOT EXISTS samples(t_ns INTEGER, pid INTEGER, tid INTEGER,"
	" node INTEGER, source TEXT, weight INTEGER, on_cpu INTEGER, gil INTEGER);"
	"CREATE TABLE IF NOT EXISTS threads(pid INTEGER, tid INTEGER, name TEXT,"
	" PRIMARY KEY(pid, tid));";

struct stack_writer {
	struct recorder *rec;
	struct hashmap frames, nodes;
	struct hashmap given_names; /* (pid, tid) the program named */
	int64_t next_frame, next_node;
	sqlite3_stmt *st_frame, *st_node, *st_sample, *st_thread;
	sqlite3_stmt *st_samples; /* STACK_SAMPLES_ROWS rows in one statement */
};

/* Rows of stack_samples()'s one statement: a step, a reset and a clearing of
 * the bindings for that many samples instead of one each. */
#define STACK_SAMPLES_ROWS 8

struct stack_writer *stack_writer_new(struct recorder *rec)
{
	if (recorder_schema(rec, stacks_schema) || !recorder_db(rec))
		return NULL;
	struct stack_writer *sw = xcalloc(1, sizeof(*sw));
	sqlite3 *db = recorder_db(rec);
	sw->rec = rec;
	sw->next_frame = sw->next_node = 1;
	int ok = sqlite3_prepare_v2(db, "INSERT INTO frames VALUES(?,?,?,?,?,?)", -1, &sw->st_frame,
				    NULL) == SQLITE_OK &&
		 sqlite3_prepare_v2(db, "INSERT INTO stack_nodes VALUES(?,?,?,?)", -1, &sw->st_node,
				    NULL) == SQLITE_OK &&
		 sqlite3_prepare_v2(db, "INSERT INTO samples VALUES(?,?,?,?,?,?,?,?)", -1,
				    &sw->st_sample, NULL) == SQLITE_OK &&
		 sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO threads VALUES(?,?,?)", -1,
				    &sw->st_thread, NULL) == SQLITE_OK;
	struct strbuf rows = STRBUF_INIT;
	strbuf_addstr(&rows, "INSERT INTO samples VALUES");
	for (int i = 0; i < STACK_SAMPLES_ROWS; i++)
		strbuf_addstr(&rows, i ? ",(?,?,?,?,?,?,?,?)" : "(?,?,?,?,?,?,?,?)");
	ok = ok && sqlite3_prepare_v2(db, rows.buf, -1, &sw->st_samples, NULL) == SQLITE_OK;
	strbuf_release(&rows);
	if (!ok) {
		stack_writer_free(sw);
		return NULL;
	}
	return sw;
}

void stack_writer_free(struct stack_writer *sw)
{
	if (!sw)
		return;
	sqlite3_finalize(sw->st_frame);
	sqlite3_finalize(sw->st_node);
	sqlite3_finalize(sw->st_sample);
	sqlite3_finalize(sw->st_thread);
	sqlite3_finalize(sw->st_samples);
	hashmap_release(&sw->frames);
	hashmap_release(&sw->nodes);
	hashmap_release(&sw->given_names);
	free(sw);
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC); /* as recorder.c's bind_text */
	else
		sqlite3_bind_null(st, i);
}

int64_t stack_frame(struct stack_writer *sw, const struct frame_info *f)
{
	struct strbuf key = STRBUF_INIT;
	/* NUL-separated fields: no ambiguity between "a" "bc" and "ab" "c". */
	const char *fields[] = { f->function, f->file, f->module, f->kind };
	for (size_t i = 0; i < 4; i++) {
		strbuf_addstr(&key, fields[i] ? fields[i] : "\x01");
		strbuf_addch(&key, '\0');
	}
	strbuf_addf(&key, "%d", f->line);
	recorder_lock(sw->rec);
	int64_t *found = hashmap_get(&sw->frames, key.buf, key.len);
	int64_t id = found ? *found : 0;
	if (!found) {
		id = sw->next_frame++;
		sqlite3_bind_int64(sw->st_frame, 1, id);
		bind_text_or_null(sw->st_frame, 2, f->function ? f->function : "[unknown]");
		bind_text_or_null(sw->st_frame, 3, f->file);
		if (f->line > 0)
			sqlite3_bind_int(sw->st_frame, 4, f->line);
		else
			sqlite3_bind_null(sw->st_frame, 4);
		bind_text_or_null(sw->st_frame, 5, f->module);
		bind_text_or_null(sw->st_frame, 6, f->kind ? f->kind : "native");
		if (recorder_step(sw->rec, sw->st_frame))
			id = 0;
		else
			hashmap_put(&sw->frames, key.buf, key.len, id);
	}
	recorder_unlock(sw->rec);
	strbuf_release(&key);
	return id;
}

int64_t stack_intern(struct stack_writer *sw, const int64_t *frame_ids, size_t n)
{
	int64_t parent = 0;
	recorder_lock(sw->rec);
	for (size_t i = 0; i < n; i++) {
		int64_t key[2] = { parent, frame_ids[i] };
		int64_t *found = hashmap_get(&sw->nodes, key, sizeof(key));
		if (found) {
			parent = *found;
			continue;
		}
		int64_t id = sw->next_node++;
		sqlite3_bind_int64(sw->st_node, 1, id);
		sqlite3_bind_int64(sw->st_node, 2, parent);
		sqlite3_bind_int64(sw->st_node, 3, frame_ids[i]);
		sqlite3_bind_int64(sw->st_node, 4, (int64_t)i + 1);
		if (recorder_step(sw->rec, sw->st_node)) {
			parent = 0;
			goto out;
		}
		hashmap_put(&sw->nodes, key, sizeof(key), id);
		parent = id;
	}
out:
	recorder_unlock(sw->rec);
	return parent;
}

/* Binds s as the row whose first parameter is at (1-based). */
static void sample_bind(sqlite3_stmt *st, int at, const struct sample_info *s)
{
	sqlite3_bind_int64(st, at, s->t_ns);
	sqlite3_bind_int(st, at + 1, s->pid);
	sqlite3_bind_int(st, at + 2, s->tid);
	sqlite3_bind_int64(st, at + 3, s->node);
	bind_text_or_null(st, at + 4, s->source);
	sqlite3_bind_int64(st, at + 5, s->weight);
	if (s->on_cpu >= 0)
		sqlite3_bind_int(st, at + 6, s->on_cpu);
	else
		sqlite3_bind_null(st, at + 6);
	if (s->gil >= 0)
		sqlite3_bind_int(st, at + 7, s->gil);
	else
		sqlite3_bind_null(st, at + 7);
}

void stack_sample(struct stack_writer *sw, const struct sample_info *s)
{
	stack_samples(sw, s, 1);
}

void stack_samples(struct stack_writer *sw, const struct sample_info *v, size_t n)
{
	recorder_lock(sw->rec);
	for (; n >= STACK_SAMPLES_ROWS; n -= STACK_SAMPLES_ROWS, v += STACK_SAMPLES_ROWS) {
		for (int i = 0; i < STACK_SAMPLES_ROWS; i++)
			sample_bind(sw->st_samples, 1 + 8 * i, &v[i]);
		recorder_step(sw->rec, sw->st_samples);
	}
	for (size_t i = 0; i < n; i++) {
		sample_bind(sw->st_sample, 1, &v[i]);
		recorder_step(sw->rec, sw->st_sample);
	}
	recorder_unlock(sw->rec);
}

void stack_sample_taken(struct stack_writer *sw) { recorder_live_samples_add(sw->rec, 1); }

static void thread_name_write(struct stack_writer *sw, pid_t pid, pid_t tid, const char *name)
{
	sqlite3_bind_int(sw->st_thread, 1, pid);
	sqlite3_bind_int(sw->st_thread, 2, tid);
	bind_text_or_null(sw->st_thread, 3, name);
	recorder_step(sw->rec, sw->st_thread);
}

void stack_thread_name(struct stack_writer *sw, pid_t pid, pid_t tid, const char *name)
{
	recorder_lock(sw->rec);
	int32_t key[2] = { pid, tid };
	if (!hashmap_get(&sw->given_names, key, sizeof(key)))
		thread_name_write(sw, pid, tid, name);
	recorder_unlock(sw->rec);
}

void stack_thread_name_given(struct stack_writer *sw, pid_t pid, pid_t tid, const char *name)
{
	recorder_lock(sw->rec);
	int32_t key[2] = { pid, tid };
	hashmap_put(&sw->given_names, key, sizeof(key), 1);
	thread_name_write(sw, pid, tid, name);
	recorder_unlock(sw->rec);
}
