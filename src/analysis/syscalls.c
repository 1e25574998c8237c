/* syscalls: the target's system calls (the syscalls probe's tables) as
 * `strace -c` lists them, by time, with each call's sites, its errors and
 * the files the byte-moving calls went to. Report key `syscalls`; findings:
 *
 * - io.syscall_storm: many tiny reads or writes (at least STORM_MIN_CALLS
 *   calls of a byte-moving call moving under STORM_MAX_MEAN_BYTES each), at
 *   the call site that made most of them;
 * - io.slow_sync: fsync and its kin taking a good share of the run;
 * - io.syscall_errors: a call that fails most of the times it is made.
 *
 * A Python program's call sites are its Python lines (table syscall_python,
 * the derive pass syscall_python) when the python probe sampled it. */
#include "analysis.h"
#include "frames.h"
#include "nodesite.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYS_LISTED 20
#define SYS_SITES 3
#define SYS_ERRNOS 10
#define SYS_FILES 10
#define STORM_MIN_CALLS 10000
#define STORM_MAX_MEAN_BYTES 4096
#define STORM_BLOCK_BYTES 65536 /* the buffer the advice suggests */
#define SYNC_MIN_S 0.05
#define SYNC_MIN_SHARE 0.05
#define ERRORS_MIN 100
#define ERRORS_MIN_SHARE 0.5

struct sys_call {
	char *name;
	int64_t calls, errors, untimed, total_ns, max_ns, bytes;
};

/* One call site of a call: where the program made it. */
struct sys_site {
	struct strbuf loc; /* by_file: "location<TAB>path" */
	int python;
	int64_t calls, total_ns, bytes;
};

/* A condition on a syscalls or syscall_errors row (alias s): the program's
 * own, not a wrapper's that started it (temp.wrapper_spans, program.h: the
 * rows of its pid that ended before the program took over). */
static const char *own_rows(sqlite3 *db)
{
	sqlite3_stmt *st;
	int any = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM temp.wrapper_spans LIMIT 1", -1, &st, NULL) ==
	    SQLITE_OK) {
		any = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
	}
	return any ? "NOT EXISTS(SELECT 1 FROM temp.wrapper_spans w WHERE w.pid = s.pid"
		     " AND s.last_ns < w.to_ns)"
		   : "1";
}

static sqlite3_stmt *prepare_own(sqlite3 *db, const char *table, const char *fmt)
{
	struct strbuf sql = STRBUF_INIT;
	strbuf_addf(&sql, fmt, own_rows(db));
	sqlite3_stmt *st = recording_prepare(db, table, sql.buf);
	strbuf_release(&sql);
	return st;
}

static const char *col(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	return s ? (const char *)s : "";
}

/* The Python line the derive pass found for a site, as "file:function:line". */
static int python_site(sqlite3 *db, int64_t pid, const char *name, int64_t node, struct strbuf *loc)
{
	sqlite3_stmt *st = recording_prepare(db, "syscall_python",
					     "SELECT function, file, line FROM syscall_python"
					     " WHERE pid = ? AND name = ? AND node = ?");
	int found = 0;
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, node);
	if (sqlite3_step(st) == SQLITE_ROW) {
		struct node_site s = {(char *)col(st, 0), (char *)col(st, 1), NULL,
				      sqlite3_column_int(st, 2)};
		node_site_location(loc, &s);
		found = 1;
	}
	sqlite3_finalize(st);
	return found;
}

/* Where a site is, in *loc: its Python line, else its native frame (nodesite.h).
 * 1 for a Python line. */
static int site_location(sqlite3 *db, int64_t pid, const char *name, int64_t node,
			 struct strbuf *loc)
{
	if (python_site(db, pid, name, node, loc))
		return 1;
	struct node_site s;
	char *leaf = NULL;
	json_t *stack = NULL;
	int py = 0;
	if (node > 0 && !node_site_load(db, node, &s, &leaf, &stack, &py)) {
		node_site_location(loc, &s);
		node_site_release(&s);
	}
	free(leaf);
	json_decref(stack);
	if (!loc->len)
		strbuf_addstr(loc, "[unknown]");
	return 0;
}

