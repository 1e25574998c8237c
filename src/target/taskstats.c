/* taskstats: generic netlink plumbing for per-task exit accounting. */
#define LOG_DOMAIN "taskstats"
#include "taskstats.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TASKSTATS_RCVBUF_BYTES (8 << 20)

struct taskstats_listener {
	int fd;
	uint16_t family;
	char *recv_buf;
	size_t recv_cap;
};

/* Netlink attributes are 4-byte aligned (type, length, payload). */
#define NLA_ALIGN_TO(len) (((len) + NLA_ALIGNTO - 1) & ~(NLA_ALIGNTO - 1))

struct nl_request {
	struct nlmsghdr nh;
	struct genlmsghdr gh;
	char attrs[256];
};

static int nl_send(int fd, uint16_t type, uint16_t flags, uint8_t cmd, uint16_t attr,
		   const void *payload, size_t len)
{
	struct nl_request req;
	memset(&req, 0, sizeof(req));
	struct nlattr *na = (struct nlattr *)req.attrs;
	if (NLA_HDRLEN + len > sizeof(req.attrs))
		return -EINVAL;
	na->nla_type = attr;
	na->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)na + NLA_HDRLEN, payload, len);
	req.nh.nlmsg_type = type;
	req.nh.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	req.nh.nlmsg_len = (uint32_t)(NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN_TO(na->nla_len));
	req.gh.cmd = cmd;
	req.gh.version = 1;
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

