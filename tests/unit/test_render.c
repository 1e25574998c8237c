/* test_render: number formatting, Markdown escaping in report.md, and
 * outside text escaped and shortened on the terminal. */
#include "check.h"
#include "render/mdcell.h"
#include "render/render.h"
#include "util/strbuf.h"

#include <jansson.h>

extern const struct renderer render_markdown;

static const char *bytes(double b)
{
	static char buf[64];
	fmt_bytes(buf, sizeof(buf), b);
	return buf;
}

static const char *secs(double s)
{
	static char buf[64];
	fmt_seconds(buf, sizeof(buf), s);
	return buf;
}

TEST(bytes_units, "byte counts use B, KiB, MiB, GiB and TiB with one decimal past bytes")
{
	CHECK_STR_EQ(bytes(0), "0 B");
	CHECK_STR_EQ(bytes(512), "512 B");
	CHECK_STR_EQ(bytes(1536), "1.5 KiB");
	CHECK_STR_EQ(bytes(150.0 * 1024 * 1024), "150.0 MiB");
	CHECK_STR_EQ(bytes(3.0 * 1024 * 1024 * 1024), "3.0 GiB");
	CHECK_STR_EQ(bytes(2.0 * 1024 * 1024 * 1024 * 1024), "2.0 TiB");
	CHECK_STR_EQ(bytes(4096.0 * 1024 * 1024 * 1024 * 1024), "4096.0 TiB");
}

TEST(bytes_no_1024, "a byte count just under a unit boundary never prints as 1024 of the smaller unit")
{
	double near[] = { 1023.7, 1024.0 * 1024 - 1, 1024.0 * 1024 * 1024 - 1000 };
	for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++)
		if (!strncmp(bytes(near[i]), "1024", 4))
			check_fail(__FILE__, __LINE__, "%.1f prints as %s", near[i], bytes(near[i]));
	CHECK_STR_EQ(bytes(1023), "1023 B");
}

TEST(seconds_units, "durations use µs, ms, s, then minutes and seconds")
{
	CHECK_STR_EQ(secs(0.000250), "250 µs");
	CHECK_STR_EQ(secs(0.25), "250.0 ms");
	CHECK_STR_EQ(secs(2.5), "2.50 s");
	CHECK_STR_EQ(secs(90), "90.00 s");
	CHECK_STR_EQ(secs(150), "2 min 30 s");
	CHECK_STR_EQ(secs(3725), "62 min 5 s");
}

TEST(seconds_no_60, "a duration just under a whole minute never prints as \"60 s\" or 1000 of a smaller unit")
{
	CHECK_STR_EQ(secs(179.6), "3 min 0 s");
	CHECK_STR_EQ(secs(239.5), "4 min 0 s");
	CHECK_NOT_CONTAINS(secs(0.0009999), "1000");
	CHECK_NOT_CONTAINS(secs(0.99996), "1000");
	CHECK_NOT_CONTAINS(secs(119.999), "120.00");
	int bad = 0;
	double first = 0;
	for (double s = 120; s < 7200; s += 0.37)
		if (strstr(secs(s), " 60 s") && !bad++)
			first = s;
	if (bad)
		check_fail(__FILE__, __LINE__, "%d durations print \"60 s\", the first %.2f as %s", bad,
			   first, secs(first));
}

/* Renders report.md for a report object into a string. */
static char *markdown(json_t *report)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	struct strbuf err = STRBUF_INIT;
	struct render_ctx ctx = { .report = report, .db = NULL, .dir = "." };
	int rc = render_markdown.render(&ctx, f, &err);
	fclose(f);
	strbuf_release(&err);
	if (rc) {
		free(text);
		return NULL;
	}
	return text;
}

/* Cell borders in a GFM table row: pipes not taken by a backslash escape. */
static int row_borders(const char *line)
{
	int n = 0;
	for (const char *p = line; *p && *p != '\n'; p++) {
		if (*p == '\\' && p[1] && p[1] != '\n')
			p++;
		else if (*p == '|')
			n++;
	}
	return n;
}

static const char *line_after(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);
	return p ? p : "";
}

