/* output: pass the target's stdout/stderr through unchanged and cut it into
 * timestamped lines for the recording.
 *
 * A line longer than OUTPUT_LINE_MAX is delivered as its first OUTPUT_LINE_MAX
 * bytes with truncated=1; the rest of it is passed through but not stored, so a
 * target that never writes a newline cannot make sonde grow. A last line with
 * no newline is delivered at end of stream.
 *
 * Binary output is counted, not cut into lines: from a stream's first NUL
 * byte on (text never holds one; compressed data, images and executables do
 * within their first few hundred bytes) its bytes are passed through and
 * counted in bytes_binary, and no more lines are delivered for it; the
 * partial line before the NUL is dropped. The decision depends only on the
 * bytes, not on how they were split into reads. */
#ifndef SONDE_OUTPUT_H
#define SONDE_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#define OUTPUT_LINE_MAX (64 * 1024)

typedef void (*output_line_fn)(void *data, int stream, const char *line, size_t len,
			       int truncated);

struct output_stream {
	int fd;		 /* read end, -1 once closed */
	int passthru_fd; /* where bytes go unchanged (1 or 2), -1 when that failed */
	int stream;	 /* 1 stdout, 2 stderr */
	char *line;	 /* OUTPUT_LINE_MAX + 1 bytes (room for a CR before LF) */
	size_t len;
	int skipping; /* inside an over-long line, after its stored part */
	int binary;   /* a NUL byte was seen: counted from then on, not split */
	uint64_t bytes_total, lines_total, lines_truncated;
	uint64_t bytes_binary;  /* bytes from the first NUL on */
	int64_t binary_at_ns;	/* when the stream turned binary (set by the caller), or 0 */
	int at_line_start;	/* the last byte passed through ended a line (or none yet) */
};

void output_stream_init(struct output_stream *os, int fd, int passthru_fd, int stream);
void output_stream_release(struct output_stream *os);

/* Reads what is available (fd must be non-blocking). Returns 1 while the
 * stream is open, 0 at end of stream (after the last partial line). */
int output_stream_pump(struct output_stream *os, output_line_fn fn, void *data);

/* Feeds bytes as if read; the testable heart of pump. */
void output_stream_feed(struct output_stream *os, const char *buf, size_t n, output_line_fn fn,
			void *data);
/* Delivers a pending partial line (end of stream). */
void output_stream_flush(struct output_stream *os, output_line_fn fn, void *data);

#endif
