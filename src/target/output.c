/* output: bounded line splitting over a pass-through pipe. */
#include "output.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void output_stream_init(struct output_stream *os, int fd, int passthru_fd, int stream)
{
	memset(os, 0, sizeof(*os));
	os->fd = fd;
	os->passthru_fd = passthru_fd;
	os->stream = stream;
	os->at_line_start = 1;
	os->line = xmalloc(OUTPUT_LINE_MAX + 1);
}

void output_stream_release(struct output_stream *os)
{
	free(os->line);
	os->line = NULL;
	if (os->fd >= 0)
		close(os->fd);
	os->fd = -1;
}

static void deliver(struct output_stream *os, int truncated, output_line_fn fn, void *data)
{
	size_t len = os->len;
	if (len && os->line[len - 1] == '\r')
		len--;
	/* The spare byte past the cap is for a CR before the newline: a line
	 * of exactly OUTPUT_LINE_MAX bytes ending in CRLF is whole. */
	if (len > OUTPUT_LINE_MAX) {
		len = OUTPUT_LINE_MAX;
		truncated = 1;
	}
	fn(data, os->stream, os->line, len, truncated);
	os->lines_total++;
	os->lines_truncated += truncated != 0;
	os->len = 0;
}

void output_stream_feed(struct output_stream *os, const char *buf, size_t n, output_line_fn fn,
			void *data)
{
	if (!os->binary) {
		const char *nul = memchr(buf, '\0', n);
		if (nul) {
			/* The text before the NUL is lines as usual; the rest is counted. */
			size_t text = (size_t)(nul - buf);
			output_stream_feed(os, buf, text, fn, data);
			os->binary = 1;
			os->len = 0;
			os->skipping = 0;
			buf += text;
			n -= text;
		}
	}
	os->bytes_total += n;
	if (os->binary) {
		os->bytes_binary += n;
		return;
	}
	while (n) {
		const char *nl = memchr(buf, '\n', n);
		size_t chunk = nl ? (size_t)(nl - buf) : n;
		if (!os->skipping) {
			size_t room = OUTPUT_LINE_MAX + 1 - os->len;
			size_t take = chunk < room ? chunk : room;
			memcpy(os->line + os->len, buf, take);
			os->len += take;
			if (chunk > take) {
				deliver(os, 1, fn, data);
				os->skipping = 1;
			}
		}
		if (!nl)
			return;
		if (os->skipping)
			os->skipping = 0;
		else
			deliver(os, 0, fn, data);
		buf += chunk + 1;
		n -= chunk + 1;
	}
}

void output_stream_flush(struct output_stream *os, output_line_fn fn, void *data)
{
	if (os->len && !os->skipping)
		deliver(os, 0, fn, data);
	os->len = 0;
	os->skipping = 0;
}

static void passthru(struct output_stream *os, const char *buf, size_t n)
{
	if (n)
		os->at_line_start = buf[n - 1] == '\n';
	while (n && os->passthru_fd >= 0) {
		ssize_t w = write(os->passthru_fd, buf, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			os->passthru_fd = -1; /* reader went away: keep recording */
			return;
		}
		buf += w;
		n -= (size_t)w;
	}
}

int output_stream_pump(struct output_stream *os, output_line_fn fn, void *data)
{
	char buf[65536];
	if (os->fd < 0)
		return 0;
	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t n = read(os->fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 1;
			n = 0; /* treat a read error as the end */
		}
		if (n == 0) {
			output_stream_flush(os, fn, data);
			close(os->fd);
			os->fd = -1;
			return 0;
		}
		passthru(os, buf, (size_t)n);
		output_stream_feed(os, buf, (size_t)n, fn, data);
	}
	return 1;
}
