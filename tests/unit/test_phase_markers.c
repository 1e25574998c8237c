/* test_phase_markers: which log lines start or end a phase, what they name,
 * their timestamps, user patterns, and the lines that count as warnings,
 * errors and retries. */
#include "check.h"
#include "analysis/phase_markers.h"
#include "util/strbuf.h"

#include <stdint.h>

/* Every line is parsed from an exactly-sized heap copy (no terminator), so
 * ASan catches any read past its end. */
static int parse_with(const char *s, size_t n, const struct phase_pattern *user,
		      struct phase_marker *m)
{
	char *b = malloc(n ? n : 1);
	memcpy(b, s, n);
	int r = phase_marker_parse(b, n, user, m);
	free(b);
	return r;
}

static int kind_of(const char *s)
{
	size_t n = strlen(s);
	char *b = malloc(n ? n : 1);
	memcpy(b, s, n);
	int k = phase_line_kind(b, n);
	free(b);
	return k;
}

static const char *const event_names[] = { "NONE", "START", "END", "MARK" };

static void expect_marker(const char *file, int ln, const char *line,
			  const struct phase_pattern *user, enum phase_event ev, const char *name,
			  double dur)
{
	struct phase_marker m;
	int r = parse_with(line, strlen(line), user, &m);
	double diff = m.duration_s - dur;
	if (r != 1 || m.event != ev || strcmp(m.name, name) || diff > 1e-9 || diff < -1e-9)
		check_fail(file, ln, "\"%s\": got %d %s \"%s\" %g, want %s \"%s\" %g", line, r,
			   m.event <= PHASE_MARK ? event_names[m.event] : "?", m.name, m.duration_s,
			   event_names[ev], name, dur);
}

static void expect_none(const char *file, int ln, const char *line,
			const struct phase_pattern *user)
{
	struct phase_marker m;
	int r = parse_with(line, strlen(line), user, &m);
	if (r != 0 || m.event != PHASE_NONE || m.name[0] || m.duration_s != -1)
		check_fail(file, ln, "\"%s\": got %d %s \"%s\" %g, want no marker", line, r,
			   m.event <= PHASE_MARK ? event_names[m.event] : "?", m.name, m.duration_s);
}

#define EXPECT(line, ev, name, dur) expect_marker(__FILE__, __LINE__, line, NULL, ev, name, dur)
#define EXPECT_NONE(line) expect_none(__FILE__, __LINE__, line, NULL)
#define EXPECT_USER(p, line, ev, name, dur) \
	expect_marker(__FILE__, __LINE__, line, p, ev, name, dur)
#define EXPECT_USER_NONE(p, line) expect_none(__FILE__, __LINE__, line, p)

static void expect_kind(const char *file, int ln, const char *line, int want)
{
	int k = kind_of(line);
	if (k != want)
		check_fail(file, ln, "\"%s\": kind %d, want %d", line, k, want);
}

#define EXPECT_KIND(line, want) expect_kind(__FILE__, __LINE__, line, want)

/* ---- phase= ---- */

TEST(phase_key_events, "phase=X and stage=X followed by a start or end word start or end X, in any case")
{
	EXPECT("phase=fetch start", PHASE_START, "fetch", -1);
	EXPECT("PHASE=Fetch STARTED", PHASE_START, "Fetch", -1);
	EXPECT("stage=train begin", PHASE_START, "train", -1);
	EXPECT("phase=\"load data\" starting", PHASE_START, "load data", -1);
	EXPECT("phase=fetch: done", PHASE_END, "fetch", -1);
	EXPECT("stage=eval stopped", PHASE_END, "eval", -1);
	EXPECT("2026-11-26 06:31:33,123 INFO phase=fetch completed", PHASE_END, "fetch", -1);
}

TEST(phase_key_event_fields, "phase=X takes its event from a later event=, status= or state= field")
{
	EXPECT("ts=2026-11-26T06:31:33Z level=info phase=fetch event=start", PHASE_START, "fetch", -1);
	EXPECT("phase=fetch rows=300 status=done", PHASE_END, "fetch", -1);
	EXPECT("stage=\"train\" state=\"finished\"", PHASE_END, "train", -1);
	EXPECT_NONE("phase=fetch status=running");
}

TEST(phase_key_durations, "phase=X done reads a bare number after in as seconds, and duration fields anywhere")
{
	EXPECT("phase=fetch done in 1.2", PHASE_END, "fetch", 1.2);
	EXPECT("phase=fetch finished in 350ms", PHASE_END, "fetch", 0.35);
	EXPECT("phase=fetch done (2.5 s)", PHASE_END, "fetch", 2.5);
	EXPECT("phase=fetch status=done duration_ms=350", PHASE_END, "fetch", 0.35);
	EXPECT("phase=fetch done elapsed_s=2.5", PHASE_END, "fetch", 2.5);
	EXPECT("phase=fetch completed duration=1m20s", PHASE_END, "fetch", 80);
	EXPECT("phase=fetch done elapsed=1.5s rows=3", PHASE_END, "fetch", 1.5);
	EXPECT("phase=fetch took 3", PHASE_END, "fetch", 3);
	EXPECT("phase=fetch took 2.5s", PHASE_END, "fetch", 2.5);
}

