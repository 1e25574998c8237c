/* syscall_track: pairing the raw_syscalls entries and exits, summed per call
 * site, errno and file. */
#include "syscall_track.h"
#include "../record/recorder.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include "syscall_names.h"
#endif

#define SYSCALL_PATH_MAX 512
#define SYSCALL_FILES_MAX 4096 /* files named per run; the calls to others are counted */

struct open_call {
	int64_t t_ns, arg0;
	long nr;
	int open;
};

struct errno_key {
	int32_t pid, nr, err, pad;
};

struct errno_row {
	struct errno_key key;
	int64_t calls, last_ns;
};

/* A row's calls in one stretch of the run. */
struct stretch_row {
	int32_t agg, pad;
	int64_t stretch; /* t_ns / SYSCALL_STRETCH_NS */
	uint64_t calls;
	int64_t total_ns, bytes;
};

struct file_row {
	int32_t pid, fd;
	char *path;
	uint64_t reads, writes;
	int64_t read_bytes, write_bytes;
};

struct syscall_tracker {
	syscall_file_fn file_of;
	void *arg;
	struct open_call *threads;
	size_t nthreads, allocthreads;
	struct hashmap thread_ids; /* tid -> index in threads */
	struct syscall_agg *aggs;
	size_t naggs, allocaggs;
	struct hashmap agg_ids; /* (pid, nr, stack) -> index in aggs */
	struct errno_row *errs;
	size_t nerrs, allocerrs;
	struct hashmap errnos; /* struct errno_key -> index in errs */
	struct file_row *files;
	size_t nfiles, allocfiles;
	struct hashmap file_ids; /* (pid, fd) -> index in files; -1 after a close */
	struct hashmap fd_gens;	 /* (pid, fd) -> closes seen */
	struct stretch_row *stretches;
	size_t nstretches, allocstretches;
	struct hashmap stretch_ids; /* (agg, stretch) -> index in stretches */
	uint64_t stretches_dropped; /* calls past SYSCALL_STRETCHES_MAX cells */
	uint64_t exits;
	long close_nr; /* close(2)'s number, -1 when not known */
};

const char *syscall_name(long nr, char *buf, size_t cap)
{
#if defined(__x86_64__)
	if (nr >= 0 && nr < SYSCALL_NAMES_N && syscall_names[nr])
		return syscall_names[nr];
#endif
	snprintf(buf, cap, "syscall_%ld", nr);
	return buf;
}

int syscall_moves_bytes(const char *name)
{
	static const char *const reads[] = {"read",    "pread64",  "readv",   "preadv",
					    "preadv2", "recvfrom", "recvmsg", NULL};
	static const char *const writes[] = {"write",	 "pwrite64", "writev",	"pwritev",
					     "pwritev2", "sendto",   "sendmsg", NULL};
	for (size_t i = 0; reads[i]; i++)
		if (!strcmp(name, reads[i]))
			return 1;
	for (size_t i = 0; writes[i]; i++)
		if (!strcmp(name, writes[i]))
			return 2;
	return 0;
}

int syscall_syncs_fd(const char *name)
{
	return !strcmp(name, "fsync") || !strcmp(name, "fdatasync") ||
	       !strcmp(name, "sync_file_range") || !strcmp(name, "syncfs");
}

struct syscall_tracker *syscall_tracker_new(syscall_file_fn file_of, void *arg)
{
	struct syscall_tracker *t = xcalloc(1, sizeof(*t));
	t->file_of = file_of;
	t->arg = arg;
	t->close_nr = -1;
	char buf[32];
	for (long nr = 0; nr < 1024 && t->close_nr < 0; nr++)
		if (!strcmp(syscall_name(nr, buf, sizeof(buf)), "close"))
			t->close_nr = nr;
	return t;
}

void syscall_tracker_free(struct syscall_tracker *t)
{
	if (!t)
		return;
	free(t->threads);
	hashmap_release(&t->thread_ids);
	free(t->aggs);
	hashmap_release(&t->agg_ids);
	hashmap_release(&t->errnos);
	free(t->errs);
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->files[i].path);
	free(t->files);
	hashmap_release(&t->file_ids);
	hashmap_release(&t->fd_gens);
	free(t->stretches);
	hashmap_release(&t->stretch_ids);
	free(t);
}

static struct open_call *thread_get(struct syscall_tracker *t, pid_t tid)
{
	int64_t *idx = hashmap_get(&t->thread_ids, &tid, sizeof(tid));
	if (idx)
		return &t->threads[*idx];
	if (t->nthreads == t->allocthreads) {
		t->allocthreads = t->allocthreads ? 2 * t->allocthreads : 64;
		t->threads = xrealloc(t->threads, t->allocthreads * sizeof(*t->threads));
	}
	t->threads[t->nthreads] = (struct open_call){0};
	hashmap_put(&t->thread_ids, &tid, sizeof(tid), (int64_t)t->nthreads);
	return &t->threads[t->nthreads++];
}