static json_t *report_with_command(const char *cmd)
{
	return json_pack("{s:{s:s, s:i, s:f, s:[i]}, s:[{s:i, s:i, s:s, s:b, s:f}]}", "target",
			 "command", cmd, "exit_code", 0, "wall_s", 1.5, "pids", 42, "processes",
			 "pid", 42, "ppid", 1, "command", cmd, "leader", 1, "start_s", 0.0);
}

TEST(md_table_cells, "a command with pipes, backslashes and markup stays in its own table cell in report.md")
{
	static const char *cmds[] = { "sh -c 'a | b'", "grep 'x\\|y' file", "tr '\\\\' /", "a\\",
				      "<script>alert(1)</script>", "echo `id` [link](http://x)",
				      "multi\nline\rcmd" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		json_t *r = report_with_command(cmds[i]);
		REQUIRE(r);
		char *md = markdown(r);
		REQUIRE(md);
		const char *row = line_after(md, "| 42 (launched)");
		if (row_borders(row) != 11)
			check_fail(__FILE__, __LINE__, "command \"%s\": row has %d borders, not 11: %.200s",
				   cmds[i], row_borders(row), row);
		char *one = strndup(row, strcspn(row, "\n"));
		CHECK_NOT_CONTAINS(one, "<script>"); /* as text, not HTML */
		free(one);
		free(md);
		json_decref(r);
	}
}

TEST(md_no_links, "a command cannot turn into a link in report.md")
{
	json_t *r = report_with_command("run [docs](http://evil.example)");
	REQUIRE(r);
	char *md = markdown(r);
	REQUIRE(md);
	const char *row = line_after(md, "| 42 (launched)");
	CHECK_CONTAINS(row, "\\[docs]");
	free(md);
	json_decref(r);
}

/* The content of the first CommonMark code span in line, or NULL. */
static char *code_span(const char *line)
{
	const char *open = strchr(line, '`');
	if (!open)
		return NULL;
	size_t n = strspn(open, "`");
	const char *body = open + n;
	for (const char *p = body; *p && *p != '\n'; p++) {
		if (*p != '`')
			continue;
		size_t m = strspn(p, "`");
		if (m == n) {
			size_t len = (size_t)(p - body);
			char *s = strndup(body, len);
			if (len >= 2 && s[0] == ' ' && s[len - 1] == ' ' && strspn(s, " ") != len) {
				memmove(s, s + 1, len - 2);
				s[len - 2] = '\0';
			}
			return s;
		}
		p += m - 1;
	}
	return NULL;
}

TEST(md_title_verbatim, "the report title shows the command verbatim in a code span, backticks and backslashes included")
{
	static const char *cmds[] = { "python3 train.py", "echo `date`", "printf 'a\\tb'",
				      "``x", "y`", "a | b" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		json_t *r = report_with_command(cmds[i]);
		REQUIRE(r);
		char *md = markdown(r);
		REQUIRE(md);
		const char *title = line_after(md, "# sonde report:");
		char *span = code_span(title);
		if (!span || strcmp(span, cmds[i]))
			check_fail(__FILE__, __LINE__, "command \"%s\" shows as \"%s\"", cmds[i],
				   span ? span : "(no code span)");
		free(span);
		free(md);
		json_decref(r);
	}
}

TEST(md_sections, "report.md has Part A with findings and Part B, and says when there is no finding")
{
	json_t *r = report_with_command("app");
	REQUIRE(r);
	json_object_set_new(r, "findings", json_array());
	char *md = markdown(r);
	REQUIRE(md);
	CHECK_CONTAINS(md, "# Part A");
	CHECK_CONTAINS(md, "## Findings");
	CHECK_CONTAINS(md, "No finding");
	CHECK_CONTAINS(md, "# Part B");
	CHECK_CONTAINS(md, "Exit code 0 after 1.50 s");
	free(md);
	json_decref(r);
}

/* Outside text that would retitle the terminal, clear it, and print a fake
 * stack line after a carriage return. */
#define HOSTILE "evil\x1b]0;pwned\x07\x1b[2J\r    fake (fake.py:1)\nafter\xc2\x9b"

/* A report whose names, titles and reasons all carry HOSTILE; the hotspot's
 * function is 10 000 characters long and ends in "_end". */
