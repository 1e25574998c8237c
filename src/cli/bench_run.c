/* bench_run: one timed run of a command for sonde bench, with its output
 * captured (bounded) and searched for the --metric number. */
#include "bench.h"
#include "../util/clock.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Output kept for the metric; the rest is read and dropped. */
#define BENCH_OUTPUT_MAX_BYTES (4u << 20)

int bench_metric_parse(const char *pattern, struct bench_metric *out, struct strbuf *err)
{
	const char *hole = strstr(pattern, "{float}");
	if (!hole || strstr(hole + 1, "{float}")) {
		strbuf_addf(err, "--metric '%s' must hold '{float}' exactly once", pattern);
		return -1;
	}
	out->prefix = xstrndup(pattern, (size_t)(hole - pattern));
	out->suffix = xstrdup(hole + strlen("{float}"));
	return 0;
}

void bench_metric_release(struct bench_metric *m)
{
	free(m->prefix);
	free(m->suffix);
	m->prefix = m->suffix = NULL;
}

double bench_metric_find(const struct bench_metric *m, const char *text, size_t len)
{
	if (!m->prefix)
		return NAN;
	size_t plen = strlen(m->prefix), slen = strlen(m->suffix);
	for (size_t i = 0; i + plen < len; i++) {
		if (memcmp(text + i, m->prefix, plen))
			continue;
		const char *num = text + i + plen;
		/* strtod stops at the buffer's NUL (the caller terminates it). */
		if (*num == ' ' || *num == '\t' || *num == '\n')
			continue; /* the pattern's own spaces must match */
		char *end;
		double v = strtod(num, &end);
		if (end == num || !isfinite(v))
			continue;
		if ((size_t)(end - text) + slen <= len && !memcmp(end, m->suffix, slen))
			return v;
	}
	return NAN;
}

static void child_exec(char *const *argv, int out_fd)
{
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0)
		dup2(devnull, 0);
	dup2(out_fd, 1);
	dup2(out_fd, 2);
	execvp(argv[0], argv);
	dprintf(out_fd, "sonde bench: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int bench_run_once(char *const *argv, const struct bench_metric *metric, int verbose,
		   struct bench_sample *out, struct strbuf *err)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC)) {
		strbuf_addf(err, "pipe: %s", strerror(errno));
		return -1;
	}
	int64_t start_ns = clock_mono_ns();
	pid_t pid = fork();
	if (pid < 0) {
		strbuf_addf(err, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0)
		child_exec(argv, fds[1]);
	close(fds[1]);
	struct strbuf captured = STRBUF_INIT;
	char chunk[8192];
	for (;;) {
		ssize_t got = read(fds[0], chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (verbose)
			fwrite(chunk, 1, (size_t)got, stderr);
		if (captured.len < BENCH_OUTPUT_MAX_BYTES)
			strbuf_add(&captured, chunk, (size_t)got);
	}
	close(fds[0]);
	int status = 0;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	int64_t wall_ns = clock_mono_ns() - start_ns;
	struct bench_sample s = {
		.wall_s = (double)wall_ns / 1e9,
		.user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
		.sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
		.max_rss_kib = (double)ru.ru_maxrss,
		.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
		.metric = bench_metric_find(metric, captured.buf, captured.len),
	};
	strbuf_release(&captured);
	*out = s;
	return 0;
}
