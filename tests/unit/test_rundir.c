/* test_rundir: choosing the run directory never clobbers what the user has. */
#include "check.h"
#include "cli/rundir.h"
#include "util/strbuf.h"

#include <fcntl.h>
#include <sys/stat.h>

static int exists(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void touch(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f) {
		check_fail(__FILE__, __LINE__, "cannot create %s", p);
		return;
	}
	fputs("x\n", f);
	fclose(f);
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(o_file_refused, "-o naming an existing file fails with \"not a directory\" and leaves the file alone")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	touch(tmp, "afile");
	struct strbuf req = STRBUF_INIT, path = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&req, "%s/afile", tmp);
	CHECK(rundir_prepare(req.buf, "app", 0, 0600, &path, &err) != 0);
	CHECK_CONTAINS(err.buf, "not a directory");
	CHECK(rundir_prepare(req.buf, "app", 1, 0600, &path, &err) != 0); /* not even with force */
	CHECK(exists(tmp, "afile") && !is_dir(req.buf));
	strbuf_reset(&req);
	strbuf_reset(&err);
	strbuf_addf(&req, "%s/afile/sub", tmp);
	CHECK(rundir_prepare(req.buf, "app", 0, 0600, &path, &err) != 0);
	CHECK(strcasestr(err.buf, "not a directory") != NULL);
	strbuf_release(&req);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(tmp);
}

TEST(o_created, "-o naming a missing nested directory creates it and uses it as given")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	struct strbuf req = STRBUF_INIT, path = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&req, "%s/a/b/run", tmp);
	CHECK_INT_EQ(rundir_prepare(req.buf, "app", 0, 0600, &path, &err), 0);
	CHECK_STR_EQ(path.buf, req.buf);
	CHECK(is_dir(req.buf));
	CHECK_INT_EQ(err.len, 0);
	strbuf_release(&req);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(tmp);
}

TEST(o_empty_refused, "-o with an empty name is refused")
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	CHECK(rundir_prepare("", "app", 0, 0600, &path, &err) != 0);
	CHECK(err.len > 0);
	strbuf_release(&path);
	strbuf_release(&err);
}

TEST(existing_run_refused, "an existing run directory is refused without force, and nothing in it is removed")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	touch(tmp, "report.md");
	touch(tmp, "profile.db");
	touch(tmp, "my-notes.txt");
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	CHECK(rundir_prepare(tmp, "app", 0, 0600, &path, &err) != 0);
	CHECK_CONTAINS(err.buf, "--force");
	CHECK(exists(tmp, "report.md") && exists(tmp, "profile.db") && exists(tmp, "my-notes.txt"));
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(tmp);
}

TEST(force_cleans_artifacts_only, "with force an existing run directory is cleaned of sonde's files only")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	for (size_t i = 0; rundir_artifacts[i]; i++)
		touch(tmp, rundir_artifacts[i]);
	touch(tmp, "my-notes.txt");
	touch(tmp, "report.md.bak");
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT_EQ(rundir_prepare(tmp, "app", 1, 0600, &path, &err), 0);
	for (size_t i = 0; rundir_artifacts[i]; i++)
		if (exists(tmp, rundir_artifacts[i]))
			check_fail(__FILE__, __LINE__, "%s was left behind", rundir_artifacts[i]);
	CHECK(exists(tmp, "my-notes.txt"));
	CHECK(exists(tmp, "report.md.bak"));
	CHECK_STR_EQ(path.buf, tmp);
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(tmp);
}

TEST(foreign_dir_ok, "an existing directory without sonde files is used as is, without force")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	touch(tmp, "data.csv");
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT_EQ(rundir_prepare(tmp, "app", 0, 0600, &path, &err), 0);
	CHECK(exists(tmp, "data.csv"));
	strbuf_release(&path);
	strbuf_release(&err);
	check_rmtree(tmp);
}

/* Runs in a fresh temporary cwd; restores the old one. */
struct in_tmp {
	int old_cwd;
	char *dir;
};

