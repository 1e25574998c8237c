/* test_safefile: creating and replacing files never writes through a link. */
#include "check.h"
#include "util/fileio.h"
#include "util/safefile.h"
#include "util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static mode_t current_umask(void)
{
	mode_t m = umask(0);
	umask(m);
	return m;
}

static void read_back(const char *dir, const char *name, char *buf, size_t cap)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (file_read_small(p, buf, cap) < 0)
		buf[0] = '\0';
}

TEST(tmp_then_commit, "a temporary renamed over a planted link replaces the link; the link's target is untouched")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char victim[4200], link[4200], buf[64];
	snprintf(victim, sizeof(victim), "%s/victim", tmp);
	snprintf(link, sizeof(link), "%s/report.md", tmp);
	REQUIRE(file_write_all(victim, "victim\n", 7) == 0);
	REQUIRE(symlink(victim, link) == 0);
	int dirfd = safe_dir_open(tmp);
	REQUIRE(dirfd >= 0);
	struct strbuf name = STRBUF_INIT;
	int fd = safe_tmp_create(dirfd, "report.md", 0600, &name);
	REQUIRE(fd >= 0);
	CHECK(!strncmp(name.buf, ".report.md.", 11) && name.len > 11);
	CHECK_INT_EQ(write(fd, "new\n", 4), 4);
	close(fd);
	CHECK_INT_EQ(safe_tmp_commit(dirfd, name.buf, "report.md"), 0);
	read_back(tmp, "victim", buf, sizeof(buf));
	CHECK_STR_EQ(buf, "victim\n");
	struct stat st;
	REQUIRE(lstat(link, &st) == 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_INT_EQ(st.st_mode & 0777, 0600 & ~current_umask());
	read_back(tmp, "report.md", buf, sizeof(buf));
	CHECK_STR_EQ(buf, "new\n");
	strbuf_release(&name);
	close(dirfd);
	check_rmtree(tmp);
}

TEST(excl_refuses_links, "creating a file that must be new refuses a dangling link, and creates nothing at its target")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char target[4200], link[4200];
	snprintf(target, sizeof(target), "%s/target", tmp);
	snprintf(link, sizeof(link), "%s/profile.db", tmp);
	REQUIRE(symlink(target, link) == 0);
	int dirfd = safe_dir_open(tmp);
	REQUIRE(dirfd >= 0);
	CHECK_INT_EQ(safe_create_excl(dirfd, "profile.db", 0600), -EEXIST);
	CHECK_INT_EQ(access(target, F_OK), -1);
	close(dirfd);
	check_rmtree(tmp);
}

TEST(symlink_replace, "the latest link is replaced when it is a link, and a regular file at its name is left alone")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	int dirfd = safe_dir_open(tmp);
	REQUIRE(dirfd >= 0);
	char buf[64];
	CHECK_INT_EQ(safe_symlink_replace(dirfd, "run-1", "latest"), 0);
	CHECK_INT_EQ(safe_symlink_replace(dirfd, "run-2", "latest"), 0);
	ssize_t n = readlinkat(dirfd, "latest", buf, sizeof(buf) - 1);
	REQUIRE(n > 0);
	buf[n] = '\0';
	CHECK_STR_EQ(buf, "run-2");
	int fd = safe_create_excl(dirfd, "mine", 0600);
	REQUIRE(fd >= 0);
	close(fd);
	CHECK_INT_EQ(safe_symlink_replace(dirfd, "run-3", "mine"), -EEXIST);
	struct stat st;
	CHECK(fstatat(dirfd, "mine", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode));
	close(dirfd);
	check_rmtree(tmp);
}

CHECK_MAIN()