/* A closed fd's next use is another file. */
static void file_closed(struct syscall_tracker *t, pid_t pid, int fd)
{
	int32_t key[2] = {(int32_t)pid, (int32_t)fd};
	if (hashmap_get(&t->file_ids, key, sizeof(key)))
		hashmap_put(&t->file_ids, key, sizeof(key), -1);
	int64_t *gen = hashmap_get(&t->fd_gens, key, sizeof(key));
	hashmap_put(&t->fd_gens, key, sizeof(key), gen ? *gen + 1 : 1);
}

void syscall_tracker_enter(struct syscall_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, long nr,
			   int64_t arg0)
{
	struct open_call *c = thread_get(t, tid);
	*c = (struct open_call){.t_ns = t_ns, .arg0 = arg0, .nr = nr, .open = 1};
	/* Counted as the call begins, as the probe's pump counts them. */
	if (nr == t->close_nr && arg0 >= 0 && arg0 < (1 << 30))
		file_closed(t, pid, (int)arg0);
}

void syscall_tracker_thread_exit(struct syscall_tracker *t, pid_t tid)
{
	int64_t *idx = hashmap_get(&t->thread_ids, &tid, sizeof(tid));
	if (idx)
		t->threads[*idx].open = 0;
}

static struct syscall_agg *agg_get(struct syscall_tracker *t, pid_t pid, long nr, uint32_t stack,
				   int32_t file)
{
	int32_t key[4] = {(int32_t)pid, (int32_t)nr, (int32_t)stack, file};
	int64_t *idx = hashmap_get(&t->agg_ids, key, sizeof(key));
	if (idx)
		return &t->aggs[*idx];
	if (t->naggs == t->allocaggs) {
		t->allocaggs = t->allocaggs ? 2 * t->allocaggs : 256;
		t->aggs = xrealloc(t->aggs, t->allocaggs * sizeof(*t->aggs));
	}
	t->aggs[t->naggs] = (struct syscall_agg){
	    .pid = (int32_t)pid, .nr = (int32_t)nr, .stack = stack, .file = file, .first_ns = -1};
	hashmap_put(&t->agg_ids, key, sizeof(key), (int64_t)t->naggs);
	return &t->aggs[t->naggs++];
}

static struct file_row *file_get(struct syscall_tracker *t, pid_t pid, int fd)
{
	int32_t key[2] = {(int32_t)pid, (int32_t)fd};
	int64_t *idx = hashmap_get(&t->file_ids, key, sizeof(key));
	if (idx && *idx >= 0)
		return &t->files[*idx];
	if (t->nfiles == t->allocfiles) {
		t->allocfiles = t->allocfiles ? 2 * t->allocfiles : 64;
		t->files = xrealloc(t->files, t->allocfiles * sizeof(*t->files));
	}
	struct file_row *f = &t->files[t->nfiles];
	*f = (struct file_row){.pid = (int32_t)pid, .fd = (int32_t)fd};
	char path[SYSCALL_PATH_MAX];
	int64_t *gen = hashmap_get(&t->fd_gens, key, sizeof(key));
	if (t->file_of && !t->file_of(t->arg, pid, fd, gen ? *gen : 0, path, sizeof(path)))
		f->path = xstrdup(path);
	hashmap_put(&t->file_ids, key, sizeof(key), (int64_t)t->nfiles);
	return &t->files[t->nfiles++];
}

/* The index in t->files of a byte-moving call's file (dir 1 or 2) or a
 * flushed one (dir 0, syncs), or -1. */
static int32_t exit_file(struct syscall_tracker *t, pid_t pid, const struct open_call *c, int dir,
			 int syncs, int64_t ret)
{
	if ((!dir && !syncs) || ret < 0 || c->arg0 < 0 || c->arg0 >= (1 << 30))
		return -1;
	int32_t key[2] = {(int32_t)pid, (int32_t)c->arg0};
	int64_t *known = hashmap_get(&t->file_ids, key, sizeof(key));
	if ((!known || *known < 0) && t->nfiles >= SYSCALL_FILES_MAX)
		return -1; /* a server's ten thousandth connection: counted, not named */
	struct file_row *f = file_get(t, pid, (int)c->arg0);
	if (dir == 1) {
		f->reads++;
		f->read_bytes += ret;
	} else if (dir == 2) {
		f->writes++;
		f->write_bytes += ret;
	}
	return (int32_t)(f - t->files);
}

