/* md_html (src/render/md_html.c): report.md's Markdown as the HTML of
 * report.html, with everything from the target as text. */
#include "check.h"
#include "render/md_html.h"

#include <stdlib.h>
#include <string.h>

static char *html_of(const char *md)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	md_html_write(f, md, strlen(md), NULL, NULL);
	fclose(f);
	return buf;
}

TEST(escape, "markup from the target is text: tags, quotes and ampersands come out as entities")
{
	char *h = html_of("- **Location**: <img src=x onerror=alert(1)> & \"q\" 'a'\n");
	CHECK(strstr(h, "<li><strong>Location</strong>: &lt;img src=x onerror=alert(1)&gt; "
			"&amp; &quot;q&quot; &#39;a&#39;") != NULL);
	CHECK(strstr(h, "<img") == NULL);
	free(h);
	/* an entity report.md wrote stays one; a bare & is escaped */
	h = html_of("a &lt;b&gt; &#60; & c &nope\n");
	CHECK_STR_EQ(h, "<p>a &lt;b&gt; &#60; &amp; c &amp;nope</p>\n");
	free(h);
}

TEST(code_spans, "code spans of any fence length hold their text verbatim, escaped; one space "
		 "is stripped only from both ends")
{
	char *h = html_of("x `` a`<b>`c `` y ` z` *em* and \\*not\\*\n");
	CHECK_STR_EQ(h, "<p>x <code>a`&lt;b&gt;`c</code> y <code> z</code> <em>em</em> and "
			"*not*</p>\n");
	free(h);
}

TEST(emphasis_reach, "a star closes emphasis only within reach: a long line of the target's "
		     "stars stays text")
{
	char md[700];
	memset(md, 'x', sizeof(md) - 2);
	md[0] = '*';
	md[600] = '*';
	md[sizeof(md) - 2] = '\n';
	md[sizeof(md) - 1] = '\0';
	char *h = html_of(md);
	CHECK(strstr(h, "<em>") == NULL);
	CHECK(h[3] == '*');
	free(h);
}

TEST(tables, "a pipe table: header cells, body cells, escaped pipes and pipes in code stay in "
	     "their cell, numbers right-aligned")
{
	char *h = html_of("| function | share |\n|---|---|\n| a\\|b | 12.5% |\n| ` x|y ` | -3 |\n");
	CHECK(strstr(h, "<thead><tr><th>function</th><th>share</th></tr>") != NULL);
	CHECK(strstr(h, "<tr><td>a|b</td><td class=\"n\">12.5%</td></tr>") != NULL);
	CHECK(strstr(h, "<tr><td><code>x|y</code></td><td class=\"n\">-3</td></tr>") != NULL);
	CHECK(strstr(h, "|---|") == NULL);
	free(h);
}

TEST(table_spans, "a cell's code span holding a backtick and a pipe stays one cell, and a "
		  "table at the very end of a buffer without a terminator is read within it")
{
	char *h = html_of("| src | n |\n|---|---|\n| `` `a`|b `` | 2 |\n");
	CHECK(strstr(h, "<tr><td><code>`a`|b</code></td><td class=\"n\">2</td></tr>") != NULL);
	free(h);
	static const char text[] = "| a |\n|---|-|";
	char *md = malloc(sizeof(text) - 1); /* no NUL after it */
	memcpy(md, text, sizeof(text) - 1);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	md_html_write(f, md, sizeof(text) - 1, NULL, NULL);
	fclose(f);
	CHECK(strstr(buf, "<thead><tr><th>a</th></tr>\n</thead><tbody>\n</tbody>") != NULL);
	free(buf);
	free(md);
}

TEST(lists, "lists nest by two spaces and close where they end")
{
	char *h = html_of("- a\n  - b\n    - c\n- d\n\ntext\n");
	CHECK_STR_EQ(h,
		     "<ul><li>a\n<ul><li>b\n<ul><li>c</li></ul></li></ul></li>\n<li>d</li></ul>\n"
		     "<p>text</p>\n");
	free(h);
}

static int headings_seen;
static char last_heading[64];

static void on_heading(void *arg, int level, const char *text)
{
	(void)arg;
	headings_seen++;
	snprintf(last_heading, sizeof(last_heading), "%d %s", level, text ? text : "(end)");
}

TEST(headings, "headings get ids in order, and the caller hears of each before it is written")
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *md = "# Title `x`\n## Findings\n> **Warning**: busy\n> more\n";
	md_html_write(f, md, strlen(md), on_heading, NULL);
	fclose(f);
	CHECK(strstr(buf, "<h1 id=\"h-1\">Title <code>x</code></h1>") != NULL);
	CHECK(strstr(buf, "<h2 id=\"h-2\">Findings</h2>") != NULL);
	CHECK(strstr(buf, "<blockquote><strong>Warning</strong>: busy<br>\nmore</blockquote>") !=
	      NULL);
	CHECK_INT_EQ(headings_seen, 3);
	CHECK_STR_EQ(last_heading, "0 (end)");
	free(buf);
}

CHECK_MAIN()