/* Where the call's slowest call was made, as a JSON string; NULL when unknown. */
static json_t *slowest_at(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st = prepare_own(db, "syscalls",
				       "SELECT pid, node FROM syscalls s WHERE name = ? AND %s"
				       " ORDER BY max_ns DESC LIMIT 1");
	json_t *at = NULL;
	if (!st)
		return NULL;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		struct strbuf loc = STRBUF_INIT;
		site_location(db, sqlite3_column_int64(st, 0), name, sqlite3_column_int64(st, 1),
			      &loc);
		at = report_string(loc.buf, loc.len);
		strbuf_release(&loc);
	}
	sqlite3_finalize(st);
	return at;
}

/* The call's sites, most calls first, those naming one location merged
 * (by_file: one location and one file). */
static size_t sites_load(sqlite3 *db, const char *name, int by_file, struct sys_site *out,
			 size_t cap)
{
	sqlite3_stmt *st = prepare_own(db, "syscalls",
				       "SELECT pid, node, sum(calls), sum(total_ns), sum(bytes),"
				       " coalesce(path, '') FROM syscalls s WHERE name = ? AND %s"
				       " GROUP BY pid, node, 6 ORDER BY sum(calls) DESC LIMIT 100");
	size_t n = 0;
	if (!st)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct strbuf loc = STRBUF_INIT;
		int python = site_location(db, sqlite3_column_int64(st, 0), name,
					   sqlite3_column_int64(st, 1), &loc);
		if (by_file)
			strbuf_addf(&loc, "\t%s", col(st, 5));
		size_t i = 0;
		while (i < n && strcmp(out[i].loc.buf, loc.buf))
			i++;
		if (i == n && n == cap) {
			strbuf_release(&loc);
			continue;
		}
		if (i == n)
			out[n++] = (struct sys_site){.loc = loc, .python = python};
		else
			strbuf_release(&loc);
		out[i].calls += sqlite3_column_int64(st, 2);
		out[i].total_ns += sqlite3_column_int64(st, 3);
		out[i].bytes += sqlite3_column_int64(st, 4);
	}
	sqlite3_finalize(st);
	return n;
}

static void sites_release(struct sys_site *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		strbuf_release(&v[i].loc);
}

static json_t *sites_json(const struct sys_site *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n && i < SYS_SITES; i++)
		json_array_append_new(a, json_pack("{s:o, s:I, s:f, s:b}", "location",
						   report_string(v[i].loc.buf, v[i].loc.len),
						   "calls", (json_int_t)v[i].calls, "seconds",
						   (double)v[i].total_ns / 1e9, "python",
						   v[i].python));
	return a;
}

static const char *errno_name(int err)
{
	const char *s = strerrorname_np(err);
	return s ? s : "E?";
}

static json_t *errors_json(sqlite3 *db)
{
	json_t *a = json_array();
	sqlite3_stmt *st =
	    prepare_own(db, "syscall_errors",
			"SELECT name, errno, sum(calls) FROM syscall_errors s WHERE %s"
			" GROUP BY name, errno ORDER BY 3 DESC LIMIT 10");
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		int err = sqlite3_column_int(st, 1);
		json_array_append_new(a, json_pack("{s:o, s:i, s:s, s:I}", "call",
						   report_string(col(st, 0), strlen(col(st, 0))),
						   "errno", err, "error", errno_name(err), "calls",
						   (json_int_t)sqlite3_column_int64(st, 2)));
	}
	sqlite3_finalize(st);
	return a;
}

static json_t *files_json(sqlite3 *db)
{
	json_t *a = json_array();
	sqlite3_stmt *st = recording_prepare(
	    db, "syscall_files",
	    "SELECT coalesce(path, '[fd ' || fd || ']'), pid, sum(reads), sum(read_bytes),"
	    " sum(writes), sum(write_bytes) FROM syscall_files GROUP BY pid, 1"
	    " HAVING sum(reads) + sum(writes) > 0 ORDER BY sum(read_bytes) + sum(write_bytes) DESC, sum(reads) + sum(writes) DESC"
	    " LIMIT 10");
	while (st && sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(
		    a, json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "path",
				 report_string(col(st, 0), strlen(col(st, 0))), "pid",
				 (json_int_t)sqlite3_column_int64(st, 1), "reads",
				 (json_int_t)sqlite3_column_int64(st, 2), "read_bytes",
				 (json_int_t)sqlite3_column_int64(st, 3), "writes",
				 (json_int_t)sqlite3_column_int64(st, 4), "write_bytes",
				 (json_int_t)sqlite3_column_int64(st, 5)));
	sqlite3_finalize(st);
	return a;
}