static int enter_tmp(struct in_tmp *t)
{
	t->old_cwd = open(".", O_RDONLY | O_DIRECTORY);
	t->dir = check_tmpdir();
	if (t->old_cwd < 0 || !t->dir || chdir(t->dir)) {
		check_fail(__FILE__, __LINE__, "cannot enter a temporary directory");
		return -1;
	}
	return 0;
}

static void leave_tmp(struct in_tmp *t)
{
	if (t->old_cwd >= 0) {
		if (fchdir(t->old_cwd))
			check_fail(__FILE__, __LINE__, "cannot go back to the old cwd");
		close(t->old_cwd);
	}
	check_rmtree(t->dir);
}

TEST(default_naming, "by default each run gets a new profile_output/<stamp>-<command> directory")
{
	struct in_tmp t;
	if (enter_tmp(&t)) {
		leave_tmp(&t);
		return;
	}
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT_EQ(rundir_prepare(NULL, "/usr/bin/python3", 0, 0600, &a, &err), 0);
	CHECK_INT_EQ(rundir_prepare(NULL, "/usr/bin/python3", 0, 0600, &b, &err), 0);
	CHECK(!strncmp(a.buf, "profile_output/", 15));
	CHECK_CONTAINS(a.buf, "-python3");
	CHECK_NOT_CONTAINS(a.buf, "/usr");
	CHECK(is_dir(a.buf));
	CHECK(is_dir(b.buf));
	CHECK(strcmp(a.buf, b.buf) != 0);
	/* the stamp: 8 digits, '-', 6 digits */
	const char *stamp = a.buf + 15;
	int digits = 0;
	for (int i = 0; i < 15; i++)
		digits += i == 8 ? stamp[i] == '-' : (stamp[i] >= '0' && stamp[i] <= '9');
	CHECK_INT_EQ(digits, 15);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&err);
	leave_tmp(&t);
}

TEST(default_name_sanitized, "a command name with spaces, slashes or shell characters gives a plain directory name")
{
	struct in_tmp t;
	if (enter_tmp(&t)) {
		leave_tmp(&t);
		return;
	}
	struct strbuf a = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT_EQ(rundir_prepare(NULL, "./my prog;$(x)", 0, 0600, &a, &err), 0);
	const char *name = a.buf + strlen("profile_output/");
	CHECK(strpbrk(name, " ;$()/") == NULL);
	CHECK(is_dir(a.buf));
	strbuf_reset(&a);
	CHECK_INT_EQ(rundir_prepare(NULL, "", 0, 0600, &a, &err), 0);
	CHECK(is_dir(a.buf));
	strbuf_release(&a);
	strbuf_release(&err);
	leave_tmp(&t);
}

TEST(latest_link, "profile_output/latest points at the newest default run directory")
{
	struct in_tmp t;
	if (enter_tmp(&t)) {
		leave_tmp(&t);
		return;
	}
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, err = STRBUF_INIT;
	REQUIRE(rundir_prepare(NULL, "app", 0, 0600, &a, &err) == 0);
	rundir_link_latest(a.buf);
	char target[4096];
	ssize_t n = readlink("profile_output/latest", target, sizeof(target) - 1);
	REQUIRE(n > 0);
	target[n] = '\0';
	CHECK_STR_EQ(target, a.buf + strlen("profile_output/")); /* relative: the tree can move */
	REQUIRE(rundir_prepare(NULL, "app", 0, 0600, &b, &err) == 0);
	rundir_link_latest(b.buf);
	n = readlink("profile_output/latest", target, sizeof(target) - 1);
	REQUIRE(n > 0);
	target[n] = '\0';
	CHECK_STR_EQ(target, b.buf + strlen("profile_output/"));
	CHECK(is_dir("profile_output/latest"));
	CHECK_INT_EQ(access("profile_output/.latest.tmp", F_OK), -1);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&err);
	leave_tmp(&t);
}

CHECK_MAIN()
