/* test_procfs: the /proc parsers, fed real-looking text. */
#include "check.h"
#include "target/procfs.h"
#include "util/strbuf.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A live process whose comm holds spaces and parentheses. */
static const char stat_weird[] =
	"4242 (my (odd) cmd) R 4241 4242 4200 34816 4242 4194304 1500 0 7 0 250 31 0 0 20 0 3 0 "
	"987654 123456789 2048 18446744073709551615 94000000000000 94000000100000 "
	"140720000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94000000200000 94000000300000 "
	"94000000400000 140720000001000 140720000001100 140720000001100 140720000002000 0\n";

/* A zombie: no memory, fields still present. */
static const char stat_zombie[] =
	"4300 (worker) Z 4242 4242 4200 0 -1 4227084 12 0 0 0 3 1 0 0 20 0 1 0 990000 0 0 "
	"18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

TEST(stat_comm_with_parens, "a comm holding spaces and ')' is read whole and the fields after it land right")
{
	struct procfs_stat st;
	REQUIRE(procfs_parse_stat(stat_weird, &st) == 0);
	CHECK_INT_EQ(st.pid, 4242);
	CHECK_STR_EQ(st.comm, "my (odd) cmd");
	CHECK(st.state == 'R');
	CHECK_INT_EQ(st.ppid, 4241);
	CHECK_INT_EQ(st.pgrp, 4242);
	CHECK_INT_EQ(st.minflt, 1500);
	CHECK_INT_EQ(st.majflt, 7);
	CHECK_INT_EQ(st.utime_ticks, 250);
	CHECK_INT_EQ(st.stime_ticks, 31);
	CHECK_INT_EQ(st.num_threads, 3);
	CHECK_INT_EQ(st.starttime_ticks, 987654);
	CHECK_INT_EQ(st.rss_pages, 2048);
}

TEST(stat_comm_looks_like_fields, "a comm that imitates the fields after it cannot shift them")
{
	static const char line[] = "77 (x) R 1 2 3) S 5 77 77 0 -1 0 9 0 0 0 4 2 0 0 20 0 1 0 555 0 10 0\n";
	struct procfs_stat st;
	REQUIRE(procfs_parse_stat(line, &st) == 0);
	CHECK_STR_EQ(st.comm, "x) R 1 2 3");
	CHECK(st.state == 'S');
	CHECK_INT_EQ(st.ppid, 5);
	CHECK_INT_EQ(st.starttime_ticks, 555);
	CHECK_INT_EQ(st.rss_pages, 10);
}

TEST(stat_zombie_parsed, "a zombie's stat line parses with state Z and its parent")
{
	struct procfs_stat st;
	REQUIRE(procfs_parse_stat(stat_zombie, &st) == 0);
	CHECK(st.state == 'Z');
	CHECK_STR_EQ(st.comm, "worker");
	CHECK_INT_EQ(st.ppid, 4242);
	CHECK_INT_EQ(st.rss_pages, 0);
	CHECK_INT_EQ(st.starttime_ticks, 990000);
}

TEST(stat_malformed, "a stat line without parentheses, state or enough fields is refused and out is untouched")
{
	static const char *bad[] = {
		"",
		"123 noparens S 1 2 3",
		"123 (x",
		"123 )x( S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21",
		"123 (x)",
		"123 (x) S 1 2 3 4 5",
		"123 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 abc",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct procfs_stat st;
		memset(&st, 0x5a, sizeof(st));
		int rc = procfs_parse_stat(bad[i], &st);
		if (rc != -EINVAL || st.pid != 0x5a5a5a5a)
			check_fail(__FILE__, __LINE__, "\"%s\": rc %d, out %s", bad[i], rc,
				   st.pid != 0x5a5a5a5a ? "written" : "untouched");
	}
}

TEST(stat_long_comm, "an over-long comm is cut to fit and stays NUL-terminated")
{
	char line[512];
	char comm[200];
	memset(comm, 'c', sizeof(comm) - 1);
	comm[sizeof(comm) - 1] = '\0';
	snprintf(line, sizeof(line), "9 (%s) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0 0\n", comm);
	struct procfs_stat st;
	REQUIRE(procfs_parse_stat(line, &st) == 0);
	CHECK_INT_EQ(strlen(st.comm), sizeof(st.comm) - 1);
	CHECK_INT_EQ(st.starttime_ticks, 7);
}

static const char status_live[] =
	"Name:\tmy (odd) cmd\nUmask:\t0022\nState:\tR (running)\nTgid:\t4242\nNgid:\t0\n"
	"Pid:\t4242\nPPid:\t4241\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
	"FDSize:\t64\nGroups:\t0 \nVmPeak:\t   20000 kB\nVmSize:\t   19000 kB\nVmLck:\t       0 kB\n"
	"VmPin:\t       0 kB\nVmHWM:\t    8192 kB\nVmRSS:\t    4096 kB\nRssAnon:\t    1000 kB\n"
	"Threads:\t3\nvoluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t12\n";

static const char status_zombie[] = "Name:\tworker\nUmask:\t0022\nState:\tZ (zombie)\n"
				    "Tgid:\t4300\nPid:\t4300\nPPid:\t4242\nThreads:\t1\n"
				    "voluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t0\n";