static json_t *hostile_report(void)
{
	struct strbuf longname = STRBUF_INIT;
	strbuf_addstr(&longname, HOSTILE);
	while (longname.len < 10000 - 4)
		strbuf_addch(&longname, 'x');
	strbuf_addstr(&longname, "_end");
	json_t *r = report_with_command(HOSTILE);
	json_object_set_new(r, "hotspots",
			    json_pack("[{s:s, s:s, s:i, s:s, s:f, s:f, s:i}]", "function",
				      longname.buf, "file", HOSTILE, "line", 3, "module", HOSTILE,
				      "self_pct", 50.0, "total_pct", 60.0, "samples", 10));
	json_object_set_new(r, "findings",
			    json_pack("[{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:f, s:f}}]",
				      "rank", 1, "title", "Make " HOSTILE " faster", "dimension",
				      "cpu", "location", HOSTILE, "evidence", HOSTILE, "diagnosis",
				      HOSTILE, "next_step", HOSTILE, "validation", HOSTILE, "impact",
				      "seconds", 1.0, "share_pct", 50.0));
	json_object_set_new(r, "probes",
			    json_pack("[{s:s, s:s, s:s}]", "name", "cpu", "status", "unavailable",
				      "reason", HOSTILE));
	json_object_set_new(r, "python",
			    json_pack("{s:s, s:[{s:i, s:i, s:s, s:i}], s:{s:f, s:f, s:i}}", "mode",
				      "cpu", "threads", "pid", 42, "tid", 43, "name", HOSTILE,
				      "samples", 10, "gil", "held_pct", 50.0, "contention_pct", 0.0,
				      "ticks", 10));
	strbuf_release(&longname);
	return r;
}

/* Control characters other than the line feeds that end lines. */
static size_t raw_controls(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p < 0x20 && *p != '\n') || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0);
	return n;
}

TEST(md_escapes_controls, "control characters from the target reach report.md escaped (\\x1b), and a 10 000-character name is kept whole there")
{
	json_t *r = hostile_report();
	REQUIRE(r);
	char *md = markdown(r);
	REQUIRE(md);
	CHECK_INT_EQ((long long)raw_controls(md), 0);
	CHECK_CONTAINS(md, "evil\\x1b]0;pwned\\x07\\x1b\\[2J\\x0d");
	CHECK_CONTAINS(md, "xxxx_end");
	free(md);
	json_decref(r);
}

TEST(terminal_escapes_and_shortens, "the terminal summary escapes control characters from the target (\\x1b) and shortens a 10 000-character name")
{
	json_t *r = hostile_report();
	REQUIRE(r);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	REQUIRE(f);
	struct render_ctx ctx = { .report = r, .db = NULL, .dir = "/tmp/run\x1b[2J" };
	render_terminal(&ctx, f);
	fclose(f);
	CHECK_INT_EQ((long long)raw_controls(text), 0);
	CHECK_CONTAINS(text, "evil\\x1b]0;pwned\\x07");
	CHECK_CONTAINS(text, "/tmp/run\\x1b[2J/report.md");
	char run[201]; /* shortened: head, ellipsis, tail */
	memset(run, 'x', 200);
	run[200] = '\0';
	CHECK_NOT_CONTAINS(text, run);
	CHECK_CONTAINS(text, "x\xe2\x80\xa6x");
	CHECK_CONTAINS(text, "x_end (evil");
	size_t longest = 0;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		longest = n > longest ? n : longest;
		p += n + (p[n] == '\n');
	}
	CHECK(longest < 600);
	free(text);
	json_decref(r);
}

TEST(md_fill_cells,
     "md_fill writes each {kind:key} of a template as that kind of cell and the rest as it is")
{
	json_t *o = json_pack("{s:s, s:f, s:i, s:f, s:s, s:i}", "name", "a|b", "cpu_s", 1.5, "n", 7,
			      "rate", 0.125, "file", "x.py", "line", 3);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	REQUIRE(f && o);
	md_fill(f, o,
		"| {text:name} | {s:cpu_s} | {int:n} | {fraction:rate} | {location:file} | "
		"{int:absent} | {x} {whole:n} | {nokind:n} |\n");
	fclose(f);
	CHECK_STR_EQ(
	    text, "| a\\|b | 1.50 s | 7 | 12.5% | x.py:3 | \xe2\x80\x93 | {x} 7 | {nokind:n} |\n");
	free(text);
	json_decref(o);
}

CHECK_MAIN()