static int is_sync(const char *name)
{
	static const char *const syncs[] = {"fsync", "fdatasync",	"sync", "syncfs",
					    "msync", "sync_file_range", NULL};
	for (size_t i = 0; syncs[i]; i++)
		if (!strcmp(name, syncs[i]))
			return 1;
	return 0;
}

static int reads_bytes(const char *name)
{
	return strstr(name, "read") || strstr(name, "recv");
}

/* A site's calls, one by one for a few bytes each. */
static void storm_finding(struct analysis_ctx *ctx, const struct sys_call *c,
			  const struct sys_site *site, double wall_s)
{
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT, file = STRBUF_INIT;
	double mean = (double)site->bytes / (double)site->calls;
	int reads = reads_bytes(c->name);
	const char *loc = site->loc.buf;
	size_t loc_len = strcspn(loc, "\t");
	strbuf_add(&file, loc, loc_len); /* the location alone */
	strbuf_addf(&title, "Unbuffered I/O: %lld %s calls of %.0f byte%s each on average",
		    (long long)site->calls, c->name, mean, mean < 1.5 ? "" : "s");
	strbuf_addf(&ev,
		    "%lld %s calls from %s %s %.1f KB (%.1f bytes a call) in %.3f s of "
		    "system-call time (%.0f%% of %.3f s wall)",
		    (long long)site->calls, c->name, file.buf, reads ? "read" : "wrote",
		    (double)site->bytes / 1e3, mean, (double)site->total_ns / 1e9,
		    100.0 * (double)site->total_ns / 1e9 / wall_s, wall_s);
	const char *tab = strchr(site->loc.buf, '\t');
	if (tab && tab[1])
		strbuf_addf(&ev, "; %s %s", reads ? "from" : "to", tab + 1);
	double fewer = (double)STORM_BLOCK_BYTES / (mean > 1 ? mean : 1);
	if (site->python)
		strbuf_addf(
		    &next,
		    reads ? "Read in blocks: f.read(65536) (or a buffered file: open() "
			    "without buffering=0) and split the lines in memory; one call "
			    "of 64 KiB replaces about %.0f of these"
			  : "Buffer the writes: a file opened with the default buffering "
			    "(not buffering=0), or collect the lines and write them "
			    "together ('\\n'.join or writelines); one call of 64 KiB replaces "
			    "about %.0f of these",
		    fewer);
	else
		strbuf_addf(&next,
			    reads ? "Read in blocks: a FILE* with a 64 KiB buffer (setvbuf) or "
				    "read(fd, buf, 65536) and split in memory; one call of 64 KiB "
				    "replaces about %.0f of these"
				  : "Buffer the writes: a FILE* with a 64 KiB buffer (setvbuf), or "
				    "your own buffer written when full (writev for many pieces); "
				    "one call of 64 KiB replaces about %.0f of these",
			    fewer);
	double at_stake = (double)site->total_ns / 1e9;
	struct finding f = {
	    .id = "io.syscall_storm",
	    .title = title.buf,
	    .dimension = "io",
	    .location = file.buf,
	    .evidence = ev.buf,
	    .diagnosis = "System-call storm: each call pays a trip into the kernel for a few "
			 "bytes, as unbuffered I/O does",
	    .next_step = next.buf,
	    .validation = "syscalls: the calls fall and their mean bytes rise",
		    .blames_code = FINDING_BLAMES_CODE,
	};
	findings_add_time(ctx->findings, &f, at_stake, wall_s);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
	strbuf_release(&file);
}

