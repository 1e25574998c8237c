/* procfs: /proc/PID/{stat,status,io,schedstat,cmdline} parsing. */
#include "procfs.h"
#include "../util/fileio.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int procfs_parse_stat(const char *buf, struct procfs_stat *out)
{
	struct procfs_stat st;
	memset(&st, 0, sizeof(st));
	const char *lp = strchr(buf, '(');
	const char *rp = strrchr(buf, ')'); /* comm may itself hold ')' */
	if (!lp || !rp || rp < lp)
		return -EINVAL;
	st.pid = (pid_t)strtol(buf, NULL, 10);
	size_t n = (size_t)(rp - lp - 1);
	if (n >= sizeof(st.comm))
		n = sizeof(st.comm) - 1;
	memcpy(st.comm, lp + 1, n);
	st.comm[n] = '\0';
	/* Fields after comm, numbered as in proc(5) from 3 (state). */
	const char *p = rp + 1;
	unsigned long long f[50];
	int nf = 0;
	while (*p == ' ')
		p++;
	if (!*p)
		return -EINVAL;
	st.state = *p++;
	while (nf < 50) {
		char *end;
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		f[nf] = strtoull(p, &end, 10);
		if (end == p) {
			/* negative numbers (priority, nice) parse through strtoll */
			long long v = strtoll(p, &end, 10);
			if (end == p)
				return -EINVAL;
			f[nf] = (unsigned long long)v;
		}
		nf++;
		p = end;
	}
	/* f[0] is field 4 (ppid). */
	if (nf < 21)
		return -EINVAL;
	st.ppid = (pid_t)f[0];
	st.pgrp = (pid_t)f[1];
	st.sid = (pid_t)f[2];
	st.minflt = f[6];
	st.majflt = f[8];
	st.utime_ticks = f[10];
	st.stime_ticks = f[11];
	st.num_threads = (int64_t)f[16];
	st.starttime_ticks = f[18];
	st.rss_pages = (int64_t)f[20];
	*out = st;
	return 0;
}

static int64_t status_kb(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	if (!p)
		return -1;
	long long kb = strtoll(p + strlen(key), NULL, 10);
	if (kb < 0 || kb > INT64_MAX / 1024)
		return -1; /* not a size the kernel would print */
	return kb * 1024;
}

static int64_t status_num(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	if (!p)
		return -1;
	return strtoll(p + strlen(key), NULL, 10);
}

int procfs_parse_status(const char *buf, struct procfs_status *out)
{
	if (!strstr(buf, "Name:"))
		return -EINVAL;
	out->vm_hwm_bytes = status_kb(buf, "\nVmHWM:");
	out->vm_rss_bytes = status_kb(buf, "\nVmRSS:");
	out->vcsw = status_num(buf, "\nvoluntary_ctxt_switches:");
	out->ivcsw = status_num(buf, "\nnonvoluntary_ctxt_switches:");
	return 0;
}

int procfs_parse_io(const char *buf, struct procfs_io *out)
{
	struct procfs_io io;
	io.rchar = status_num(buf, "rchar:");
	io.wchar = status_num(buf, "wchar:");
	io.read_bytes = status_num(buf, "\nread_bytes:");
	io.write_bytes = status_num(buf, "\nwrite_bytes:");
	io.syscr = status_num(buf, "\nsyscr:");
	io.syscw = status_num(buf, "\nsyscw:");
	if (io.rchar < 0 || io.wchar < 0)
		return -EINVAL;
	*out = io;
	return 0;
}

int procfs_parse_schedstat(const char *buf, struct procfs_schedstat *out)
{
	unsigned long long a, b, c;
	if (sscanf(buf, "%llu %llu %llu", &a, &b, &c) != 3)
		return -EINVAL;
	out->oncpu_ns = a;
	out->runq_wait_ns = b;
	out->slices = c;
	return 0;
}

