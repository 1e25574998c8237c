/* stack renderers: stacks.folded (flamegraph.pl's collapsed format),
 * flamegraph.svg and offcpu.svg (interactive, with every name escaped). */
#include "check.h"
#include "record/stackread.h"
#include "render/render.h"
#include "render/stackview.h"
#include "stacks_fixture.h"

extern const struct renderer render_folded;
extern const struct renderer render_flamegraph;
extern const struct renderer render_offcpu;

/* Runs one renderer into memory; returns its code, *text the output (free it). */
static int render_to_string(const struct renderer *r, struct fixture *fx, char **text)
{
	struct strbuf err = STRBUF_INIT;
	size_t len = 0;
	FILE *out = open_memstream(text, &len);
	json_t *report = json_object();
	struct render_ctx ctx = { .report = report, .db = fx->db, .dir = fx->dir };
	int rc = r->render(&ctx, out, &err);
	fclose(out);
	json_decref(report);
	strbuf_release(&err);
	return rc;
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static const char evil[] = "<script>alert(1)</script>&\"'";

TEST(folded_lines_outermost_first,
     "folded lines are outermost first, merged, with ';' in names replaced")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 7, "cpu", 1, "main", "work", "hot@10");
	STACK(&fx, 3, "cpu", 1, "main", "work", "hot@12"); /* same text: one line */
	STACK(&fx, 2, "cpu", 1, "main", "a;b");
	STACK(&fx, 9, "offcpu", 5000, "main", "sleep"); /* not on-CPU: not in this file */
	fixture_reopen(&fx);
	char *text = NULL;
	CHECK(render_to_string(&render_folded, &fx, &text) == 0);
	CHECK(!strcmp(text, "main;a:b 2\nmain;work;hot 10\n"));
	free(text);
	fixture_close(&fx);
}

/* A name from the target: retitle the terminal, clear it, return the cursor
 * and print a fake stack line. */
static const char hostile[] = "evil\x1b]0;pwned\x07\x1b[2J\r fake;frame 99\nafter\xc2\x9b";

TEST(folded_escapes_control_characters, "control characters in names reach stacks.folded escaped "
					"(\\x1b), one line per stack, and never the SVG raw")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 3, "cpu", 1, "main", hostile);
	fixture_reopen(&fx);
	char *text = NULL;
	CHECK(render_to_string(&render_folded, &fx, &text) == 0);
	CHECK(text && !strcmp(text, "main;evil\\x1b]0:pwned\\x07\\x1b[2J\\x0d fake:frame "
				    "99\\x0aafter\\xc2\\x9b 3\n"));
	for (const char *p = text; p && *p; p++)
		CHECK(*p == '\n' || ((unsigned char)*p >= 0x20 && *p != 0x7f));
	free(text);
	/* The SVG keeps its own escaping: no raw control character there either. */
	CHECK(render_to_string(&render_flamegraph, &fx, &text) == 0);
	CHECK(text && !strchr(text, '\x1b') && !strchr(text, '\x07') && !strchr(text, '\r'));
	free(text);
	fixture_close(&fx);
}

/* A name of n characters: "head", x..., "_end". */
static char *long_name(size_t n)
{
	char *s = malloc(n + 1);
	memset(s, 'x', n);
	memcpy(s, "head", 4);
	memcpy(s + n - 4, "_end", 4);
	s[n] = '\0';
	return s;
}

/* count samples of the stack main -> name (fixture_stack cuts names). */
static void long_stack(struct fixture *fx, const char *name, int count)
{
	struct stack_writer *sw = recorder_stacks(fx->rec);
	struct frame_info m = { .function = "main", .file = "a.c", .module = "/opt/app", .kind = "native" };
	struct frame_info f = { .function = name, .file = "a.c", .module = "/opt/app", .kind = "native" };
	int64_t ids[2] = { stack_frame(sw, &m), stack_frame(sw, &f) };
	int64_t node = stack_intern(sw, ids, 2);
	for (int k = 0; k < count; k++) {
		struct sample_info si = { .t_ns = k, .pid = 1, .tid = 1, .node = node,
					  .source = "cpu", .weight = 1, .on_cpu = 1, .gil = -1 };
		stack_sample(sw, &si);
	}
}