static void sync_finding(struct analysis_ctx *ctx, const struct sys_call *c,
			 const struct sys_site *site, double wall_s)
{
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT;
	double s = (double)c->total_ns / 1e9;
	/* The file most of them flushed, when one did (summed over its sites). */
	struct sys_site files[SYS_SITES * 4];
	size_t nfiles = sites_load(ctx->db, c->name, 1, files, SYS_SITES * 4);
	const char *path = NULL;
	int64_t on_path = 0;
	for (size_t i = 0; i < nfiles; i++) {
		const char *p = strchr(files[i].loc.buf, '\t');
		int64_t n = 0;
		for (size_t k = 0; p && p[1] && k < nfiles; k++) {
			const char *q = strchr(files[k].loc.buf, '\t');
			if (q && !strcmp(p, q))
				n += files[k].calls;
		}
		if (n > on_path) {
			path = p;
			on_path = n;
		}
	}
	if (path && 2 * on_path < c->calls)
		path = NULL;
	strbuf_addf(&title, "%s waits %.2f s for the disk", c->name, s);
	if (path) {
		const char *base = strrchr(path + 1, '/');
		strbuf_addf(&title, " (%s)", base && base[1] ? base + 1 : path + 1);
	}
	strbuf_addf(&ev,
		    "%lld %s calls took %.3f s (%.0f%% of %.3f s wall), %.1f ms each on "
		    "average, the slowest %.1f ms; %lld of them from %s",
		    (long long)c->calls, c->name, s, 100.0 * s / wall_s, wall_s,
		    (double)c->total_ns / 1e6 / (double)c->calls, (double)c->max_ns / 1e6,
		    (long long)site->calls, site->loc.buf);
	if (path)
		strbuf_addf(&ev, "; %lld on %s", (long long)on_path, path + 1);
	sites_release(files, nfiles);
	struct finding f = {
	    .id = "io.slow_sync",
	    .title = title.buf,
	    .dimension = "io",
	    .location = site->loc.buf,
	    .evidence = ev.buf,
	    .diagnosis = "Synchronous flushes: each waits until the device has the data",
	    .next_step = "Flush less often: once per batch of records (group commit), or "
			 "fdatasync when the file's size and times need not be durable; move "
			 "the flush off the path that waits for it",
	    .validation = "syscalls: the sync calls and their seconds fall",
		    .blames_code = FINDING_BLAMES_CODE,
	};
	findings_add_time(ctx->findings, &f, s, wall_s);
	strbuf_release(&title);
	strbuf_release(&ev);
}

static void errors_finding(struct analysis_ctx *ctx, const struct sys_call *c,
			   const struct sys_site *site, double wall_s, json_t *errors)
{
	struct strbuf title = STRBUF_INIT, ev = STRBUF_INIT, kinds = STRBUF_INIT;
	size_t i;
	json_t *e;
	json_array_foreach(errors, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "call")), c->name))
			continue;
		strbuf_addf(&kinds, "%s%s %lld", kinds.len ? ", " : "",
			    json_string_value(json_object_get(e, "error")),
			    (long long)json_integer_value(json_object_get(e, "calls")));
	}
	strbuf_addf(&title, "%s fails %lld of %lld times", c->name, (long long)c->errors,
		    (long long)c->calls);
	strbuf_addf(&ev, "%lld of %lld %s calls failed (%s); %lld of the calls from %s",
		    (long long)c->errors, (long long)c->calls, c->name, kinds.buf,
		    (long long)site->calls, site->loc.buf);
	double s = (double)c->total_ns / 1e9 * (double)c->errors / (double)c->calls;
	struct finding f = {
	    .id = "io.syscall_errors",
	    .title = title.buf,
	    .dimension = "io",
	    .location = site->loc.buf,
	    .evidence = ev.buf,
	    .diagnosis = "Calls that fail as a rule: the program asks again for what is not "
			 "there (a missing file, a would-block read)",
	    .next_step = "Ask once and keep the answer (a file that is missing now stays "
			 "missing until something creates it), or wait for readiness "
			 "(poll/epoll) instead of retrying",
	    .validation = "syscalls: the failed calls fall",
		    .blames_code = FINDING_BLAMES_CODE,
	};
	findings_add_time(ctx->findings, &f, s, wall_s);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&kinds);
}

static void call_findings(struct analysis_ctx *ctx, const struct sys_call *c,
			  const struct sys_site *sites, size_t nsites, double wall_s,
			  json_t *errors)
{
	if (!nsites || wall_s <= 0 || c->calls <= 0)
		return;
	struct sys_site files[SYS_SITES * 4];
	size_t nfiles = c->bytes > 0 ? sites_load(ctx->db, c->name, 1, files, SYS_SITES * 4) : 0;
	for (size_t i = 0; i < nfiles && i < SYS_SITES; i++)
		if (files[i].bytes > 0 && files[i].calls >= STORM_MIN_CALLS &&
		    (double)files[i].bytes / (double)files[i].calls < STORM_MAX_MEAN_BYTES)
			storm_finding(ctx, c, &files[i], wall_s);
	sites_release(files, nfiles);
	double s = (double)c->total_ns / 1e9;
	if (is_sync(c->name) && s >= SYNC_MIN_S && s / wall_s >= SYNC_MIN_SHARE)
		sync_finding(ctx, c, &sites[0], wall_s);
	if (c->errors >= ERRORS_MIN && (double)c->errors / (double)c->calls >= ERRORS_MIN_SHARE)
		errors_finding(ctx, c, &sites[0], wall_s, errors);
}

