/* test_fileio: bounded reads and directory helpers. */
#include "check.h"
#include "util/fileio.h"
#include "util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

TEST(write_then_read, "what file_write_all writes, file_read_small reads back NUL-terminated")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char p[4200], buf[64];
	snprintf(p, sizeof(p), "%s/f", tmp);
	CHECK_INT_EQ(file_write_all(p, "hello\n", 6), 0);
	CHECK_INT_EQ(file_read_small(p, buf, sizeof(buf)), 6);
	CHECK_STR_EQ(buf, "hello\n");
	CHECK_INT_EQ(file_write_all(p, "x", 1), 0); /* truncates */
	CHECK_INT_EQ(file_read_small(p, buf, sizeof(buf)), 1);
	CHECK_STR_EQ(buf, "x");
	check_rmtree(tmp);
}

TEST(read_small_caps, "file_read_small reads at most cap-1 bytes and always terminates the buffer")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char p[4200], buf[8];
	snprintf(p, sizeof(p), "%s/f", tmp);
	CHECK_INT_EQ(file_write_all(p, "0123456789", 10), 0);
	memset(buf, 'Z', sizeof(buf));
	CHECK_INT_EQ(file_read_small(p, buf, sizeof(buf)), 7);
	CHECK_STR_EQ(buf, "0123456");
	CHECK_INT_EQ(file_read_small(p, buf, 0), -EINVAL);
	CHECK_INT_EQ(file_read_small(p, buf, 1), 0);
	CHECK_STR_EQ(buf, "");
	snprintf(p, sizeof(p), "%s/missing", tmp);
	CHECK_INT_EQ(file_read_small(p, buf, sizeof(buf)), -ENOENT);
	check_rmtree(tmp);
}

TEST(read_strbuf_caps, "file_read_strbuf appends at most max_bytes")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char p[4200];
	snprintf(p, sizeof(p), "%s/big", tmp);
	size_t n = 100000;
	char *data = malloc(n);
	REQUIRE(data);
	memset(data, 'b', n);
	CHECK_INT_EQ(file_write_all(p, data, n), 0);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, ">");
	CHECK_INT_EQ(file_read_strbuf(p, &sb, 20000), 20000);
	CHECK_INT_EQ(sb.len, 20001);
	strbuf_reset(&sb);
	CHECK_INT_EQ(file_read_strbuf(p, &sb, 1 << 20), (long long)n);
	CHECK_INT_EQ(sb.len, n);
	CHECK_INT_EQ(file_read_strbuf("/proc/self/status", &sb, 1 << 20) > 0, 1); /* size 0 in stat */
	strbuf_release(&sb);
	free(data);
	check_rmtree(tmp);
}

TEST(mkdir_parents, "dir_create_parents makes every missing level, accepts existing ones and a trailing slash")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/a/b/c", tmp);
	CHECK_INT_EQ(dir_create_parents(p, 0755), 0);
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_INT_EQ(dir_create_parents(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/a/d/", tmp);
	CHECK_INT_EQ(dir_create_parents(p, 0755), 0);
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	check_rmtree(tmp);
}

TEST(mkdir_through_file, "dir_create_parents through an existing file is -ENOTDIR")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char p[4200];
	snprintf(p, sizeof(p), "%s/file", tmp);
	CHECK_INT_EQ(file_write_all(p, "", 0), 0);
	CHECK_INT_EQ(dir_create_parents(p, 0755), -ENOTDIR);
	snprintf(p, sizeof(p), "%s/file/sub", tmp);
	CHECK_INT_EQ(dir_create_parents(p, 0755), -ENOTDIR);
	check_rmtree(tmp);
}

TEST(mkdir_empty, "dir_create_parents of an empty path is refused (ENOENT, like mkdir)")
{
	CHECK_INT_EQ(dir_create_parents("", 0755), -ENOENT);
}

TEST(dir_empty, "dir_is_empty tells an empty directory from one with entries, and reports a missing one")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char p[4200];
	CHECK_INT_EQ(dir_is_empty(tmp), 1);
	snprintf(p, sizeof(p), "%s/.hidden", tmp);
	CHECK_INT_EQ(file_write_all(p, "", 0), 0);
	CHECK_INT_EQ(dir_is_empty(tmp), 0);
	snprintf(p, sizeof(p), "%s/missing", tmp);
	CHECK_INT_EQ(dir_is_empty(p), -ENOENT);
	check_rmtree(tmp);
}

TEST(fifo_refused, "the readers refuse a FIFO at once (EFTYPE_SONDE) instead of waiting for a writer, and a link when asked to")
{
	char *tmp = check_tmpdir();
	REQUIRE(tmp);
	char p[4200], l[4200], buf[16];
	snprintf(p, sizeof(p), "%s/fifo", tmp);
	REQUIRE(mkfifo(p, 0600) == 0);
	CHECK_INT_EQ(file_read_small(p, buf, sizeof(buf)), -EFTYPE_SONDE);
	struct strbuf sb = STRBUF_INIT;
	CHECK_INT_EQ(file_read_strbuf(p, &sb, 100), -EFTYPE_SONDE);
	CHECK_INT_EQ(file_open_regular(tmp, 0), -EFTYPE_SONDE); /* a directory */
	snprintf(p, sizeof(p), "%s/f", tmp);
	snprintf(l, sizeof(l), "%s/link", tmp);
	CHECK_INT_EQ(file_write_all(p, "x", 1), 0);
	REQUIRE(symlink(p, l) == 0);
	CHECK_INT_EQ(file_open_regular(l, O_NOFOLLOW), -ELOOP);
	CHECK_INT_EQ(file_write_all(l, "y", 1), -ELOOP); /* never written through */
	CHECK_INT_EQ(file_read_small(p, buf, sizeof(buf)), 1);
	CHECK_STR_EQ(buf, "x");
	strbuf_release(&sb);
	check_rmtree(tmp);
}

CHECK_MAIN()