TEST(phase_key_needs_event, "phase=X without an event word, or with an empty X, is no marker")
{
	EXPECT_NONE("phase=fetch");
	EXPECT_NONE("phase=fetch rows=300");
	EXPECT_NONE("phase= start");
	EXPECT_NONE("phase=\"\" start");
	EXPECT_NONE("subphase=fetch start");
	EXPECT_NONE("phase=fetch restarting");
}

/* ---- Keyword first ---- */

TEST(lead_starts, "Starting X, Started X and Beginning X start the phase the rest of the message names, unless it lists key=value settings")
{
	EXPECT("Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("Started fetch...", PHASE_START, "fetch", -1);
	EXPECT("beginning \"data load\"", PHASE_START, "data load", -1);
	EXPECT("Starting stage: fetch", PHASE_START, "fetch", -1);
	EXPECT("Starting phase: train model", PHASE_START, "train model", -1);
	EXPECT("STARTING step: 3", PHASE_START, "3", -1);
	EXPECT("Starting: fetch", PHASE_START, "fetch", -1);
	/* The keyword-first rule takes the rest of the message as it is. */
	EXPECT("Starting server on port 8080", PHASE_START, "server on port 8080", -1);
	EXPECT("Starting point is 3", PHASE_START, "point is 3", -1);
	EXPECT("Starting fetch\xe2\x80\xa6", PHASE_START, "fetch", -1);
	EXPECT_NONE("starting: mode=planted sources=1200 seed=1"); /* settings */
	EXPECT_NONE("Starting job with workers=4");
}

TEST(lead_ends, "Finished X, Completed X, Done X and Ending X end X, a trailing duration read and left out of the name")
{
	EXPECT("Finished fetch", PHASE_END, "fetch", -1);
	EXPECT("Finished fetch in 1.2s", PHASE_END, "fetch", 1.2);
	EXPECT("Completed stage: train (2.5 s)", PHASE_END, "train", 2.5);
	EXPECT("Done loading data after 2 min.", PHASE_END, "loading data", 120);
	EXPECT("Finished fetch took 350ms", PHASE_END, "fetch", 0.35);
	EXPECT("Finished fetch (took 1.5s)", PHASE_END, "fetch", 1.5);
	EXPECT("Ending epoch 3", PHASE_END, "epoch 3", -1);
	EXPECT("Finished fetch in 1m20.5s, 300 rows", PHASE_END, "fetch", 80.5);
	EXPECT("Finished run in prod in 2s", PHASE_END, "run in prod", 2);
	EXPECT("Finished 'fetch'!", PHASE_END, "fetch", -1);
	/* "in" not followed by a duration that ends the message stays in the name. */
	EXPECT("Finished job in 2 s intervals", PHASE_END, "job in 2 s intervals", -1);
	EXPECT("Finished fetch in 3", PHASE_END, "fetch in 3", -1);
}

TEST(lead_start_no_duration, "a start states no duration: Starting X in 5s is a start of X with duration -1")
{
	EXPECT("Starting backup in 5s", PHASE_START, "backup", -1);
}

TEST(lead_first_word_only, "the keyword counts only as the message's first word")
{
	EXPECT_NONE("the job is done");
	EXPECT_NONE("We are starting fetch");
	EXPECT_NONE("Restarting fetch");
	EXPECT_NONE("Startingfetch");
	EXPECT_NONE("print('Starting fetch')");
}

TEST(lead_empty_name, "a keyword with nothing worth a name after it is no marker")
{
	EXPECT_NONE("done");
	EXPECT_NONE("Done.");
	EXPECT_NONE("Finished.");
	EXPECT_NONE("Starting...");
	EXPECT_NONE("Done in 1.2s");
	EXPECT_NONE("Finished: --");
	EXPECT_NONE("INFO:root:Done!");
	EXPECT_NONE("");
	EXPECT_NONE("   ");
}

/* ---- X done in ---- */

TEST(done_in_ends, "X done in 1.2s, X finished in 350ms, X completed in 2 s and X took 2.5 seconds end X with the duration")
{
	EXPECT("fetch done in 1.2s", PHASE_END, "fetch", 1.2);
	EXPECT("Epoch 3 finished in 350ms", PHASE_END, "Epoch 3", 0.35);
	EXPECT("Step 3/10 completed in 2 s", PHASE_END, "Step 3/10", 2);
	EXPECT("download took 2.5 seconds", PHASE_END, "download", 2.5);
	EXPECT("download took 2.5s", PHASE_END, "download", 2.5);
	EXPECT("download took 1m20s.", PHASE_END, "download", 80);
	EXPECT("fetch: done in 1.2s", PHASE_END, "fetch", 1.2);
	EXPECT("Epoch 1 done in 12.5s, loss=0.31", PHASE_END, "Epoch 1", 12.5);
	EXPECT("train took 1.5 h", PHASE_END, "train", 5400);
	EXPECT("a b c d e f done in 1s", PHASE_END, "a b c d e f", 1);
}

TEST(done_in_needs_duration, "X done, X took a while, a bare number or an X of seven words is no marker")
{
	EXPECT_NONE("fetch done");
	EXPECT_NONE("x took a while");
	EXPECT_NONE("fetch done in 3");
	EXPECT_NONE("fetch done in 2 steps");
	EXPECT_NONE("a b c d e f g done in 1s");
	EXPECT_NONE("took 2s");
}

/* ---- === X === and [X] begin ---- */

TEST(rule_marks, "=== X === is a mark of X, with three or more = each side in any counts")
{
	EXPECT("=== Epoch 1/10 ===", PHASE_MARK, "Epoch 1/10", -1);
	EXPECT("===== Training ========", PHASE_MARK, "Training", -1);
	EXPECT("===Eval===  ", PHASE_MARK, "Eval", -1);
	EXPECT("2026-11-26 06:31:33,123 INFO === Evaluation ===", PHASE_MARK, "Evaluation", -1);
	EXPECT_NONE("== Epoch 1 ==");
	EXPECT_NONE("=== Epoch 1");
	EXPECT_NONE("=== Epoch 1 === and more");
	EXPECT_NONE("=== ===");
	EXPECT_NONE("==========");
	EXPECT_NONE("=== --- ===");
}

TEST(bracket_events, "[X] begin and [X] end start and end X")
{
	EXPECT("[fetch] begin", PHASE_START, "fetch", -1);
	EXPECT("[fetch] START", PHASE_START, "fetch", -1);
	EXPECT("[fetch] started", PHASE_START, "fetch", -1);
	EXPECT("[fetch] end", PHASE_END, "fetch", -1);
	EXPECT("[fetch] finished.", PHASE_END, "fetch", -1);
	EXPECT("[fetch] done in 1.2s", PHASE_END, "fetch", 1.2);
	EXPECT("[load data] done", PHASE_END, "load data", -1);
	EXPECT_NONE("[fetch]");
	EXPECT_NONE("[fetch] begins soon");
	EXPECT_NONE("[] done");
}

TEST(bracket_after_prefix, "a log prefix before [X] begin is skipped, the [X] itself is not")
{
	EXPECT("2026-11-26 06:31:33 INFO [fetch] begin", PHASE_START, "fetch", -1);
	EXPECT("[worker-3] [fetch] done", PHASE_END, "fetch", -1);
	EXPECT("[INFO] [fetch] end", PHASE_END, "fetch", -1);
	EXPECT_NONE("[INFO] done");
}

/* ---- Log prefixes ---- */

TEST(prefix_python, "Python logging's default formats and a print() line all give START fetch")
{
	EXPECT("Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("INFO:root:Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("WARNING:my.module:Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("2026-11-26 06:31:33,123 - pipeline - INFO - Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("2026-11-26 06:31:33,123 INFO pipeline: Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("2026-11-26 06:31:33,123:INFO:pipeline:Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("[2026-11-26 06:31:33,123] [INFO] Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("INFO:     Started server process [123]", PHASE_START, "server process [123]", -1);
}

TEST(prefix_go_rust, "Go, Rust and other prefixed lines lose their prefix")
{
	EXPECT("2026-11-26T06:31:33.123Z INFO Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("2026-11-26T06:31:33.123Z\tINFO\tpipeline/main.go:42\tStarting fetch", PHASE_START,
	       "fetch", -1);
	EXPECT("[2026-11-26T06:31:33Z INFO  pipeline::fetch] Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("2026/11/26 06:31:33 Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("INFO[0000] Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("06:31:33.123 | INFO | Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("[worker-3] Starting fetch", PHASE_START, "fetch", -1);
	EXPECT("[pid 123] [INFO] Finished fetch in 2s", PHASE_END, "fetch", 2);
}

TEST(prefix_not_in_x, "X in the X done in 1.2s form never holds the log prefix")
{
	EXPECT("2026-11-26 06:31:33,123 INFO pipeline: fetch done in 1.2s", PHASE_END, "fetch", 1.2);
	EXPECT("INFO:__main__:fetch done in 1.2s", PHASE_END, "fetch", 1.2);
	EXPECT("2026-11-26T06:31:33.123Z INFO fetch took 2.5s", PHASE_END, "fetch", 2.5);
	EXPECT("[worker-3] fetch finished in 350ms", PHASE_END, "fetch", 0.35);
}

TEST(prefix_logger_needs_context, "a name: counts as a logger only after a timestamp, level or group")
{
	EXPECT_NONE("pipeline: Starting fetch");
	EXPECT("fetch: done in 1.2s", PHASE_END, "fetch", 1.2);
	EXPECT("INFO fetch: Starting download", PHASE_START, "download", -1);
	EXPECT("INFO Starting: fetch", PHASE_START, "fetch", -1);
}

/* ---- Durations ---- */

TEST(duration_units, "durations read ms, s, m and h in their long forms, and compounds like 1m20s")
{
	static const struct {
		const char *line;
		double s;
	} cases[] = {
		{ "Finished a in 350ms", 0.35 },     { "Finished a in 350 msec", 0.35 },
		{ "Finished a in 2 milliseconds", 0.002 }, { "Finished a in 1.5 sec", 1.5 },
		{ "Finished a in 2 secs", 2 },	      { "Finished a in 1 second", 1 },
		{ "Finished a in 3 seconds", 3 },     { "Finished a in 2m", 120 },
		{ "Finished a in 2 min", 120 },	      { "Finished a in 3 mins", 180 },
		{ "Finished a in 1 minute", 60 },     { "Finished a in 1m20s", 80 },
		{ "Finished a in 1m20.5s", 80.5 },    { "Finished a in 1h", 3600 },
		{ "Finished a in 2 hours", 7200 },    { "Finished a in 1h 2m 3s", 3723 },
		{ "Finished a in 0.000001s", 1e-6 },  { "Finished a in 250us", 250e-6 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		EXPECT(cases[i].line, PHASE_END, "a", cases[i].s);
}

/* ---- Timestamps ---- */

static void expect_stamp(const char *file, int ln, const char *line, int64_t ns, int has_date)
{
	struct phase_marker m;
	parse_with(line, strlen(line), NULL, &m);
	if (m.stamp_ns != ns || m.stamp_has_date != has_date)
		check_fail(file, ln, "\"%s\": stamp %lld (date %d), want %lld (date %d)", line,
			   (long long)m.stamp_ns, m.stamp_has_date, (long long)ns, has_date);
}

#define EXPECT_STAMP(line, ns, has_date) expect_stamp(__FILE__, __LINE__, line, ns, has_date)
#define S_2026 1795674693LL /* 2026-11-26 06:31:33 UTC */
#define NS 1000000000LL

TEST(stamp_forms, "timestamps read with comma or dot fractions, T or space, Z or an offset, as UTC fields")
{
	EXPECT_STAMP("2026-11-26 06:31:33,123 INFO Starting fetch", S_2026 * NS + 123000000, 1);
	EXPECT_STAMP("2026-11-26 06:31:33.123456 x", S_2026 * NS + 123456000, 1);
	EXPECT_STAMP("2026-11-26T06:31:33.123Z INFO x", S_2026 * NS + 123000000, 1);
	EXPECT_STAMP("2026-11-26T06:31:33.123456789+02:00 x", S_2026 * NS + 123456789, 1);
	EXPECT_STAMP("2026-11-26T06:31:33-0500 x", S_2026 * NS, 1);
	EXPECT_STAMP("2026-11-26 06:31:33", S_2026 * NS, 1);
	EXPECT_STAMP("[2026-11-26 06:31:33] x", S_2026 * NS, 1);
	EXPECT_STAMP("2026/11/26 06:31:33 x", S_2026 * NS, 1);
	EXPECT_STAMP("1970-01-01 00:00:00 epoch", 0, 1);
	EXPECT_STAMP("2000-03-01 00:00:00 x", 951868800LL * NS, 1);
	EXPECT_STAMP("2024-02-29 00:00:00 leap day", 1709164800LL * NS, 1);
	EXPECT_STAMP("2261-12-31 23:59:59 the last year", 9214646399LL * NS, 1);
	EXPECT_STAMP("2026-11-26 23:59:60 a leap second", (S_2026 + 17 * 3600 + 28 * 60 + 27) * NS,
		     1);
}

TEST(stamp_time_only, "a time-only timestamp counts seconds since midnight, without a date")
{
	EXPECT_STAMP("06:31:33.5 Starting fetch", (6 * 3600 + 31 * 60 + 33) * NS + 500000000, 0);
	EXPECT_STAMP("06:31:33,250 x", (6 * 3600 + 31 * 60 + 33) * NS + 250000000, 0);
	EXPECT_STAMP("[00:00:01] x", NS, 0);
	EXPECT("06:31:33 Starting fetch", PHASE_START, "fetch", -1);
}

TEST(stamp_invalid, "an impossible date or time, a stamp not at the start or one run into text is no timestamp")
{
	EXPECT_STAMP("2026-13-01 00:00:00 x", -1, 0);
	EXPECT_STAMP("2026-00-10 00:00:00 x", -1, 0);
	EXPECT_STAMP("2026-02-30 00:00:00 x", -1, 0);
	EXPECT_STAMP("2025-02-29 00:00:00 x", -1, 0);
	EXPECT_STAMP("2026-11-00 00:00:00 x", -1, 0);
	EXPECT_STAMP("2026-11-26 24:00:00 x", -1, 0);
	EXPECT_STAMP("2026-11-26 06:60:00 x", -1, 0);
	EXPECT_STAMP("06:31:61 x", -1, 0);
	EXPECT_STAMP("1969-12-31 23:59:59 x", -1, 0);
	EXPECT_STAMP("2026-11-26 06:31:33.1234567890 x", -1, 0);
	EXPECT_STAMP("2026-11-26 06:31:33x", -1, 0);
	EXPECT_STAMP("2026-11-26x06:31:33 x", -1, 0);
	EXPECT_STAMP("2026-11/26 06:31:33 x", -1, 0);
	EXPECT_STAMP("2026-11-26", -1, 0);
	EXPECT_STAMP("6:31:33 x", -1, 0);
	EXPECT_STAMP("x 2026-11-26 06:31:33", -1, 0);
	EXPECT_STAMP("2026-11-2", -1, 0);
	EXPECT_STAMP("", -1, 0);
}

TEST(stamp_without_marker, "a line that is no marker still returns its timestamp, and only that")
{
	struct phase_marker m;
	const char *line = "2026-11-26 06:31:33,123 INFO nothing to see";
	CHECK_INT_EQ(parse_with(line, strlen(line), NULL, &m), 0);
	CHECK_INT_EQ(m.event, PHASE_NONE);
	CHECK_STR_EQ(m.name, "");
	CHECK(m.duration_s == -1);
	CHECK_INT_EQ(m.stamp_ns, S_2026 * NS + 123000000);
	CHECK_INT_EQ(m.stamp_has_date, 1);
	CHECK_INT_EQ(phase_marker_parse(NULL, 0, NULL, &m), 0);
	CHECK_INT_EQ(m.stamp_ns, -1);
	CHECK_INT_EQ(m.stamp_has_date, 0);
}

/* ---- Hostile lines ---- */

TEST(binary_bytes, "binary bytes, NULs and control bytes are read as ordinary non-word bytes")
{
	static const char bin[] = "\x00\xff\xfe\x01Starting\x00\x80\x80\x80\x7f=== \xc3 ===[\x00]";
	struct phase_marker m;
	for (size_t n = 0; n <= sizeof(bin) - 1; n++) {
		int r = parse_with(bin, n, NULL, &m);
		CHECK(r == 0 || (m.name[0] && memchr(m.name, 0, PHASE_NAME_MAX)));
		CHECK(phase_line_kind(bin, n) == 0);
	}
	static const char nul[] = "Starting fe\0tch";
	CHECK_INT_EQ(parse_with(nul, sizeof(nul) - 1, NULL, &m), 1);
	CHECK_STR_EQ(m.name, "fe tch");
	static const char lead_nul[] = "\0Starting fetch";
	CHECK_INT_EQ(parse_with(lead_nul, sizeof(lead_nul) - 1, NULL, &m), 0);
	static const char only_binary[] = "Starting \x80\x81";
	CHECK_INT_EQ(parse_with(only_binary, sizeof(only_binary) - 1, NULL, &m), 1);
	CHECK(strlen(m.name) == 2);
}

TEST(megabyte_line, "a 1 MiB line is judged by its first 4096 bytes, its name cut to PHASE_NAME_MAX - 1")
{
	size_t n = 1 << 20;
	char *line = malloc(n);
	struct phase_marker m;
	memset(line, 'a', n);
	memcpy(line, "Starting ", 9);
	CHECK_INT_EQ(phase_marker_parse(line, n, NULL, &m), 1);
	CHECK_INT_EQ(m.event, PHASE_START);
	CHECK_INT_EQ(strlen(m.name), PHASE_NAME_MAX - 1);
	/* The event word past the first 4096 bytes is not seen. */
	memset(line, ' ', n);
	memcpy(line, "phase=fetch", 11);
	memcpy(line + 5000, "start", 5);
	CHECK_INT_EQ(phase_marker_parse(line, n, NULL, &m), 0);
	memcpy(line + 5000, "ERROR", 5);
	CHECK_INT_EQ(phase_line_kind(line, n), 0);
	memcpy(line + 4000, "ERROR", 5);
	CHECK_INT_EQ(phase_line_kind(line, n), PHASE_LINE_ERROR);
	memset(line, '=', n);
	CHECK_INT_EQ(phase_marker_parse(line, n, NULL, &m), 0);
	free(line);
}

TEST(rule_of_5000, "a line of 5000 '=' and a rule whose close lies past 4096 bytes are no marks")
{
	char *line = malloc(5000);
	struct phase_marker m;
	memset(line, '=', 5000);
	CHECK_INT_EQ(phase_marker_parse(line, 5000, NULL, &m), 0);
	memset(line + 4, 'x', 4990);
	line[3] = ' ';
	CHECK_INT_EQ(phase_marker_parse(line, 5000, NULL, &m), 0);
	free(line);
}

TEST(name_cut_utf8, "a long name is cut on a UTF-8 character's boundary")
{
	char line[256];
	struct phase_marker m;
	/* "Starting " then 94 ASCII bytes and a two-byte é across the cut. */
	memcpy(line, "Starting ", 9);
	memset(line + 9, 'a', 94);
	memcpy(line + 103, "\xc3\xa9 tail", 7);
	CHECK_INT_EQ(parse_with(line, 110, NULL, &m), 1);
	CHECK_INT_EQ(strlen(m.name), 94);
	/* With 93 ASCII bytes the é fits whole. */
	memcpy(line + 102, "\xc3\xa9 tail", 7);
	CHECK_INT_EQ(parse_with(line, 109, NULL, &m), 1);
	CHECK_INT_EQ(strlen(m.name), 95);
	CHECK(!memcmp(m.name + 93, "\xc3\xa9", 2));
}

/* ---- User patterns ---- */

TEST(user_event_duration, "a user pattern's name, event and duration groups give the marker, and only it is tried")
{
	struct phase_pattern p;
	struct strbuf err = STRBUF_INIT;
	REQUIRE(phase_pattern_compile(&p, "^step (?P<name>[a-z]+) (?P<event>[a-z]+)"
					  "( in (?P<duration>[0-9.]+ ?[a-z]*))?$",
				      &err) == 0);
	CHECK_STR_EQ(strbuf_str(&err), "");
	CHECK_INT_EQ(p.group_name, 1);
	CHECK_INT_EQ(p.group_event, 2);
	CHECK_INT_EQ(p.group_duration, 4);
	EXPECT_USER(&p, "step fetch done in 1.5s", PHASE_END, "fetch", 1.5);
	EXPECT_USER(&p, "step fetch done in 2", PHASE_END, "fetch", 2);
	EXPECT_USER(&p, "step fetch done in 350 ms", PHASE_END, "fetch", 0.35);
	EXPECT_USER(&p, "step fetch start", PHASE_START, "fetch", -1);
	EXPECT_USER_NONE(&p, "step fetch BEGIN");
	EXPECT_USER_NONE(&p, "step fetch paused");
	EXPECT_USER_NONE(&p, "Starting fetch");
	EXPECT_USER(&p, "step fetch done in 1.2.3x", PHASE_END, "fetch", -1);
	phase_pattern_release(&p);
	CHECK_INT_EQ(p.compiled, 0);
	phase_pattern_release(&p);
	strbuf_release(&err);
}

TEST(user_name_only, "a user pattern without an event group marks every match; an empty name is no marker")
{
	struct phase_pattern p;
	REQUIRE(phase_pattern_compile(&p, "^>> (?<name>.*)$", NULL) == 0);
	EXPECT_USER(&p, ">> loading model", PHASE_MARK, "loading model", -1);
	EXPECT_USER(&p, ">> \"eval\".", PHASE_MARK, "eval", -1);
	EXPECT_USER_NONE(&p, ">> ");
	EXPECT_USER_NONE(&p, "> loading");
	phase_pattern_release(&p);
}

TEST(user_group_numbers, "named groups are numbered past escaped parentheses, bracket expressions and (?:...) groups")
{
	struct phase_pattern p;
	struct strbuf err = STRBUF_INIT;
	REQUIRE(phase_pattern_compile(&p, "\\((x|y)\\) [(]+[[:alpha:]()]* (?:a|b) (?P<name>[a-z]+) "
					  "(?P<event>start|end)",
				      &err) == 0);
	CHECK_INT_EQ(p.group_name, 3);
	CHECK_INT_EQ(p.group_event, 4);
	CHECK_INT_EQ(p.group_duration, 0);
	EXPECT_USER(&p, "(x) ((ab() a fetch start", PHASE_START, "fetch", -1);
	EXPECT_USER(&p, "(y) ( b train end", PHASE_END, "train", -1);
	phase_pattern_release(&p);
	REQUIRE(phase_pattern_compile(&p, "[]a(]* (?P<name>[a-z]+)", &err) == 0);
	CHECK_INT_EQ(p.group_name, 1);
	EXPECT_USER(&p, "a]( fetch", PHASE_MARK, "fetch", -1);
	phase_pattern_release(&p);
	strbuf_release(&err);
}

TEST(user_long_and_nul, "a user pattern sees a long line's first 4095 bytes, NUL bytes included")
{
	struct phase_pattern p;
	struct phase_marker m;
	REQUIRE(phase_pattern_compile(&p, "phase (?P<name>[a-z]+)", NULL) == 0);
	char *line = malloc(5000);
	memset(line, ' ', 5000);
	memcpy(line + 4085, "phase fetch", 11);
	CHECK_INT_EQ(phase_marker_parse(line, 5000, &p, &m), 1);
	CHECK_STR_EQ(m.name, "fetc"); /* cut at byte 4095 */
	memcpy(line + 4085, "           ", 11);
	memcpy(line + 4090, "phase fetch", 11);
	CHECK_INT_EQ(phase_marker_parse(line, 5000, &p, &m), 0);
	free(line);
#ifdef REG_STARTEND
	static const char nul[] = "a\0b phase fetch";
	CHECK_INT_EQ(parse_with(nul, sizeof(nul) - 1, &p, &m), 1);
	CHECK_STR_EQ(m.name, "fetch");
#endif
	phase_pattern_release(&p);
}

TEST(user_uncompiled, "a pattern that is not compiled leaves the built-in forms in charge")
{
	struct phase_pattern p;
	memset(&p, 0, sizeof(p));
	EXPECT_USER(&p, "Starting fetch", PHASE_START, "fetch", -1);
}

static void expect_compile_error(const char *file, int ln, const char *pattern, const char *want)
{
	struct phase_pattern p;
	struct strbuf err = STRBUF_INIT;
	int r = phase_pattern_compile(&p, pattern, &err);
	if (r != -1 || !strstr(strbuf_str(&err), want) || strchr(strbuf_str(&err), '\n') ||
	    p.compiled)
		check_fail(file, ln, "pattern \"%.60s\": %d \"%s\", want -1 and \"%s\"", pattern, r,
			   strbuf_str(&err), want);
	phase_pattern_release(&p);
	strbuf_release(&err);
}

#define EXPECT_COMPILE_ERROR(pattern, want) expect_compile_error(__FILE__, __LINE__, pattern, want)

TEST(user_errors, "a pattern that is bad, too long, without a name group or with an unknown group name fails with one line saying so")
{
	EXPECT_COMPILE_ERROR("step ([a-z]+) done", "has no (?P<name>...) group");
	EXPECT_COMPILE_ERROR("(?P<foo>[a-z]+) (?P<name>x)", "unknown group name 'foo' (use name, event or duration)");
	EXPECT_COMPILE_ERROR("(?P<name>[a-z]+", "is not a valid extended regex: ");
	EXPECT_COMPILE_ERROR("(?P<name>a)(?P<name>b)", "names the group 'name' twice");
	EXPECT_COMPILE_ERROR("(?<=x)(?P<name>a)", "bad group name");
	EXPECT_COMPILE_ERROR("(?i)(?P<name>a)", "unsupported group");
	EXPECT_COMPILE_ERROR("(?P<name", "bad group name");
	EXPECT_COMPILE_ERROR("(?", "unsupported group");
	char *longp = malloc(5000);
	memset(longp, 'a', 4999);
	longp[4999] = '\0';
	memcpy(longp, "(?P<name>a)", 11);
	EXPECT_COMPILE_ERROR(longp, "longer than 4096 bytes");
	longp[4096] = '\0';
	struct phase_pattern p;
	CHECK_INT_EQ(phase_pattern_compile(&p, longp, NULL), 0);
	phase_pattern_release(&p);
	free(longp);
	/* With the regex library's own words. */
	struct strbuf err = STRBUF_INIT;
	CHECK_INT_EQ(phase_pattern_compile(&p, "(?P<name>a)[", &err), -1);
	char msg[256];
	regex_t re;
	int rc = regcomp(&re, "(a)[", REG_EXTENDED);
	REQUIRE(rc != 0);
	regerror(rc, &re, msg, sizeof(msg));
	CHECK_CONTAINS(strbuf_str(&err), msg);
	strbuf_release(&err);
}

TEST(user_pattern_cost, "a pattern whose nested repeats would make regcomp build a huge regex is refused before regcomp runs")
{
	char pat[512];
	struct phase_pattern p;
	/* 20 levels of ((a)+)+ cost glibc gigabytes and seconds. */
	EXPECT_COMPILE_ERROR("((((((((((((((((((((?P<name>a)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+",
			     "nested repeats would build a regex of over 16384 nodes");
	EXPECT_COMPILE_ERROR("((?P<name>a{,200}){200})", "nested repeats");
	EXPECT_COMPILE_ERROR("(?P<name>a{99999999999999999999})", "nested repeats");
	EXPECT_COMPILE_ERROR("(?P<name>a)++", "repeats a repeat at byte 13");
	EXPECT_COMPILE_ERROR("(?P<name>.*?) done", "repeats a repeat at byte 12");
	EXPECT_COMPILE_ERROR("(?P<name>a){2}*", "repeats a repeat");
	EXPECT_COMPILE_ERROR("(?P<name>a+)\\1", "back-reference at byte 13");
	memset(pat, '(', 40);
	snprintf(pat + 40, sizeof(pat) - 40, "(?P<name>a)%s", "))))))))))))))))))))))))))))))))))))))))");
	EXPECT_COMPILE_ERROR(pat, "nests groups deeper than 32");
	/* Ordinary repeats, and a few nested ones, compile. */
	REQUIRE(phase_pattern_compile(&p, "^(?P<name>[a-z]{1,255})( [0-9]{1,255}){1,30} (x+)+$", NULL) == 0);
	EXPECT_USER(&p, "fetch 1 22 333 xx", PHASE_MARK, "fetch", -1);
	phase_pattern_release(&p);
}

/* ---- Line kinds ---- */

TEST(kind_warnings, "WARNING and WARN as level words, and Python's UserWarning: or a warning: line, are warnings")
{
	EXPECT_KIND("WARNING:root:disk almost full", PHASE_LINE_WARNING);
	EXPECT_KIND("2026-11-26 06:31:33,123 WARN low memory", PHASE_LINE_WARNING);
	EXPECT_KIND("[WARN] slow", PHASE_LINE_WARNING);
	EXPECT_KIND("/srv/app.py:3: UserWarning: deprecated", PHASE_LINE_WARNING);
	EXPECT_KIND("main.c:3:5: warning: unused variable", PHASE_LINE_WARNING);
	EXPECT_KIND("time=x level=warning msg=slow", PHASE_LINE_WARNING);
	EXPECT_KIND("{\"level\": \"warn\", \"msg\": \"slow\"}", PHASE_LINE_WARNING);
	EXPECT_KIND("Warnings: 0", 0);
	EXPECT_KIND("WARNINGS", 0);
	EXPECT_KIND("a warning about nothing", 0);
	EXPECT_KIND("Warning signs", 0);
}

TEST(kind_errors, "ERROR, CRITICAL, FATAL, a traceback and a ...Error: or ...Exception: word are errors")
{
	EXPECT_KIND("ERROR:root:failed to fetch", PHASE_LINE_ERROR);
	EXPECT_KIND("2026-11-26 06:31:33,123 - app - CRITICAL - disk gone", PHASE_LINE_ERROR);
	EXPECT_KIND("FATAL: cannot continue", PHASE_LINE_ERROR);
	EXPECT_KIND("Traceback (most recent call last):", PHASE_LINE_ERROR);
	EXPECT_KIND("ValueError: bad value", PHASE_LINE_ERROR);
	EXPECT_KIND("java.lang.IllegalStateException: closed", PHASE_LINE_ERROR);
	EXPECT_KIND("Error: file not found", PHASE_LINE_ERROR);
	EXPECT_KIND("main.c:3:5: error: expected ';'", PHASE_LINE_ERROR);
	EXPECT_KIND("level=error msg=failed", PHASE_LINE_ERROR);
	EXPECT_KIND("errors: 0", 0);
	EXPECT_KIND("the Error handler", 0);
	EXPECT_KIND("terror: a film", 0);
	EXPECT_KIND("Traceback", 0);
	EXPECT_KIND("ERRORS", 0);
	EXPECT_KIND("error_count=3", 0);
}

TEST(kind_retries, "retry, retrying, retried and retries in any case, and attempt N for N >= 2, are retries")
{
	EXPECT_KIND("Retrying in 5s", PHASE_LINE_RETRY);
	EXPECT_KIND("retry 3/5", PHASE_LINE_RETRY);
	EXPECT_KIND("will RETRY later", PHASE_LINE_RETRY);
	EXPECT_KIND("request retried", PHASE_LINE_RETRY);
	EXPECT_KIND("2 retries left", PHASE_LINE_RETRY);
	EXPECT_KIND("attempt 2 of 5", PHASE_LINE_RETRY);
	EXPECT_KIND("Attempt #3 failed", PHASE_LINE_RETRY);
	EXPECT_KIND("attempt=12", PHASE_LINE_RETRY);
	EXPECT_KIND("attempt 10000000000", PHASE_LINE_RETRY);
	EXPECT_KIND("attempt 1 of 5", 0);
	EXPECT_KIND("attempt 0", 0);
	EXPECT_KIND("max_retries=3", 0);
	EXPECT_KIND("attempts 3", 0);
	EXPECT_KIND("retryable", 0);
}

TEST(kind_bits, "a line can be several kinds at once, and an empty line none")
{
	EXPECT_KIND("WARNING retrying after ValueError: x",
		    PHASE_LINE_WARNING | PHASE_LINE_ERROR | PHASE_LINE_RETRY);
	EXPECT_KIND("INFO all good", 0);
	EXPECT_KIND("", 0);
	CHECK_INT_EQ(phase_line_kind(NULL, 0), 0);
}

CHECK_MAIN()
