/* test_output: cutting the target's output into lines, with a bounded buffer. */
#include "check.h"
#include "target/output.h"
#include "util/strbuf.h"

#include <fcntl.h>

struct got {
	size_t n;
	struct strbuf lines[64];
	size_t len[64];
	int truncated[64], stream[64];
};

static void collect(void *data, int stream, const char *line, size_t len, int truncated)
{
	struct got *g = data;
	if (g->n == 64) {
		g->n++;
		return;
	}
	if (g->n > 64)
		return;
	strbuf_init(&g->lines[g->n]);
	strbuf_add(&g->lines[g->n], line, len);
	g->len[g->n] = len;
	g->truncated[g->n] = truncated;
	g->stream[g->n] = stream;
	g->n++;
}

static void got_release(struct got *g)
{
	for (size_t i = 0; i < g->n && i < 64; i++)
		strbuf_release(&g->lines[i]);
}

#define FEED(os, s, g) output_stream_feed(os, s, strlen(s), collect, g)

TEST(lines_split, "lines are cut at each newline, on the right stream, without the newline")
{
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, -1, -1, 2);
	FEED(&os, "one\ntwo\n\nthree\n", &g);
	REQUIRE(g.n == 4);
	CHECK_STR_EQ(g.lines[0].buf, "one");
	CHECK_STR_EQ(g.lines[1].buf, "two");
	CHECK_STR_EQ(g.lines[2].buf, "");
	CHECK_STR_EQ(g.lines[3].buf, "three");
	CHECK_INT_EQ(g.stream[0], 2);
	CHECK_INT_EQ(g.truncated[3], 0);
	CHECK_INT_EQ(os.lines_total, 4);
	CHECK_INT_EQ(os.bytes_total, strlen("one\ntwo\n\nthree\n"));
	output_stream_release(&os);
	got_release(&g);
}

TEST(crlf, "a CRLF line ending is stored without the carriage return; a lone CR inside a line is kept")
{
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, -1, -1, 1);
	FEED(&os, "dos\r\nmid\rdle\r\n", &g);
	REQUIRE(g.n == 2);
	CHECK_STR_EQ(g.lines[0].buf, "dos");
	CHECK_STR_EQ(g.lines[1].buf, "mid\rdle");
	output_stream_release(&os);
	got_release(&g);
}

TEST(no_final_newline, "a last line without a newline is delivered at end of stream, and only once")
{
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, -1, -1, 1);
	FEED(&os, "first\nlast", &g);
	CHECK_INT_EQ(g.n, 1);
	output_stream_flush(&os, collect, &g);
	REQUIRE(g.n == 2);
	CHECK_STR_EQ(g.lines[1].buf, "last");
	CHECK_INT_EQ(g.truncated[1], 0);
	output_stream_flush(&os, collect, &g);
	CHECK_INT_EQ(g.n, 2);
	output_stream_release(&os);
	got_release(&g);
}

TEST(byte_at_a_time, "a line fed one byte at a time arrives whole, exactly as fed at once")
{
	static const char text[] = "alpha beta\r\ngamma\n\ndelta";
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, -1, -1, 1);
	for (size_t i = 0; i < sizeof(text) - 1; i++)
		output_stream_feed(&os, text + i, 1, collect, &g);
	output_stream_flush(&os, collect, &g);
	REQUIRE(g.n == 4);
	CHECK_STR_EQ(g.lines[0].buf, "alpha beta");
	CHECK_STR_EQ(g.lines[1].buf, "gamma");
	CHECK_STR_EQ(g.lines[2].buf, "");
	CHECK_STR_EQ(g.lines[3].buf, "delta");
	output_stream_release(&os);
	got_release(&g);
}