TEST(folded_keeps_long_names_whole_up_to_the_cap,
     "a 10 000-character name reaches stacks.folded whole; a 100 000-character one is cut at "
     "STACK_NAME_MAX bytes with an ellipsis")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	char *ten_k = long_name(10000), *huge = long_name(100000);
	long_stack(&fx, ten_k, 2);
	long_stack(&fx, huge, 1);
	fixture_reopen(&fx);
	char *text = NULL;
	CHECK(render_to_string(&render_folded, &fx, &text) == 0);
	/* Two lines, the whole 10 000 first ('_' sorts before 'x'). */
	char *nl = text ? strchr(text, '\n') : NULL;
	CHECK(nl != NULL);
	if (!nl)
		nl = text = strdup("");
	*nl = '\0';
	CHECK(!strncmp(text, "main;", 5) && !strncmp(text + 5, ten_k, 10000) &&
	      !strcmp(text + 5 + 10000, " 2"));
	const char *cut = nl + 1;
	CHECK(!strncmp(cut, "main;head", 9));
	CHECK(strlen(cut) < STACK_NAME_MAX + 64);
	CHECK(strstr(cut, "x\xe2\x80\xa6 1\n") != NULL); /* cut, marked */
	free(text);
	free(ten_k);
	free(huge);
	fixture_close(&fx);
}

TEST(folded_nothing_to_write,
     "without on-CPU samples the folded and flame graph renderers write nothing")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 9, "offcpu", 5000, "main", "sleep");
	fixture_reopen(&fx);
	char *text = NULL;
	CHECK(render_to_string(&render_folded, &fx, &text) == 1);
	free(text);
	CHECK(render_to_string(&render_flamegraph, &fx, &text) == 1);
	free(text);
	fixture_close(&fx);
}

TEST(svg_escapes_hostile_names,
     "a frame named <script>alert(1)</script>&\"' appears only escaped in the SVG")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 5, "cpu", 1, "main", evil);
	STACK(&fx, 5, "cpu", 1, "main", "ok");
	fixture_reopen(&fx);
	char *svg = NULL;
	CHECK(render_to_string(&render_flamegraph, &fx, &svg) == 0);
	CHECK(count(svg, "<script") == 1); /* ours, once */
	CHECK(!strstr(svg, "alert(1)</script>"));
	CHECK(strstr(svg, "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;") != NULL);
	/* The name reaches the page only as attribute and text content. */
	CHECK(strstr(svg, "n=\"&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;\""));
	free(svg);
	fixture_close(&fx);
}

TEST(xml_escape_control_and_invalid, "control characters and invalid UTF-8 never reach the SVG raw")
{
	struct strbuf sb = STRBUF_INIT;
	xml_escape(&sb,
		   "a\x01"
		   "b\xff"
		   "c]]>",
		   8);
	CHECK(!strcmp(sb.buf, "a\xEF\xBF\xBD"
			      "b\xEF\xBF\xBD"
			      "c]]&gt;"));
	strbuf_release(&sb);
}

TEST(xml_escape_every_byte, "no byte sequence passes xml_escape as raw markup")
{
	/* Every byte value, alone and in pairs: no markup character survives raw. */
	struct strbuf sb = STRBUF_INIT;
	int raw = 0; /* markup characters that passed raw */
	for (int a = 0; a < 256; a++)
		for (int b = 0; b < 256; b++) {
			char in[3] = { (char)a, (char)b, 'x' };
			strbuf_reset(&sb);
			xml_escape(&sb, in, 3);
			for (size_t i = 0; i < sb.len; i++) {
				unsigned char c = (unsigned char)sb.buf[i];
				const char *p = sb.buf + i;
				int entity = !strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) ||
					     !strncmp(p, "&gt;", 4) || !strncmp(p, "&quot;", 6) ||
					     !strncmp(p, "&#39;", 5);
				if (c == '<' || c == '>' || c == '"' || c == '\'' || c < 0x20 ||
				    c == 0x7f || (c == '&' && !entity))
					raw++;
			}
		}
	CHECK(raw == 0);
	strbuf_release(&sb);
}