static void proc_path(char *path, size_t cap, pid_t pid, pid_t tid, const char *file)
{
	if (tid)
		snprintf(path, cap, "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
	else
		snprintf(path, cap, "/proc/%d/%s", (int)pid, file);
}

/* Reads /proc/PID[/task/TID]/file into buf; 0 or -errno. */
static int proc_read(pid_t pid, pid_t tid, const char *file, char *buf, size_t cap)
{
	char path[64];
	proc_path(path, sizeof(path), pid, tid, file);
	ssize_t n = file_read_small(path, buf, cap);
	return n < 0 ? (int)n : 0;
}

int procfs_read_stat(pid_t pid, pid_t tid, struct procfs_stat *out)
{
	char buf[1024];
	int rc = proc_read(pid, tid, "stat", buf, sizeof(buf));
	return rc ? rc : procfs_parse_stat(buf, out);
}

int procfs_read_status(pid_t pid, pid_t tid, struct procfs_status *out)
{
	char buf[4096];
	int rc = proc_read(pid, tid, "status", buf, sizeof(buf));
	return rc ? rc : procfs_parse_status(buf, out);
}

int procfs_read_io(pid_t pid, struct procfs_io *out)
{
	char buf[512];
	int rc = proc_read(pid, 0, "io", buf, sizeof(buf));
	return rc ? rc : procfs_parse_io(buf, out);
}

int procfs_read_schedstat(pid_t pid, pid_t tid, struct procfs_schedstat *out)
{
	char buf[128];
	int rc = proc_read(pid, tid, "schedstat", buf, sizeof(buf));
	return rc ? rc : procfs_parse_schedstat(buf, out);
}

int procfs_read_cmdline(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	proc_path(path, sizeof(path), pid, 0, "cmdline");
	ssize_t n = file_read_small(path, buf, cap);
	if (n < 0)
		return (int)n;
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	if (n == 0) {
		struct procfs_stat st;
		int rc = procfs_read_stat(pid, 0, &st);
		if (rc)
			return rc;
		snprintf(buf, cap, "[%s]", st.comm);
	}
	return 0;
}

int procfs_read_exec_id(pid_t pid, uint64_t *out)
{
	char path[64], buf[1024]; /* about 21 entries of 16 bytes */
	proc_path(path, sizeof(path), pid, 0, "auxv");
	ssize_t n = file_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ESRCH; /* a zombie or a kernel thread */
	*out = hash_bytes(buf, (size_t)n);
	return 0;
}

long procfs_ticks_per_s(void)
{
	static long ticks;
	if (!ticks)
		ticks = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	return ticks;
}

long procfs_page_bytes(void)
{
	static long page;
	if (!page)
		page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	return page;
}

int64_t procfs_start_mono_ns(uint64_t starttime_ticks)
{
	/* Boot time minus monotonic time: the time spent suspended, constant
	 * between two suspends. Read close together, it is exact to a few us. */
	struct timespec boot, mono;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	int64_t suspended_ns = ((int64_t)boot.tv_sec - (int64_t)mono.tv_sec) * 1000000000LL +
			       (boot.tv_nsec - mono.tv_nsec);
	uint64_t hz = (uint64_t)procfs_ticks_per_s();
	int64_t since_boot_ns = (int64_t)(starttime_ticks / hz) * 1000000000LL +
				(int64_t)((starttime_ticks % hz) * 1000000000ULL / hz);
	return since_boot_ns - suspended_ns;
}

/* CapPrm or CapEff of /proc/PID/status (pid 0: sonde), or -1. */
static int64_t status_caps(pid_t pid, const char *key)
{
	char buf[4096], path[64];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	if (file_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	const char *p = strstr(buf, key);
	if (!p)
		return -1;
	return (int64_t)strtoull(p + strlen(key), NULL, 16);
}

void procfs_explain_denied(pid_t pid, struct strbuf *why)
{
	char buf[16];
	int scope = file_read_small("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) > 0
			    ? atoi(buf)
			    : -1;
	if (geteuid() != 0) {
		if (scope >= 2)
			strbuf_addf(why, "kernel.yama.ptrace_scope is %d: run sonde as root (with "
					 "CAP_SYS_PTRACE)%s",
				    scope, scope == 2 ? ", or set the sysctl to 1" : "");
		else
			strbuf_addstr(why, "run sonde as the process's user with "
					   "kernel.yama.ptrace_scope at most 1, or as root "
					   "(CAP_SYS_PTRACE)");
		return;
	}
	int64_t theirs = status_caps(pid, "\nCapPrm:"), ours = status_caps(0, "\nCapEff:");
	if (theirs >= 0 && ours >= 0 && (theirs & ~ours))
		strbuf_addf(why, "sonde runs as root but process %d holds capabilities sonde lacks "
				 "(CapPrm %llx, sonde's CapEff %llx): it runs with more privilege "
				 "than sonde, e.g. outside sonde's container; run sonde where the "
				 "process runs, with the same capabilities",
			    (int)pid, (unsigned long long)theirs, (unsigned long long)ours);
	else if (scope >= 3)
		strbuf_addstr(why, "kernel.yama.ptrace_scope is 3: no process may read another's "
				   "memory until reboot");
	else if (!((ours >> 19) & 1)) /* CAP_SYS_PTRACE */
		strbuf_addstr(why, "sonde runs as root without CAP_SYS_PTRACE (a container "
				   "dropped it): add it (docker run --cap-add SYS_PTRACE)");
	else
		strbuf_addstr(why, "sonde runs as root with CAP_SYS_PTRACE, so a security module "
				   "(SELinux, AppArmor) or another PID namespace forbids it");
}