static void stretch_add(struct syscall_tracker *t, int32_t agg, int64_t t_ns, int64_t ns,
			int64_t bytes)
{
	int64_t key[2] = {agg, t_ns >= 0 ? t_ns / SYSCALL_STRETCH_NS : 0};
	int64_t *idx = hashmap_get(&t->stretch_ids, key, sizeof(key));
	if (!idx) {
		if (t->nstretches >= SYSCALL_STRETCHES_MAX) {
			t->stretches_dropped++;
			return;
		}
		if (t->nstretches == t->allocstretches) {
			t->allocstretches = t->allocstretches ? 2 * t->allocstretches : 256;
			t->stretches =
			    xrealloc(t->stretches, t->allocstretches * sizeof(*t->stretches));
		}
		t->stretches[t->nstretches] = (struct stretch_row){.agg = agg, .stretch = key[1]};
		idx = hashmap_put(&t->stretch_ids, key, sizeof(key), (int64_t)t->nstretches++);
	}
	struct stretch_row *s = &t->stretches[*idx];
	s->calls++;
	s->total_ns += ns;
	s->bytes += bytes;
}

void syscall_tracker_exit(struct syscall_tracker *t, pid_t pid, pid_t tid, int64_t t_ns, long nr,
			  int64_t ret, uint32_t stack)
{
	struct open_call *c = thread_get(t, tid);
	int timed = c->open && c->nr == nr && t_ns >= c->t_ns;
	c->open = 0;
	char buf[32];
	const char *name = syscall_name(nr, buf, sizeof(buf));
	int dir = syscall_moves_bytes(name);
	int failed = ret < 0 && ret >= -4095;
	/* Without its entry the call's fd is not known. */
	int32_t file =
	    timed && !failed ? exit_file(t, pid, c, dir, syscall_syncs_fd(name), ret) : -1;
	struct syscall_agg *a = agg_get(t, pid, nr, stack, file);
	t->exits++;
	if (!a->calls++) {
		a->tid = (int32_t)tid;
		a->first_ns = t_ns;
	}
	a->last_ns = t_ns;
	int64_t moved = dir && !failed ? ret : 0;
	stretch_add(t, (int32_t)(a - t->aggs), t_ns, timed ? t_ns - c->t_ns : 0, moved);
	if (timed) {
		int64_t ns = t_ns - c->t_ns;
		a->total_ns += ns;
		if (ns > a->max_ns)
			a->max_ns = ns;
	} else {
		a->untimed++;
	}
	if (failed) {
		a->errors++;
		struct errno_key k = {(int32_t)pid, (int32_t)nr, (int32_t)-ret, 0};
		int64_t *idx = hashmap_get(&t->errnos, &k, sizeof(k));
		if (!idx) {
			if (t->nerrs == t->allocerrs) {
				t->allocerrs = t->allocerrs ? 2 * t->allocerrs : 32;
				t->errs = xrealloc(t->errs, t->allocerrs * sizeof(*t->errs));
			}
			t->errs[t->nerrs] = (struct errno_row){.key = k};
			idx = hashmap_put(&t->errnos, &k, sizeof(k), (int64_t)t->nerrs++);
		}
		t->errs[*idx].calls++;
		t->errs[*idx].last_ns = t_ns;
		return;
	}
	if (dir)
		a->bytes += ret;
}

size_t syscall_tracker_aggs(const struct syscall_tracker *t, const struct syscall_agg **out)
{
	*out = t->aggs;
	return t->naggs;
}

uint64_t syscall_tracker_calls(const struct syscall_tracker *t)
{
	return t->exits;
}

static const char syscall_schema[] =
    "CREATE TABLE IF NOT EXISTS syscalls(pid INTEGER, tid INTEGER, name TEXT, node INTEGER,"
    " calls INTEGER, errors INTEGER, untimed INTEGER, total_ns INTEGER, max_ns INTEGER,"
    " bytes INTEGER, first_ns INTEGER, last_ns INTEGER, path TEXT, id INTEGER);"
    "CREATE TABLE IF NOT EXISTS syscall_timeline(pid INTEGER, id INTEGER, t_ns INTEGER,"
    " calls INTEGER, total_ns INTEGER, bytes INTEGER);"
    "CREATE TABLE IF NOT EXISTS syscall_errors(pid INTEGER, name TEXT, errno INTEGER,"
    " calls INTEGER, last_ns INTEGER);"
    "CREATE TABLE IF NOT EXISTS syscall_files(pid INTEGER, fd INTEGER, path TEXT,"
    " reads INTEGER, read_bytes INTEGER, writes INTEGER, write_bytes INTEGER);";

static sqlite3_stmt *prepare(struct recorder *rec, const char *sql)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db = recorder_db(rec);
	if (!db || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	return st;
}

