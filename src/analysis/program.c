/* program: the process that did the work behind a wrapper (program.h). */
#include "program.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* Commands that hand over or start one child and wait: the rest of their
 * line is the program. */
static int command_is_wrapper(const char *cmd)
{
	static const char *const names[] = { "sh",   "bash",	"dash", "zsh",	   "ksh",
					     "mksh", "busybox", "env",	"timeout", "time" };
	if (!cmd)
		return 0;
	cmd += strspn(cmd, "[ ");
	size_t n = strcspn(cmd, " ]");
	const char *base = cmd;
	for (const char *c = cmd; c < cmd + n; c++)
		if (*c == '/')
			base = c + 1;
	size_t bn = (size_t)(cmd + n - base);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == bn && !strncmp(base, names[i], bn))
			return 1;
	return 0;
}

static const struct procstat *proc_of(const struct procstats *ps, int64_t pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].pid == pid)
			return &ps->v[i];
	return NULL;
}

static int64_t cpu_ns_of(const struct procstat *p)
{
	int64_t ns = 0;
	if (p->user_ns > 0)
		ns += p->user_ns;
	if (p->sys_ns > 0)
		ns += p->sys_ns;
	return ns;
}

/* Whether p descends from pid by a child started at or after from_ns. */
static int descends_from(const struct procstats *ps, const struct procstat *p, int64_t pid,
			 int64_t from_ns)
{
	for (size_t hops = 0; p && hops < ps->n; hops++) {
		if (p->ppid == pid)
			return p->start_ns >= from_ns;
		p = proc_of(ps, p->ppid);
	}
	return 0;
}

/* sub[i] := the CPU time of ps->v[i] and its descendants: each process's
 * added to its ancestors', once. */
static int64_t *subtree_cpu_ns(const struct procstats *ps)
{
	int64_t *sub = xcalloc(ps->n ? ps->n : 1, sizeof(*sub));
	for (size_t i = 0; i < ps->n; i++) {
		int64_t ns = cpu_ns_of(&ps->v[i]);
		const struct procstat *p = &ps->v[i];
		for (size_t hops = 0; p && hops <= ps->n; hops++) {
			sub[p - ps->v] += ns;
			p = p->ppid != p->pid ? proc_of(ps, p->ppid) : NULL;
		}
	}
	return sub;
}

/* The child of parent whose subtree holds more than half of total_ns. */
static const struct procstat *busy_child(const struct procstats *ps, const int64_t *sub,
					 int64_t parent, int64_t total_ns)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].ppid == parent && ps->v[i].pid != parent && 2 * sub[i] > total_ns)
			return &ps->v[i];
	return NULL;
}

/* What proc runs last: its last exec's command (owned, in *cmd), when (*t_ns)
 * and the exec before (*prev_ns), else its recorded command at 0. Returns 1
 * when that exec was a wrapper's hand-over: a shell ran in the process before
 * (wrapper_before: it started as one) and the program is none. */
static int exec_chain(sqlite3 *db, const struct procstat *proc, int wrapper_before, char **cmd,
		      int64_t *t_ns, int64_t *prev_ns)
{
	sqlite3_stmt *st;
	int found = 0;
	*cmd = NULL;
	*t_ns = *prev_ns = 0;
	if (recording_has_table(db, "execs") &&
	    sqlite3_prepare_v2(db, "SELECT t_ns, command FROM execs WHERE pid = ? ORDER BY t_ns",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, proc->pid);
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *c = (const char *)sqlite3_column_text(st, 1);
			if (!c)
				continue;
			if (found) {
				wrapper_before |= command_is_wrapper(*cmd);
				*prev_ns = *t_ns;
				free(*cmd);
			}
			*cmd = xstrdup(c);
			*t_ns = sqlite3_column_int64(st, 0);
			found = 1;
		}
		sqlite3_finalize(st);
	}
	if (!found) {
		*cmd = xstrdup(proc->command ? proc->command : "");
		return 0;
	}
	if (!wrapper_before || command_is_wrapper(*cmd) ||
	    (proc->is_leader && !strcmp(*cmd, proc->command))) {
		*t_ns = *prev_ns = 0;
		return 0;
	}
	return 1;
}

/* The integer sql over table gives (its two ? bound to a and b) in *out:
 * 0, or -1 when the recording has no such table or the value is NULL. */
