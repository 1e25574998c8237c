/* logfile probe (--log FILE): follows a log file the target writes, as
 * `tail -F` does, and stores its lines with the target's own output (stream
 * 3), so phases and output.log see them.
 *
 * A file that exists at the start is read from its end (what it held before
 * is an earlier run's); one that does not exist yet is read from its start
 * once it appears. Truncation (the size falls below what was read) reads it
 * again from the start; rotation (the name now holds another file) reads the
 * old file to its end, then the new one from its start. Lines are cut and
 * bounded like the target's output (target/output.h), and at most
 * LOGFILE_CAP_BYTES of them are stored; the rest are counted. */
#include "probe.h"
#include "../record/recorder.h"
#include "../target/output.h"
#include "../util/clock.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOGFILE_STREAM 3
#define LOGFILE_POLL_NS 100000000LL		 /* 100 ms */
#define LOGFILE_READ_PER_POLL (4 * 1024 * 1024) /* bytes; the rest waits a poll */
#define LOGFILE_CAP_BYTES (64LL * 1024 * 1024)

struct logfile_state {
	const char *path;
	int fd;
	dev_t dev;
	ino_t ino;
	off_t offset;
	struct output_stream os;
	struct probe_ctx *ctx; /* during a read, for on_line */
	int64_t now_ns;
	uint64_t lines, lines_dropped, truncations, rotations, bytes_stored;
};

static void on_line(void *data, int stream, const char *line, size_t len, int truncated)
{
	struct logfile_state *ls = data;
	(void)stream;
	if (ls->bytes_stored + len + 1 > (uint64_t)LOGFILE_CAP_BYTES) {
		ls->lines_dropped++;
		return;
	}
	ls->bytes_stored += len + 1;
	ls->lines++;
	int64_t t = ls->now_ns - ls->ctx->start_ns;
	record_output_line(ls->ctx->rec, t, 0, LOGFILE_STREAM, line, len, truncated);
	if (ls->ctx->line_seen)
		ls->ctx->line_seen(ls->ctx->line_arg, t, LOGFILE_STREAM, line, len);
}

/* Opens the file at its name; from_end: skip what it holds now. 0 or -1. */
static int logfile_open(struct logfile_state *ls, int from_end)
{
	int fd = open(ls->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	ls->fd = fd;
	ls->dev = st.st_dev;
	ls->ino = st.st_ino;
	ls->offset = from_end ? st.st_size : 0;
	output_stream_release(&ls->os);
	output_stream_init(&ls->os, -1, -1, LOGFILE_STREAM);
	return 0;
}

/* Reads what was appended, at most LOGFILE_READ_PER_POLL bytes (all of it
 * when drain is set). */
static void logfile_read(struct logfile_state *ls, int drain)
{
	char buf[65536];
	size_t budget = LOGFILE_READ_PER_POLL;
	while (drain || budget) {
		size_t want = drain || budget > sizeof(buf) ? sizeof(buf) : budget;
		ssize_t n = pread(ls->fd, buf, want, ls->offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ls->offset += n;
		if (!drain)
			budget -= (size_t)n;
		output_stream_feed(&ls->os, buf, (size_t)n, on_line, ls);
	}
}

static void logfile_close(struct logfile_state *ls)
{
	if (ls->fd < 0)
		return;
	output_stream_flush(&ls->os, on_line, ls); /* a last line without its newline */
	close(ls->fd);
	ls->fd = -1;
}

static void logfile_follow(struct logfile_state *ls, struct probe_ctx *ctx, int64_t now_ns,
			   int drain)
{
	struct stat st;
	ls->ctx = ctx;
	ls->now_ns = now_ns;
	if (ls->fd < 0) {
		if (logfile_open(ls, 0))
			return; /* not there yet */
	} else if (!fstat(ls->fd, &st) && st.st_size < ls->offset) {
		ls->truncations++;
		ls->offset = 0;
		output_stream_flush(&ls->os, on_line, ls);
		output_stream_release(&ls->os);
		output_stream_init(&ls->os, -1, -1, LOGFILE_STREAM);
	}
	logfile_read(ls, drain);
	if (!stat(ls->path, &st) && (st.st_dev != ls->dev || st.st_ino != ls->ino)) {
		logfile_read(ls, 1); /* the old file's last lines */
		logfile_close(ls);
		ls->rotations++;
		if (!logfile_open(ls, 0))
			logfile_read(ls, drain);
	}
}

static int logfile_wanted(const struct probe_config *cfg)
{
	return cfg->log_path != NULL;
}

static int logfile_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	if (!ctx->cfg->log_path) {
		strbuf_addstr(why, "no --log FILE was given");
		return -1;
	}
	return 0;
}

static int logfile_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	(void)why;
	struct logfile_state *ls = xcalloc(1, sizeof(*ls));
	p->state = ls;
	ls->path = ctx->cfg->log_path;
	ls->fd = -1;
	output_stream_init(&ls->os, -1, -1, LOGFILE_STREAM);
	logfile_open(ls, 1);
	p->next_poll_ns = ctx->start_ns;
	return 0;
}