TEST(svg_frames_have_tooltips_zoom_and_search,
     "every SVG frame has a tooltip with samples and share, and the page can zoom and search")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 3, "cpu", 1, "main", "parse", "hash");
	STACK(&fx, 1, "cpu", 1, "main", "lookup", "hash");
	fixture_reopen(&fx);
	char *svg = NULL;
	CHECK(render_to_string(&render_flamegraph, &fx, &svg) == 0);
	/* all, main, parse, lookup and hash twice: one <g> and one <title> each. */
	CHECK(count(svg, "<g class=\"f\"") == 6);
	CHECK(count(svg, "<title>") == 6);
	/* The tooltip says where the function is: its file, module and kind. */
	CHECK(strstr(svg, "<title>hash (3 samples, 75.00%) · work.c · app · native</title>") !=
	      NULL);
	CHECK(strstr(svg, "<title>hash (1 sample, 25.00%) · work.c · app · native</title>") !=
	      NULL);
	CHECK(strstr(svg, "<title>all (4 samples, 100.00%)</title>") != NULL);
	/* The legend says what the hues are; the details line is at the top. */
	CHECK(strstr(svg, ">Python</text>") && strstr(svg, ">native</text>") &&
	      strstr(svg, ">kernel</text>"));
	CHECK(strstr(svg, "<text id=\"details\" x=\"10\" y=\"48\">") != NULL);
	CHECK(strstr(svg, "onload=\"init(evt)\"") && strstr(svg, "function zoom(") &&
	      strstr(svg, "function search(") && strstr(svg, "Matched: "));
	CHECK(count(svg, "<g") == count(svg, "</g>"));
	free(svg);
	fixture_close(&fx);
}

TEST(svg_tooltip_names_hottest_line,
     "a frame's tooltip gives its file with the line most of its samples were at")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 2, "cpu", 1, "main@5", "parse@40", "hash@12");
	STACK(&fx, 5, "cpu", 1, "main@5", "parse@47", "hash@12");
	STACK(&fx, 1, "cpu", 1, "main@5", "parse@40");
	fixture_reopen(&fx);
	char *svg = NULL;
	CHECK(render_to_string(&render_flamegraph, &fx, &svg) == 0);
	/* parse: 5 samples at line 47, 3 at line 40 (one ending there) */
	CHECK(strstr(svg, "<title>parse (8 samples, 100.00%) · work.c:47 · app · native</title>") !=
	      NULL);
	CHECK(strstr(svg, "<title>hash (7 samples, 87.50%) · work.c:12 · app · native</title>") !=
	      NULL);
	CHECK(strstr(svg, "<title>main (8 samples, 100.00%) · work.c:5 · app · native</title>") !=
	      NULL);
	free(svg);
	fixture_close(&fx);
}

TEST(offcpu_svg_weighs_time, "offcpu.svg weighs stacks by blocked time")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 2, "offcpu", 1500000000, "main", "read");
	STACK(&fx, 1, "offcpu", 1000000000, "main", "poll");
	STACK(&fx, 50, "cpu", 1, "main", "spin");
	fixture_reopen(&fx);
	char *svg = NULL;
	CHECK(render_to_string(&render_offcpu, &fx, &svg) == 0);
	CHECK(strstr(svg, "<title>read (3.00 s, 75.00%) · work.c · app · native</title>") != NULL);
	CHECK(strstr(svg, "<title>main (4.00 s, 100.00%) · work.c · app · native</title>") !=
	      NULL);
	CHECK(strstr(svg, ">blocked time</text>") && !strstr(svg, ">Python</text>"));
	CHECK(!strstr(svg, "spin"));
	free(svg);
	fixture_close(&fx);
}

TEST(cyclic_stack_is_bounded, "a stack whose node is its own parent is cut where the cycle closes")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 1, "cpu", 1, "main");
	sqlite3_exec(recorder_db(fx.rec),
		     "INSERT INTO stack_nodes VALUES(50, 50, 1, 1);"
		     "INSERT INTO samples VALUES(0, 1, 1, 50, 'cpu', 1, 1, NULL);",
		     NULL, NULL, NULL);
	fixture_reopen(&fx);
	char *text = NULL;
	CHECK(render_to_string(&render_folded, &fx, &text) == 0);
	/* The cycle is cut where it closes: node 50 is one more "main". */
	CHECK(text && !strcmp(text, "main 2\n"));
	free(text);
	CHECK(render_to_string(&render_flamegraph, &fx, &text) == 0);
	CHECK(text && count(text, "<g class=\"f\"") == 2);
	free(text);
	fixture_close(&fx);
}

CHECK_MAIN()
