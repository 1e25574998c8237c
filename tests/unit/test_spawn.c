/* test_spawn: what sonde says before it starts a command, and how it reports
 * the command's end. */
#include "check.h"
#include "target/spawn.h"
#include "util/strbuf.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void make_file(const char *dir, const char *name, mode_t mode)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f) {
		check_fail(__FILE__, __LINE__, "cannot create %s", p);
		return;
	}
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	chmod(p, mode);
}

/* Runs check with PATH set to path; restores PATH. */
static int check_with_path(const char *path, const char *cmd, struct strbuf *err)
{
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	setenv("PATH", path, 1);
	strbuf_reset(err);
	int rc = spawn_check_command(cmd, err);
	if (old) {
		setenv("PATH", old, 1);
		free(old);
	} else {
		unsetenv("PATH");
	}
	return rc;
}

TEST(found_on_path, "a command on PATH is accepted and says nothing")
{
	struct strbuf err = STRBUF_INIT;
	CHECK_INT_EQ(spawn_check_command("sh", &err), 0);
	CHECK_INT_EQ(err.len, 0);
	strbuf_release(&err);
}

TEST(not_found_127, "a command on no PATH directory is 127 with \"command not found\"")
{
	struct strbuf err = STRBUF_INIT;
	CHECK_INT_EQ(spawn_check_command("sonde-no-such-command-x9", &err), 127);
	CHECK_CONTAINS(err.buf, "sonde-no-such-command-x9");
	CHECK_CONTAINS(err.buf, "not found");
	strbuf_release(&err);
}

TEST(path_order, "a non-executable file earlier on PATH does not hide an executable one later, as with execvp")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char a[4096], b[4096], path[8300];
	snprintf(a, sizeof(a), "%s/a", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	REQUIRE(mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0);
	make_file(a, "tool", 0644);
	make_file(b, "tool", 0755);
	struct strbuf err = STRBUF_INIT;
	snprintf(path, sizeof(path), "%s:%s", a, b);
	CHECK_INT_EQ(check_with_path(path, "tool", &err), 0);
	snprintf(path, sizeof(path), "%s", a);
	CHECK_INT_EQ(check_with_path(path, "tool", &err), 126);
	CHECK_CONTAINS(err.buf, "not executable");
	/* a directory of that name is skipped, not reported as unexecutable */
	char sub[4200];
	snprintf(sub, sizeof(sub), "%s/dironly", b);
	REQUIRE(mkdir(sub, 0755) == 0);
	snprintf(path, sizeof(path), "%s", b);
	CHECK_INT_EQ(check_with_path(path, "dironly", &err), 127);
	strbuf_release(&err);
	check_rmtree(tmp);
}

TEST(empty_path_entry_is_cwd, "an empty PATH entry means the current directory")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	make_file(tmp, "here-tool", 0755);
	int old = open(".", O_RDONLY | O_DIRECTORY);
	REQUIRE(old >= 0);
	REQUIRE(chdir(tmp) == 0);
	struct strbuf err = STRBUF_INIT;
	CHECK_INT_EQ(check_with_path("/sonde-nonexistent:", "here-tool", &err), 0);
	CHECK_INT_EQ(check_with_path("/sonde-nonexistent", "here-tool", &err), 127);
	CHECK(fchdir(old) == 0);
	close(old);
	strbuf_release(&err);
	check_rmtree(tmp);
}

TEST(with_slash, "a command with a slash is checked as a path: missing is 127, a directory or non-executable file is 126")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	make_file(tmp, "plain", 0644);
	make_file(tmp, "runme", 0755);
	char p[4200];
	struct strbuf err = STRBUF_INIT;
	snprintf(p, sizeof(p), "%s/missing", tmp);
	CHECK_INT_EQ(spawn_check_command(p, &err), 127);
	CHECK_CONTAINS(err.buf, "no such file");
	strbuf_reset(&err);
	CHECK_INT_EQ(spawn_check_command(tmp, &err), 126);
	CHECK_CONTAINS(err.buf, "is a directory");
	strbuf_reset(&err);
	snprintf(p, sizeof(p), "%s/plain", tmp);
	CHECK_INT_EQ(spawn_check_command(p, &err), 126);
	CHECK_CONTAINS(err.buf, "cannot execute");
	strbuf_reset(&err);
	snprintf(p, sizeof(p), "%s/runme", tmp);
	CHECK_INT_EQ(spawn_check_command(p, &err), 0);
	CHECK_INT_EQ(err.len, 0);
	strbuf_release(&err);
	check_rmtree(tmp);
}

static int status_of_child(int code, int sig)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (sig) {
			signal(sig, SIG_DFL);
			raise(sig);
		}
		_exit(code);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return status;
}

TEST(exit_codes, "an exit status is passed through and death by signal N is 128+N, as a shell reports it")
{
	CHECK_INT_EQ(spawn_exit_code(status_of_child(0, 0)), 0);
	CHECK_INT_EQ(spawn_exit_code(status_of_child(3, 0)), 3);
	CHECK_INT_EQ(spawn_exit_code(status_of_child(255, 0)), 255);
	CHECK_INT_EQ(spawn_exit_code(status_of_child(0, SIGTERM)), 128 + SIGTERM);
	CHECK_INT_EQ(spawn_exit_code(status_of_child(0, SIGKILL)), 137);
}

CHECK_MAIN()