static int syscalls_run(struct analysis_ctx *ctx)
{
	sqlite3_stmt *st = prepare_own(ctx->db, "syscalls",
				       "SELECT name, sum(calls), sum(errors), sum(untimed),"
				       " sum(total_ns), max(max_ns), sum(bytes) FROM syscalls s"
				       " WHERE %s GROUP BY name ORDER BY 5 DESC, 2 DESC");
	if (!st)
		return 0; /* the probe did not run */
	double wall_s = report_wall_s(ctx->db);
	json_t *o = json_object(), *list = json_array(), *errors = errors_json(ctx->db);
	int64_t calls = 0, failed = 0, total_ns = 0, lost = 0;
	for (size_t listed = 0; sqlite3_step(st) == SQLITE_ROW;) {
		struct sys_call c = {(char *)col(st, 0),	  sqlite3_column_int64(st, 1),
				     sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
				     sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
				     sqlite3_column_int64(st, 6)};
		calls += c.calls;
		failed += c.errors;
		total_ns += c.total_ns;
		if (listed++ >= SYS_LISTED)
			continue;
		struct sys_site sites[SYS_SITES * 4];
		size_t nsites = sites_load(ctx->db, c.name, 0, sites, SYS_SITES * 4);
		int64_t timed = c.calls - c.untimed;
		json_t *row =
		    json_pack("{s:o, s:I, s:I, s:f, s:f, s:f, s:I, s:o}", "call",
			      report_string(c.name, strlen(c.name)), "calls", (json_int_t)c.calls,
			      "errors", (json_int_t)c.errors, "seconds", (double)c.total_ns / 1e9,
			      "mean_us", timed > 0 ? (double)c.total_ns / 1e3 / (double)timed : 0.0,
			      "max_us", (double)c.max_ns / 1e3, "bytes", (json_int_t)c.bytes,
			      "sites", sites_json(sites, nsites));
		if (c.untimed)
			json_object_set_new(row, "untimed", json_integer(c.untimed));
		json_t *slow = slowest_at(ctx->db, c.name);
		if (slow)
			json_object_set_new(row, "slowest_at", slow);
		json_array_append_new(list, row);
		call_findings(ctx, &c, sites, nsites, wall_s, errors);
		sites_release(sites, nsites);
	}
	sqlite3_finalize(st);
	json_t *l = list;
	size_t i;
	json_t *row;
	json_array_foreach(l, i, row) json_object_set_new(
	    row, "share_pct",
	    json_real(total_ns > 0 ? 100.0 * json_real_value(json_object_get(row, "seconds")) /
					 ((double)total_ns / 1e9)
				   : 0));
	recording_meta_int(ctx->db, "syscalls_lost_records", &lost);
	/* Calls whose records never arrived: what the kernel counted less what
	 * sonde read (a ring full until the end reports no loss record), else
	 * the loss records'. */
	int64_t kernel = -1, read_calls = 0, lost_calls = (int64_t)lost;
	if (!recording_meta_int(ctx->db, "syscalls_kernel_calls", &kernel) &&
	    !recording_meta_int(ctx->db, "syscalls_calls", &read_calls)) {
		json_object_set_new(o, "kernel_calls", json_integer(kernel));
		lost_calls = kernel > read_calls + 2 ? kernel - read_calls : 0;
	}
	json_object_set_new(o, "lost_calls", json_integer(lost_calls));
	json_object_set_new(o, "calls", json_integer(calls));
	json_object_set_new(o, "errors", json_integer(failed));
	json_object_set_new(o, "seconds", json_real((double)total_ns / 1e9));
	json_object_set_new(o, "lost_records", json_integer(lost));
	json_object_set_new(o, "by_time", list);
	json_object_set_new(o, "errors_by_errno", errors);
	json_object_set_new(o, "files", files_json(ctx->db));
	json_object_set_new(ctx->report, "syscalls", o);
	return 0;
}

static const char *const syscalls_findings[] = {
	"io.syscall_storm",
	"io.slow_sync",
	"io.syscall_errors",
	NULL,
};

const struct analysis_ops analysis_syscalls = {
	.name = "syscalls",
	.findings = syscalls_findings,
	.run = syscalls_run,
};