TEST(every_split_point, "splitting the same text into two feeds at every byte gives the same lines")
{
	static const char text[] = "ab\ncd\r\n\nefgh\nij";
	for (size_t cut = 0; cut <= sizeof(text) - 1; cut++) {
		struct output_stream os;
		struct got g = { 0 };
		output_stream_init(&os, -1, -1, 1);
		output_stream_feed(&os, text, cut, collect, &g);
		output_stream_feed(&os, text + cut, sizeof(text) - 1 - cut, collect, &g);
		output_stream_flush(&os, collect, &g);
		int ok = g.n == 5 && !strcmp(g.lines[0].buf, "ab") && !strcmp(g.lines[1].buf, "cd") &&
			 !strcmp(g.lines[2].buf, "") && !strcmp(g.lines[3].buf, "efgh") &&
			 !strcmp(g.lines[4].buf, "ij");
		if (!ok)
			check_fail(__FILE__, __LINE__, "cut at %zu: %zu lines", cut, g.n);
		output_stream_release(&os);
		got_release(&g);
	}
}

TEST(long_line_truncated, "a 200 KiB line is stored as its first OUTPUT_LINE_MAX bytes, marked truncated, and the next line is intact")
{
	size_t big = 200 * 1024;
	char *text = malloc(big + 16);
	REQUIRE(text);
	for (size_t i = 0; i < big; i++)
		text[i] = (char)('a' + i % 26);
	memcpy(text + big, "\nnext\n", 6);
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, -1, -1, 1);
	output_stream_feed(&os, text, big + 6, collect, &g);
	REQUIRE(g.n == 2);
	CHECK_INT_EQ(g.len[0], OUTPUT_LINE_MAX);
	CHECK_INT_EQ(g.truncated[0], 1);
	CHECK(!memcmp(g.lines[0].buf, text, OUTPUT_LINE_MAX));
	CHECK_STR_EQ(g.lines[1].buf, "next");
	CHECK_INT_EQ(g.truncated[1], 0);
	CHECK_INT_EQ(os.lines_truncated, 1);
	CHECK_INT_EQ(os.lines_total, 2);
	output_stream_release(&os);
	got_release(&g);
	free(text);
}

TEST(long_line_in_pieces, "a long line fed in 1000-byte pieces is truncated once and the rest skipped up to its newline")
{
	size_t big = 200 * 1024;
	struct output_stream os;
	struct got g = { 0 };
	char piece[1000];
	memset(piece, 'x', sizeof(piece));
	output_stream_init(&os, -1, -1, 1);
	for (size_t done = 0; done < big; done += sizeof(piece))
		output_stream_feed(&os, piece, sizeof(piece), collect, &g);
	FEED(&os, "tail\nafter\n", &g);
	REQUIRE(g.n == 2);
	CHECK_INT_EQ(g.len[0], OUTPUT_LINE_MAX);
	CHECK_INT_EQ(g.truncated[0], 1);
	CHECK_NOT_CONTAINS(g.lines[0].buf, "tail");
	CHECK_STR_EQ(g.lines[1].buf, "after");
	output_stream_release(&os);
	got_release(&g);
}

TEST(unterminated_long_line, "a never-ending line is delivered once, truncated, and nothing more at end of stream")
{
	struct output_stream os;
	struct got g = { 0 };
	char piece[4096];
	memset(piece, 'y', sizeof(piece));
	output_stream_init(&os, -1, -1, 1);
	for (int i = 0; i < 64; i++)
		output_stream_feed(&os, piece, sizeof(piece), collect, &g);
	output_stream_flush(&os, collect, &g);
	REQUIRE(g.n == 1);
	CHECK_INT_EQ(g.truncated[0], 1);
	CHECK_INT_EQ(g.len[0], OUTPUT_LINE_MAX);
	output_stream_release(&os);
	got_release(&g);
}

TEST(exact_cap_not_truncated, "a line of exactly OUTPUT_LINE_MAX bytes is whole, not truncated, even with CRLF")
{
	char *text = malloc(OUTPUT_LINE_MAX + 2);
	REQUIRE(text);
	memset(text, 'q', OUTPUT_LINE_MAX);
	text[OUTPUT_LINE_MAX] = '\r';
	text[OUTPUT_LINE_MAX + 1] = '\n';
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, -1, -1, 1);
	output_stream_feed(&os, text, OUTPUT_LINE_MAX, collect, &g);
	output_stream_feed(&os, text + OUTPUT_LINE_MAX + 1, 1, collect, &g);
	output_stream_feed(&os, text, OUTPUT_LINE_MAX + 2, collect, &g);
	REQUIRE(g.n == 2);
	CHECK_INT_EQ(g.len[0], OUTPUT_LINE_MAX);
	CHECK_INT_EQ(g.truncated[0], 0);
	CHECK_INT_EQ(g.len[1], OUTPUT_LINE_MAX);
	CHECK_INT_EQ(g.truncated[1], 0);
	output_stream_release(&os);
	got_release(&g);
	free(text);
}