static int query_int(sqlite3 *db, const char *table, const char *sql, int64_t a, int64_t b,
		     int64_t *out)
{
	sqlite3_stmt *st;
	int rc = -1;
	if (!recording_has_table(db, table) ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
		*out = sqlite3_column_int64(st, 0);
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

/* The program's first Python sample, when earlier than the scan that saw its exec. */
static int64_t first_python_ns(sqlite3 *db, int64_t pid, int64_t after_ns, int64_t seen_ns)
{
	int64_t t;
	if (query_int(db, "samples",
		      "SELECT min(t_ns) FROM samples WHERE pid = ? AND t_ns > ?"
		      " AND source = 'python'",
		      pid, after_ns, &t) ||
	    t >= seen_ns)
		return seen_ns;
	return t;
}

/* The process's CPU time before its exec at from_ns, from the /proc readings. */
static int64_t cpu_before_ns(sqlite3 *db, int64_t pid, int64_t from_ns)
{
	int64_t ns;
	if (query_int(db, "proc_samples",
		      "SELECT max(coalesce(user_ns, 0) + coalesce(sys_ns, 0))"
		      " FROM proc_samples WHERE pid = ? AND t_ns <= ?",
		      pid, from_ns, &ns))
		return 0;
	return ns;
}

/* The launched command without the arguments it passed on to the program
 * ("/root/.pyenv/shims/python3 x.py" started "python3 x.py": the shim). */
static char *wrapper_name(const char *launched, const char *program)
{
	const char *args = strchr(program, ' ');
	size_t ln = strlen(launched), an = args ? strlen(args) : 0;
	/* Only a wrapper named by one word: "sh -c 'exec python3 x.py'" stays whole. */
	if (an && an < ln && !strcmp(launched + ln - an, args) && !memchr(launched, ' ', ln - an))
		return xstrndup(launched, ln - an);
	return xstrdup(launched);
}

int program_is_wrapper(const struct program *p, const struct procstats *ps, int64_t pid,
		       int64_t t_ns)
{
	if (pid == p->pid)
		return t_ns < p->from_ns;
	const struct procstat *q = proc_of(ps, pid);
	return q && !descends_from(ps, q, p->pid, p->from_ns);
}

/* p runs cmd (taken) in pid from its exec when handed (else all its life). */
static void program_set(sqlite3 *db, struct program *p, int64_t pid, char *cmd, int handed,
			int64_t t_ns, int64_t prev_ns)
{
	free(p->command);
	p->pid = pid;
	p->command = cmd;
	p->from_ns = handed ? first_python_ns(db, pid, prev_ns, t_ns) : 0;
}

int program_find(sqlite3 *db, const struct procstats *ps, struct program *out)
{
	const struct procstat *leader = procstats_leader(ps), *child;
	if (!leader || !leader->is_leader || !leader->command)
		return 0;
	struct program p = PROGRAM_INIT;
	int64_t t_ns, prev_ns, total_ns = 0;
	char *cmd;
	int wrapped =
	    exec_chain(db, leader, command_is_wrapper(leader->command), &cmd, &t_ns, &prev_ns);
	program_set(db, &p, leader->pid, cmd, wrapped, t_ns, prev_ns);
	for (size_t i = 0; i < ps->n; i++)
		total_ns += cpu_ns_of(&ps->v[i]);
	int64_t *sub = subtree_cpu_ns(ps);
	/* A shell that started the program and waits: the child holding the CPU
	 * (itself a shell's fork, so its exec is a hand-over). */
	for (size_t hops = 0; hops < ps->n && command_is_wrapper(p.command) &&
			      (child = busy_child(ps, sub, p.pid, total_ns));
	     hops++) {
		int handed = exec_chain(db, child, 1, &cmd, &t_ns, &prev_ns);
		program_set(db, &p, child->pid, cmd, handed, t_ns, prev_ns);
		wrapped = 1;
	}
	free(sub);
	if (!wrapped) {
		program_release(&p);
		return 0;
	}
	p.launcher = wrapper_name(leader->command, p.command);
	p.wrapper_cpu_ns = 0;
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->v[i].pid == p.pid ||
		    !program_is_wrapper(&p, ps, ps->v[i].pid, ps->v[i].start_ns))
			continue;
		p.wrapper_processes++;
		p.wrapper_cpu_ns += cpu_ns_of(&ps->v[i]);
	}
	if (p.from_ns > 0) {
		p.wrapper_processes++; /* the program's process, before its exec */
		p.wrapper_cpu_ns += cpu_before_ns(db, p.pid, p.from_ns);
	}
	*out = p;
	return 1;
}

void program_release(struct program *p)
{
	free(p->command);
	free(p->launcher);
	p->command = p->launcher = NULL;
}

int program_mark_wrapper(sqlite3 *db, const struct program *p, const struct procstats *ps)
{
	sqlite3_stmt *st;
	if (!p)
		return sqlite3_exec(db, "DROP TABLE IF EXISTS temp.wrapper_spans", NULL, NULL,
				    NULL) == SQLITE_OK
			   ? 0
			   : -1;
	if (sqlite3_exec(db,
			 "CREATE TEMP TABLE IF NOT EXISTS wrapper_spans(pid INTEGER,"
			 " from_ns INTEGER, to_ns INTEGER); DELETE FROM temp.wrapper_spans",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO temp.wrapper_spans VALUES(?, ?, ?)", -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	for (size_t i = 0; i < ps->n; i++) {
		int64_t pid = ps->v[i].pid;
		if (pid != p->pid && !program_is_wrapper(p, ps, pid, ps->v[i].start_ns))
			continue;
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, INT64_MIN);
		sqlite3_bind_int64(st, 3, pid == p->pid ? p->from_ns : INT64_MAX);
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return 0;
}