/* Reads one reply; returns its length, or -errno (a netlink error included). */
static ssize_t nl_recv_reply(int fd, char *buf, size_t cap)
{
	ssize_t n;
	do {
		n = recv(fd, buf, cap, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	if (!NLMSG_OK(nh, (size_t)n))
		return -EBADMSG;
	if (nh->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(nh);
		return e->error ? e->error : 0;
	}
	return n;
}

static int family_id(int fd, uint16_t *out)
{
	char buf[4096];
	int rc = nl_send(fd, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME,
			 TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME));
	if (rc)
		return rc;
	ssize_t n = nl_recv_reply(fd, buf, sizeof(buf));
	if (n <= 0)
		return n ? (int)n : -ENOENT;
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	char *p = (char *)NLMSG_DATA(nh) + GENL_HDRLEN;
	char *end = (char *)nh + nh->nlmsg_len;
	while (p + NLA_HDRLEN <= end) {
		struct nlattr *na = (struct nlattr *)p;
		if (na->nla_len < NLA_HDRLEN || p + na->nla_len > end)
			break;
		if (na->nla_type == CTRL_ATTR_FAMILY_ID && na->nla_len >= NLA_HDRLEN + 2) {
			memcpy(out, p + NLA_HDRLEN, sizeof(*out));
			return 0;
		}
		p += NLA_ALIGN_TO(na->nla_len);
	}
	return -ENOENT;
}

int taskstats_open(struct taskstats_listener **out, struct strbuf *why)
{
	struct taskstats_listener *ts = xcalloc(1, sizeof(*ts));
	char cpus[64];
	int rc;
	ts->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (ts->fd < 0) {
		strbuf_addf(why, "no generic netlink socket: %s", strerror(errno));
		goto fail;
	}
	struct sockaddr_nl me = { .nl_family = AF_NETLINK };
	if (bind(ts->fd, (struct sockaddr *)&me, sizeof(me)) < 0) {
		strbuf_addf(why, "cannot bind a netlink socket: %s", strerror(errno));
		goto fail;
	}
	int rcvbuf = TASKSTATS_RCVBUF_BYTES;
	if (setsockopt(ts->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(ts->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	rc = family_id(ts->fd, &ts->family);
	if (rc) {
		strbuf_addf(why, "the kernel has no TASKSTATS netlink family (%s)", strerror(-rc));
		goto fail;
	}
	if (file_read_small("/sys/devices/system/cpu/possible", cpus, sizeof(cpus)) <= 0)
		snprintf(cpus, sizeof(cpus), "0-%ld", sysconf(_SC_NPROCESSORS_CONF) - 1);
	cpus[strcspn(cpus, "\n")] = '\0';
	rc = nl_send(ts->fd, ts->family, NLM_F_ACK, TASKSTATS_CMD_GET,
		     TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, cpus, strlen(cpus) + 1);
	/* The acknowledgement (or the refusal, without CAP_NET_ADMIN) follows at
	 * once; exit records of other tasks may come first and are skipped. */
	for (int tries = 0; !rc && tries < 64; tries++) {
		char buf[8192];
		ssize_t n = recv(ts->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		struct nlmsghdr *nh = (struct nlmsghdr *)buf;
		if (NLMSG_OK(nh, (size_t)n) && nh->nlmsg_type == NLMSG_ERROR) {
			rc = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
			break;
		}
	}
	if (rc) {
		strbuf_addf(why, "cannot register for exit statistics: %s%s", strerror(-rc),
			    rc == -EPERM ? " (needs CAP_NET_ADMIN: run sonde as root)" : "");
		goto fail;
	}
	ts->recv_cap = 256 * 1024;
	ts->recv_buf = xmalloc(ts->recv_cap);
	*out = ts;
	return 0;
fail:
	taskstats_close(ts);
	return -1;
}

void taskstats_close(struct taskstats_listener *ts)
{
	if (!ts)
		return;
	if (ts->fd >= 0)
		close(ts->fd);
	free(ts->recv_buf);
	free(ts);
}

/* v * mul as int64, saturated: the kernel's u64 fields may hold anything. */
static int64_t scaled_i64(uint64_t v, uint64_t mul)
{
	uint64_t r;
	if (__builtin_mul_overflow(v, mul, &r) || r > (uint64_t)INT64_MAX)
		return INT64_MAX;
	return (int64_t)r;
}

static int64_t double_i64(double v)
{
	return v >= 9.2e18 ? INT64_MAX : v <= 0 ? 0 : (int64_t)v;
}

static void task_exit_from(const struct taskstats *s, struct task_exit *e)
{
	memset(e, 0, sizeof(*e));
	e->tid = (pid_t)s->ac_pid;
	e->pid = s->version >= 12 && s->ac_tgid ? (pid_t)s->ac_tgid : (pid_t)s->ac_pid;
	e->ppid = (pid_t)s->ac_ppid;
	snprintf(e->comm, sizeof(e->comm), "%.*s", (int)sizeof(s->ac_comm), s->ac_comm);
	e->exit_code = (int)s->ac_exitcode;
	/* ac_utime/ac_stime (and cpu_run_real_total, their sum) are tick samples and
	 * can be off by many ticks; cpu_run_virtual_total is the scheduler's exact
	 * on-CPU time. Split it in the ticks' proportion, as the kernel itself does
	 * for /proc and wait4. */
	double user_us = (double)s->ac_utime, sys_us = (double)s->ac_stime;
	if (s->cpu_run_virtual_total && user_us + sys_us > 0) {
		int64_t total_ns = scaled_i64(s->cpu_run_virtual_total, 1);
		e->user_ns = double_i64((double)total_ns * user_us / (user_us + sys_us));
		e->sys_ns = total_ns - (e->user_ns < total_ns ? e->user_ns : total_ns);
		e->cpu_exact = 1;
	} else {
		e->user_ns = scaled_i64(s->ac_utime, 1000);
		e->sys_ns = scaled_i64(s->ac_stime, 1000);
	}
	e->runq_wait_ns = scaled_i64(s->cpu_delay_total, 1);
	e->elapsed_ns = scaled_i64(s->ac_etime, 1000);
	e->vcsw = scaled_i64(s->nvcsw, 1);
	e->ivcsw = scaled_i64(s->nivcsw, 1);
	e->minflt = scaled_i64(s->ac_minflt, 1);
	e->majflt = scaled_i64(s->ac_majflt, 1);
	e->hiwater_rss_bytes = scaled_i64(s->hiwater_rss, 1024);
	e->rchar = scaled_i64(s->read_char, 1);
	e->wchar = scaled_i64(s->write_char, 1);
	e->read_bytes = scaled_i64(s->read_bytes, 1);
	e->write_bytes = scaled_i64(s->write_bytes, 1);
	e->syscr = scaled_i64(s->read_syscalls, 1);
	e->syscw = scaled_i64(s->write_syscalls, 1);
}

/* Walks the attributes of [p, end): an AGGR_PID nest holds PID and STATS. */
static int parse_attrs(const char *p, const char *end, task_exit_fn fn, void *data, int depth)
{
	int found = 0;
	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *na = (const struct nlattr *)p;
		if (na->nla_len < NLA_HDRLEN || na->nla_len > end - p)
			return -1;
		const char *payload = p + NLA_HDRLEN;
		size_t plen = na->nla_len - NLA_HDRLEN;
		int type = na->nla_type & NLA_TYPE_MASK;
		if (type == TASKSTATS_TYPE_AGGR_PID && depth == 0) {
			int rc = parse_attrs(payload, payload + plen, fn, data, 1);
			if (rc < 0)
				return -1;
			found += rc;
		} else if (type == TASKSTATS_TYPE_STATS && depth == 1) {
			/* The kernel's struct may be older or newer than ours: copy what both know. */
			struct taskstats s;
			memset(&s, 0, sizeof(s));
			memcpy(&s, payload, plen < sizeof(s) ? plen : sizeof(s));
			struct task_exit e;
			task_exit_from(&s, &e);
			fn(data, &e);
			found++;
		}
		/* AGGR_TGID carries only delay totals for the group: the per-thread
		 * records already hold everything summed by process. */
		size_t step = NLA_ALIGN_TO(na->nla_len);
		if (step > (size_t)(end - p))
			break;
		p += step;
	}
	return found;
}

int taskstats_parse(const void *buf, size_t len, task_exit_fn fn, void *data)
{
	int found = 0;
	const char *p = buf;
	/* NLMSG_NEXT would underflow on a lying length: walk by hand. */
	while (len >= sizeof(struct nlmsghdr)) {
		const struct nlmsghdr *nh = (const struct nlmsghdr *)p;
		size_t msg_len = nh->nlmsg_len;
		if (msg_len < sizeof(*nh) || msg_len > len)
			return -1;
		if (nh->nlmsg_type != NLMSG_ERROR && nh->nlmsg_type != NLMSG_DONE) {
			if (msg_len < NLMSG_LENGTH(GENL_HDRLEN))
				return -1;
			int rc = parse_attrs(p + NLMSG_LENGTH(GENL_HDRLEN), p + msg_len, fn, data, 0);
			if (rc < 0)
				return -1;
			found += rc;
		}
		size_t step = NLMSG_ALIGN(msg_len);
		if (step >= len)
			break;
		p += step;
		len -= step;
	}
	return found;
}

int taskstats_drain(struct taskstats_listener *ts, task_exit_fn fn, void *data)
{
	int total = 0, lost = 0;
	for (;;) {
		ssize_t n = recv(ts->fd, ts->recv_buf, ts->recv_cap, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				lost = 1; /* the kernel dropped records: say so, keep going */
				continue;
			}
			break;
		}
		int rc = taskstats_parse(ts->recv_buf, (size_t)n, fn, data);
		if (rc > 0)
			total += rc;
	}
	return lost ? -1 : total;
}