TEST(cap_plus_one_truncated, "a line one byte over OUTPUT_LINE_MAX is truncated to the cap, fed whole or byte by byte")
{
	char *text = malloc(OUTPUT_LINE_MAX + 2);
	REQUIRE(text);
	memset(text, 'w', OUTPUT_LINE_MAX + 1);
	text[OUTPUT_LINE_MAX + 1] = '\n';
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, -1, -1, 1);
	output_stream_feed(&os, text, OUTPUT_LINE_MAX + 2, collect, &g);
	for (size_t i = 0; i < OUTPUT_LINE_MAX + 2; i++)
		output_stream_feed(&os, text + i, 1, collect, &g);
	output_stream_feed(&os, text, OUTPUT_LINE_MAX + 1, collect, &g);
	output_stream_flush(&os, collect, &g);
	REQUIRE(g.n == 3);
	for (size_t i = 0; i < 3; i++) {
		CHECK_INT_EQ(g.len[i], OUTPUT_LINE_MAX);
		CHECK_INT_EQ(g.truncated[i], 1);
	}
	CHECK_INT_EQ(os.lines_truncated, 3);
	output_stream_release(&os);
	got_release(&g);
	free(text);
}

TEST(pump_pipe, "pump passes bytes through unchanged and records lines until end of stream")
{
	int in[2], out[2];
	REQUIRE(pipe(in) == 0);
	REQUIRE(pipe(out) == 0);
	fcntl(in[0], F_SETFL, O_NONBLOCK);
	struct output_stream os;
	struct got g = { 0 };
	output_stream_init(&os, in[0], out[1], 1);
	const char *msg = "hello\nworld";
	REQUIRE(write(in[1], msg, strlen(msg)) == (ssize_t)strlen(msg));
	CHECK_INT_EQ(output_stream_pump(&os, collect, &g), 1);
	close(in[1]);
	CHECK_INT_EQ(output_stream_pump(&os, collect, &g), 0);
	CHECK_INT_EQ(os.fd, -1);
	char buf[64] = { 0 };
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	CHECK_INT_EQ(n, (ssize_t)strlen(msg));
	CHECK_STR_EQ(buf, msg);
	REQUIRE(g.n == 2);
	CHECK_STR_EQ(g.lines[0].buf, "hello");
	CHECK_STR_EQ(g.lines[1].buf, "world");
	output_stream_release(&os);
	close(out[0]);
	close(out[1]);
	got_release(&g);
}

TEST(binary_counted, "from the first NUL byte on a stream is counted, not cut into lines; the lines before it arrive, whatever the split")
{
	static const char data[] = "text one\ntext two\npartial\0\x01\n\xff\nmore\n";
	size_t n = sizeof(data) - 1;
	for (size_t split = 0; split <= n; split++) {
		struct output_stream os;
		struct got g = { 0 };
		output_stream_init(&os, -1, -1, 1);
		output_stream_feed(&os, data, split, collect, &g);
		output_stream_feed(&os, data + split, n - split, collect, &g);
		output_stream_flush(&os, collect, &g);
		CHECK_INT_EQ(g.n, 2);
		if (g.n == 2) {
			CHECK_STR_EQ(g.lines[0].buf, "text one");
			CHECK_STR_EQ(g.lines[1].buf, "text two");
		}
		CHECK_INT_EQ(os.binary, 1);
		CHECK_INT_EQ(os.bytes_total, n);
		CHECK_INT_EQ(os.bytes_binary, n - strlen("text one\ntext two\npartial"));
		output_stream_release(&os);
		got_release(&g);
	}
}

CHECK_MAIN()
