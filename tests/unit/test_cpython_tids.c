/* Unit tests of cpython_tids: the NSpid line of /proc status files, and the
 * mapping of a process's own thread ids to sonde's. */
#include "check.h"
#include "symbols/cpython_tids.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

TEST(nspid_nested, "an NSpid line gives the first id as the host's and the last as the process's own")
{
	pid_t host = 0, inner = 0;
	const char *st = "Name:\tpython3\nTgid:\t4242\nNSpid:\t4242\t17\t1\nNSpgid:\t1\n";
	REQUIRE(cpython_tids_parse_nspid(st, &host, &inner) == 0);
	CHECK(host == 4242);
	CHECK(inner == 1);
}

TEST(nspid_flat, "a process in sonde's own namespace has one id, both ways")
{
	pid_t host = 0, inner = 0;
	REQUIRE(cpython_tids_parse_nspid("NSpid:\t99\n", &host, &inner) == 0);
	CHECK(host == 99 && inner == 99);
}

TEST(nspid_bad, "a status without NSpid, or with garbage in it, gives no ids")
{
	pid_t host = 7, inner = 7;
	CHECK(cpython_tids_parse_nspid("Name:\tx\nPid:\t3\n", &host, &inner) == -1);
	CHECK(cpython_tids_parse_nspid("NSpid:\t\n", &host, &inner) == -1);
	CHECK(cpython_tids_parse_nspid("NSpid:\t12x\n", &host, &inner) == -1);
	CHECK(cpython_tids_parse_nspid("NSpid:\t-3\n", &host, &inner) == -1);
	CHECK(cpython_tids_parse_nspid("NSpid:\t99999999999999999999\n", &host, &inner) == -1);
	CHECK(cpython_tids_parse_nspid("NSpid:", &host, &inner) == -1);
	CHECK(host == 7 && inner == 7);
}

static void *idle(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

TEST(own_tids, "this process's threads map to themselves and are all listed")
{
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, idle, NULL) == 0);
	struct cpython_tids m;
	REQUIRE(cpython_tids_init(&m, getpid()) == 0);
	cpython_tids_refresh(&m);
	size_t n = 0;
	const pid_t *tids = cpython_tids_ns(&m, &n);
	CHECK(n >= 2);
	int self = 0;
	pid_t me = (pid_t)syscall(SYS_gettid);
	for (size_t i = 0; i < n; i++) {
		self |= tids[i] == me;
		CHECK(cpython_tids_host(&m, tids[i]) == tids[i]);
	}
	CHECK(self);
	cpython_tids_release(&m);
	pthread_cancel(th);
	pthread_join(th, NULL);
}

TEST(gone, "a process that is gone is an error")
{
	struct cpython_tids m;
	CHECK(cpython_tids_init(&m, (pid_t)(1 << 22) + 1) < 0);
	cpython_tids_release(&m);
}

CHECK_MAIN()