static void logfile_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	logfile_follow(p->state, ctx, now_ns, 0);
	p->next_poll_ns = now_ns + LOGFILE_POLL_NS;
}

static void logfile_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct logfile_state *ls = p->state;
	int64_t now = clock_mono_ns();
	logfile_follow(ls, ctx, now, 1);
	logfile_close(ls);
	record_meta(ctx->rec, "log_path", ls->path);
	record_meta_int(ctx->rec, "log_lines", (int64_t)ls->lines);
	record_meta_int(ctx->rec, "log_lines_dropped", (int64_t)ls->lines_dropped);
	record_meta_int(ctx->rec, "log_truncations", (int64_t)ls->truncations);
	record_meta_int(ctx->rec, "log_rotations", (int64_t)ls->rotations);
	struct strbuf sb = STRBUF_INIT;
	if (!ls->lines && !ls->lines_dropped)
		strbuf_addf(&sb, "--log %s: no line was written to it during the run", ls->path);
	else
		strbuf_addf(&sb, "--log %s: %llu lines read (%llu truncations, %llu rotations)",
			    ls->path, (unsigned long long)ls->lines,
			    (unsigned long long)ls->truncations, (unsigned long long)ls->rotations);
	if (ls->lines_dropped)
		strbuf_addf(&sb, "; %llu later lines were not stored (%lld MiB cap)",
			    (unsigned long long)ls->lines_dropped, LOGFILE_CAP_BYTES >> 20);
	record_note(ctx->rec, now - ctx->start_ns, "logfile",
		    ls->lines_dropped || !ls->lines ? "warning" : "info", sb.buf);
	strbuf_release(&sb);
}

static void logfile_free(struct probe *p)
{
	struct logfile_state *ls = p->state;
	if (!ls)
		return;
	if (ls->fd >= 0)
		close(ls->fd);
	output_stream_release(&ls->os);
	free(ls);
	p->state = NULL;
}

/* --log FILE: a file that exists must be a regular file (a FIFO or a device
 * would block or never end); one that does not exist yet is waited for. */
static int logfile_path_parse(const char *arg, struct probe_config *cfg, struct strbuf *err)
{
	struct stat st;
	if (!arg[0]) {
		strbuf_addstr(err, "--log needs a file name");
		return -1;
	}
	if (!stat(arg, &st) && !S_ISREG(st.st_mode)) {
		strbuf_addf(err, "--log %s is not a regular file", arg);
		return -1;
	}
	cfg->log_path = arg;
	return 0;
}

static const struct probe_option logfile_options[] = {
	{ .name = "log", .arg = PROBE_ARG_REQUIRED, .arg_name = "FILE",
	  .help = "follow FILE, a log the command writes, as it grows\n"
		  "(rotation and truncation followed): its lines join\n"
		  "the command's output for phases and output.log",
	  .parse = logfile_path_parse },
	{ .name = NULL },
};

static const char *const logfile_writes[] = { "output_lines", NULL };

const struct probe_ops probe_logfile = {
	.name = "logfile",
	.writes = logfile_writes,
	.summary = "the lines of a log file the target writes (--log FILE), for phases",
	.options = logfile_options,
	.enabled_by_default = 0,
	.wanted = logfile_wanted,
	.available = logfile_available,
	.start = logfile_start,
	.poll = logfile_poll,
	.stop = logfile_stop,
	.free = logfile_free,
};
