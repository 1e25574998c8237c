/* test_program: the program behind a wrapper (analysis/program.h). */
#include "check.h"
#include "analysis/program.h"

#include <stdlib.h>
#include <string.h>

/* program_find over ps and an in-memory recording with the given execs rows
 * (an INSERT; NULL: none): its result, *p as it left it. */
static int find(const struct procstats *ps, const char *rows_sql, struct program *p)
{
	sqlite3 *db = NULL;
	int r = -1;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TABLE execs(pid INTEGER, t_ns INTEGER, command TEXT)", NULL,
			 NULL, NULL) != SQLITE_OK ||
	    (rows_sql && sqlite3_exec(db, rows_sql, NULL, NULL, NULL) != SQLITE_OK))
		check_fail(__FILE__, __LINE__, "cannot make the recording: %s", sqlite3_errmsg(db));
	else
		r = program_find(db, ps, p);
	sqlite3_close(db);
	return r;
}

static struct procstat proc(int64_t pid, int64_t ppid, const char *cmd, int64_t start_ns,
			    int64_t cpu_ns, int leader)
{
	return (struct procstat){ .pid = pid,
				  .ppid = ppid,
				  .command = (char *)cmd,
				  .start_ns = start_ns,
				  .end_ns = -1,
				  .exit_code = -1,
				  .is_leader = leader,
				  .user_ns = cpu_ns,
				  .sys_ns = 0 };
}

TEST(exec_hand_over, "a shim that exec'd the program: the last exec is the program, from its time, and the shim is its wrapper")
{
	struct procstat v[] = {
		proc(10, 1, "/root/.pyenv/shims/python3 x.py", 0, 900, 1),
		proc(11, 10, "bash /root/.pyenv/libexec/pyenv-version-name", 5, 40, 0),
		proc(12, 10, "python3 -c work", 600, 30, 0),
	};
	struct procstats ps = { v, 3 };
	struct program p = PROGRAM_INIT;
	REQUIRE(find(&ps,
		     "INSERT INTO execs VALUES (10, 1, 'bash /root/.pyenv/shims/python3 x.py'),"
		     " (10, 500, '/usr/bin/python3.11 x.py')",
		     &p) == 1);
	CHECK_INT_EQ(p.pid, 10);
	CHECK_INT_EQ(p.from_ns, 500);
	CHECK_STR_EQ(p.command, "/usr/bin/python3.11 x.py");
	CHECK_STR_EQ(p.launcher, "/root/.pyenv/shims/python3");
	CHECK_INT_EQ(p.wrapper_processes, 2); /* the helper, and the shim before its exec */
	/* Before the exec the launched process and the helper it forked are the
	 * wrapper's; after it, the program and the child it forked are not. */
	CHECK(program_is_wrapper(&p, &ps, 10, 499));
	CHECK(!program_is_wrapper(&p, &ps, 10, 500));
	CHECK(program_is_wrapper(&p, &ps, 11, 700));
	CHECK(!program_is_wrapper(&p, &ps, 12, 700));
	CHECK(!program_is_wrapper(&p, &ps, 99, 700)); /* not of the tree */
	program_release(&p);
}

TEST(shell_waits, "a shell script that runs the program as a child and waits: the child holding most of the CPU is the program")
{
	struct procstat v[] = {
		proc(20, 1, "./run.sh", 0, 10, 1),
		proc(21, 20, "echo starting", 1, 1, 0),
		proc(22, 20, "python3 train.py", 2, 5000, 0),
		proc(23, 22, "python3 -c worker", 3, 2000, 0),
	};
	struct procstats ps = { v, 4 };
	struct program p = PROGRAM_INIT;
	REQUIRE(find(&ps, "INSERT INTO execs VALUES (20, 1, '/bin/sh ./run.sh')", &p) == 1);
	CHECK_INT_EQ(p.pid, 22);
	CHECK_INT_EQ(p.from_ns, 0);
	CHECK_STR_EQ(p.command, "python3 train.py");
	CHECK_STR_EQ(p.launcher, "./run.sh");
	CHECK_INT_EQ(p.wrapper_processes, 2);
	CHECK_INT_EQ(p.wrapper_cpu_ns, 11);
	CHECK(!program_is_wrapper(&p, &ps, 23, 10)); /* the program's own worker */
	program_release(&p);
}

TEST(no_wrapper, "a program launched directly, or one that re-execs itself, has no wrapper")
{
	struct procstat v[] = { proc(30, 1, "python3 serve.py", 0, 100, 1),
				proc(31, 30, "python3 serve.py", 5, 900, 0) };
	struct procstats ps = { v, 2 };
	struct program p = PROGRAM_INIT;
	CHECK_INT_EQ(find(&ps,
			  "INSERT INTO execs VALUES (30, 1, 'python3 serve.py'),"
			  " (30, 50, 'python3 serve.py --child')",
			  &p),
		     0);
	CHECK(p.command == NULL);
	/* A shell whose children share the CPU: no one child is the program. */
	struct procstat w[] = { proc(40, 1, "sh -c make", 0, 10, 1),
				proc(41, 40, "cc a.c", 1, 500, 0),
				proc(42, 40, "cc b.c", 2, 500, 0) };
	struct procstats ws = { w, 3 };
	CHECK_INT_EQ(find(&ws, NULL, &p), 0);
}

CHECK_MAIN()