TEST(status_fields, "status gives peak and current RSS in bytes and both context-switch counts")
{
	struct procfs_status s;
	REQUIRE(procfs_parse_status(status_live, &s) == 0);
	CHECK_INT_EQ(s.vm_hwm_bytes, 8192 * 1024LL);
	CHECK_INT_EQ(s.vm_rss_bytes, 4096 * 1024LL);
	CHECK_INT_EQ(s.vcsw, 150);
	CHECK_INT_EQ(s.ivcsw, 12);
}

TEST(status_zombie_absent_test, "a zombie's status has no memory lines, which read as absent (-1), not zero")
{
	struct procfs_status s;
	REQUIRE(procfs_parse_status(status_zombie, &s) == 0);
	CHECK_INT_EQ(s.vm_hwm_bytes, -1);
	CHECK_INT_EQ(s.vm_rss_bytes, -1);
	CHECK_INT_EQ(s.vcsw, 3);
	CHECK_INT_EQ(s.ivcsw, 0);
}

TEST(status_not_status, "text that is not a status file is refused")
{
	struct procfs_status s;
	CHECK(procfs_parse_status("", &s) != 0);
	CHECK(procfs_parse_status("garbage\n", &s) != 0);
}

TEST(io_fields, "io gives the four byte counters, and storage counters absent read as -1")
{
	struct procfs_io io;
	REQUIRE(procfs_parse_io("rchar: 1000\nwchar: 2000\nsyscr: 5\nsyscw: 6\nread_bytes: 4096\n"
				"write_bytes: 8192\ncancelled_write_bytes: 0\n",
				&io) == 0);
	CHECK_INT_EQ(io.rchar, 1000);
	CHECK_INT_EQ(io.wchar, 2000);
	CHECK_INT_EQ(io.read_bytes, 4096);
	CHECK_INT_EQ(io.write_bytes, 8192);
	REQUIRE(procfs_parse_io("rchar: 1\nwchar: 2\n", &io) == 0);
	CHECK_INT_EQ(io.read_bytes, -1);
	CHECK_INT_EQ(io.write_bytes, -1);
	CHECK(procfs_parse_io("", &io) != 0);
}

TEST(schedstat_fields, "schedstat gives on-CPU and run-queue nanoseconds and the slice count")
{
	struct procfs_schedstat s;
	REQUIRE(procfs_parse_schedstat("123456789 2345 17\n", &s) == 0);
	CHECK_INT_EQ(s.oncpu_ns, 123456789);
	CHECK_INT_EQ(s.runq_wait_ns, 2345);
	CHECK_INT_EQ(s.slices, 17);
	CHECK(procfs_parse_schedstat("1 2\n", &s) != 0);
}

TEST(read_self, "reading our own /proc files names this test and its parent")
{
	struct procfs_stat st;
	REQUIRE(procfs_read_stat(getpid(), 0, &st) == 0);
	CHECK_INT_EQ(st.pid, getpid());
	CHECK_INT_EQ(st.ppid, getppid());
	CHECK_STR_EQ(st.comm, "test_procfs");
	CHECK(st.num_threads >= 1);
	struct procfs_stat th;
	REQUIRE(procfs_read_stat(getpid(), getpid(), &th) == 0);
	CHECK_INT_EQ(th.starttime_ticks, st.starttime_ticks);
	struct procfs_status s;
	REQUIRE(procfs_read_status(getpid(), 0, &s) == 0);
	CHECK(s.vm_rss_bytes > 0);
	char cmd[256];
	REQUIRE(procfs_read_cmdline(getpid(), cmd, sizeof(cmd)) == 0);
	CHECK_CONTAINS(cmd, "test_procfs");
	CHECK(procfs_ticks_per_s() > 0);
	CHECK(procfs_page_bytes() >= 4096);
}

TEST(read_missing, "reading a pid that cannot exist fails with ENOENT")
{
	struct procfs_stat st;
	CHECK_INT_EQ(procfs_read_stat(5000000, 0, &st), -ENOENT);
	char cmd[16];
	CHECK_INT_EQ(procfs_read_cmdline(5000000, cmd, sizeof(cmd)), -ENOENT);
}

TEST(start_time_on_run_clock, "a process's start from stat, on CLOCK_MONOTONIC, lies between the moments just before and after its fork, within one tick")
{
	int64_t tick_ns = 1000000000LL / procfs_ticks_per_s();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t before = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0)
		_exit(0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t after = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	struct procfs_stat st;
	int rc = procfs_read_stat(child, 0, &st); /* a zombie until reaped */
	waitpid(child, NULL, 0);
	REQUIRE(rc == 0);
	int64_t start = procfs_start_mono_ns(st.starttime_ticks);
	CHECK(start >= before - tick_ns);
	CHECK(start <= after);
}

TEST(stat_session, "stat gives the session id, the field after the process group")
{
	struct procfs_stat st;
	REQUIRE(procfs_read_stat(getpid(), 0, &st) == 0);
	CHECK_INT_EQ(st.sid, getsid(0));
	CHECK_INT_EQ(st.pgrp, getpgrp());
}

TEST(denied_never_tells_root_to_be_root, "the reason a read was refused never tells root to run as root")
{
	struct strbuf why = STRBUF_INIT;
	procfs_explain_denied(1, &why);
	CHECK(why.len > 0);
	if (geteuid() == 0)
		CHECK(!strstr(why.buf, "run sonde as") && !strstr(why.buf, "or as root"));
	else
		CHECK_CONTAINS(why.buf, "as root");
	strbuf_release(&why);
}

CHECK_MAIN()