static void write_errnos(struct syscall_tracker *t, struct recorder *rec)
{
	sqlite3_stmt *st = prepare(rec, "INSERT INTO syscall_errors VALUES(?,?,?,?,?)");
	char buf[32];
	for (size_t i = 0; st && i < t->nerrs; i++) {
		const struct errno_row *e = &t->errs[i];
		sqlite3_bind_int64(st, 1, e->key.pid);
		sqlite3_bind_text(st, 2, syscall_name(e->key.nr, buf, sizeof(buf)), -1,
				  SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3, e->key.err);
		sqlite3_bind_int64(st, 4, e->calls);
		sqlite3_bind_int64(st, 5, e->last_ns);
		recorder_step(rec, st);
	}
	sqlite3_finalize(st);
}

static void write_stretches(struct syscall_tracker *t, struct recorder *rec)
{
	sqlite3_stmt *st = prepare(rec, "INSERT INTO syscall_timeline VALUES(?,?,?,?,?,?)");
	for (size_t i = 0; st && i < t->nstretches; i++) {
		const struct stretch_row *s = &t->stretches[i];
		sqlite3_bind_int64(st, 1, t->aggs[s->agg].pid);
		sqlite3_bind_int64(st, 2, s->agg);
		sqlite3_bind_int64(st, 3, s->stretch * SYSCALL_STRETCH_NS);
		sqlite3_bind_int64(st, 4, (int64_t)s->calls);
		sqlite3_bind_int64(st, 5, s->total_ns);
		sqlite3_bind_int64(st, 6, s->bytes);
		recorder_step(rec, st);
	}
	sqlite3_finalize(st);
}

static void write_files(struct syscall_tracker *t, struct recorder *rec)
{
	sqlite3_stmt *st = prepare(rec, "INSERT INTO syscall_files VALUES(?,?,?,?,?,?,?)");
	for (size_t i = 0; st && i < t->nfiles; i++) {
		const struct file_row *f = &t->files[i];
		sqlite3_bind_int64(st, 1, f->pid);
		sqlite3_bind_int64(st, 2, f->fd);
		if (f->path)
			sqlite3_bind_text(st, 3, f->path, -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(st, 3);
		sqlite3_bind_int64(st, 4, (int64_t)f->reads);
		sqlite3_bind_int64(st, 5, f->read_bytes);
		sqlite3_bind_int64(st, 6, (int64_t)f->writes);
		sqlite3_bind_int64(st, 7, f->write_bytes);
		recorder_step(rec, st);
	}
	sqlite3_finalize(st);
}

size_t syscall_tracker_write(struct syscall_tracker *t, struct recorder *rec,
			     int64_t (*node_of)(void *arg, uint32_t stack), void *arg)
{
	if (recorder_schema(rec, syscall_schema))
		return 0;
	sqlite3_stmt *st = prepare(rec, "INSERT INTO syscalls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	char buf[32];
	size_t rows = 0;
	for (size_t i = 0; st && i < t->naggs; i++) {
		const struct syscall_agg *a = &t->aggs[i];
		sqlite3_bind_int64(st, 1, a->pid);
		sqlite3_bind_int64(st, 2, a->tid);
		sqlite3_bind_text(st, 3, syscall_name(a->nr, buf, sizeof(buf)), -1,
				  SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 4,
				   node_of && a->stack != UINT32_MAX ? node_of(arg, a->stack) : 0);
		sqlite3_bind_int64(st, 5, (int64_t)a->calls);
		sqlite3_bind_int64(st, 6, (int64_t)a->errors);
		sqlite3_bind_int64(st, 7, (int64_t)a->untimed);
		sqlite3_bind_int64(st, 8, a->total_ns);
		sqlite3_bind_int64(st, 9, a->max_ns);
		sqlite3_bind_int64(st, 10, a->bytes);
		sqlite3_bind_int64(st, 11, a->first_ns);
		sqlite3_bind_int64(st, 12, a->last_ns);
		if (a->file >= 0 && t->files[a->file].path)
			sqlite3_bind_text(st, 13, t->files[a->file].path, -1, SQLITE_TRANSIENT);
		else if (a->file >= 0)
			sqlite3_bind_text(st, 13, "", 0, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 13);
		sqlite3_bind_int64(st, 14, (int64_t)i);
		recorder_step(rec, st);
		rows++;
	}
	sqlite3_finalize(st);
	write_stretches(t, rec);
	if (t->stretches_dropped)
		record_meta_int(rec, "syscalls_timeline_dropped_calls", (int64_t)t->stretches_dropped);
	write_errnos(t, rec);
	write_files(t, rec);
	return rows;
}
