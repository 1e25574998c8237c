/* test_pyedit: timing lines inserted into Python source (pyedit.h) and taken
 * out byte for byte; the definitions the tokenizer finds (pyscan.h). */
#include "check.h"
#include "util/pyedit.h"
#include "util/pyscan.h"
#include "util/sha256.h"
#include "util/strbuf.h"

static const char SRC[] = "# -*- coding: latin-1 -*-\n"			  /* 1 */
			  "\"\"\"A module.\n"				  /* 2 */
			  "\n"						  /* 3 */
			  "def not_a_function(): this is the docstring\n" /* 4 */
			  "\"\"\"\n"					  /* 5 */
			  "from __future__ import annotations\n"	  /* 6 */
			  "import functools\n"				  /* 7 */
			  "\n"						  /* 8 */
			  "@functools.total_ordering\n"			  /* 9 */
			  "class Matcher(object,\n"			  /* 10 */
			  "              metaclass=type):\n"		  /* 11 */
			  "    x = f\"{'a'}{ {'k': 1}['k']:>{3}}\"\n"	  /* 12 */
			  "    @staticmethod\n"				  /* 13 */
			  "    @functools.lru_cache(\n"			  /* 14 */
			  "        maxsize=None)\n"			  /* 15 */
			  "    def normalize(title):\n"			  /* 16 */
			  "        return title.lower()\n"		  /* 17 */
			  "\n"						  /* 18 */
			  "    async def fetch(self):\n"		  /* 19 */
			  "        def inner(x):\n"			  /* 20 */
			  "            return x\n"			  /* 21 */
			  "        s = '''\n"				  /* 22 */
			  "def fake(): pass\n"				  /* 23 */
			  "'''\n"					  /* 24 */
			  "        return inner\n"			  /* 25 */
			  "\n"						  /* 26 */
			  "if True:\n"					  /* 27 */
			  "    def helper(): pass\n"			  /* 28 */
			  "else:\n"					  /* 29 */
			  "    def helper(): return 1\n"		  /* 30 */
			  "\n"						  /* 31 */
			  "def main(a=(1,\n"				  /* 32 */
			  "def_ := 2)):\n"				  /* 33 */
			  "    pass";					  /* 34, no line end */

struct edit {
	struct strbuf out;
	struct pyedit_lines lines;
	size_t bad;
	struct strbuf err;
};

static int instrument(const char *text, size_t len, const struct pyedit_target *t, size_t n,
		      struct edit *e)
{
	*e = (struct edit){ STRBUF_INIT, PYEDIT_LINES_INIT, (size_t)-1, STRBUF_INIT };
	return pyedit_instrument(text, len, t, n, &e->out, &e->lines, &e->bad, &e->err);
}

static void edit_release(struct edit *e)
{
	strbuf_release(&e->out);
	strbuf_release(&e->err);
	pyedit_lines_release(&e->lines);
}

/* Instruments targets, strips what was inserted, and expects the text back. */
static void round_trip(const char *text, size_t len, const struct pyedit_target *t, size_t n)
{
	struct edit e;
	struct strbuf back = STRBUF_INIT, err = STRBUF_INIT;
	int r = instrument(text, len, t, n, &e);
	CHECK(r == PYEDIT_OK);
	if (r == PYEDIT_OK) {
		CHECK(e.out.len > len);
		CHECK(pyedit_strip(e.out.buf, e.out.len, e.lines.v, e.lines.n, &back, &err) ==
		      PYEDIT_OK);
		CHECK(back.len == len && !memcmp(back.buf, text, len));
	}
	strbuf_release(&back);
	strbuf_release(&err);
	edit_release(&e);
}

/* The n-th line (1-based) of text, without its end. */
static void line_of(const char *text, int n, struct strbuf *out)
{
	strbuf_reset(out);
	const char *p = text;
	for (int i = 1; i < n && p; i++) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	if (!p)
		return;
	size_t len = strcspn(p, "\r\n");
	strbuf_add(out, p, len);
}

TEST(defs_qualified, "the tokenizer names each def and class as CPython's __qualname__ does, "
		     "none inside strings")
{
	struct pyscan scan = PYSCAN_INIT;
	struct strbuf err = STRBUF_INIT;
	REQUIRE(pyscan_defs(SRC, sizeof(SRC) - 1, &scan, &err) == 0);
	static const char *const want[] = { "Matcher",	     "Matcher.normalize",
					    "Matcher.fetch", "Matcher.fetch.<locals>.inner",
					    "helper",	     "helper",
					    "main" };
	static const int lines[] = { 10, 16, 19, 20, 28, 30, 32 };
	static const int tops[] = { 9, 9, 9, 9, 27, 27, 32 };
	CHECK(scan.n == sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < scan.n && i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK(!strcmp(scan.defs[i].qualname, want[i]));
		CHECK(scan.defs[i].line == lines[i]);
		CHECK(scan.defs[i].top_line == tops[i]);
	}
	CHECK(scan.indent_len == 4);
	pyscan_release(&scan);
	strbuf_release(&err);
}

TEST(decorator_above_def, "the decorator goes right above the def, below its own decorators, "
			  "with the def's indentation, and the import block above the "
			  "module-level statement's first decorator")
{
	struct pyedit_target t[] = { { "Matcher.normalize", "m.py:Matcher.normalize" } };
	struct edit e;
	struct strbuf l = STRBUF_INIT;
	REQUIRE(instrument(SRC, sizeof(SRC) - 1, t, 1, &e) == PYEDIT_OK);
	CHECK(e.lines.n == 5);
	line_of(e.out.buf, 9, &l);
	CHECK(!strcmp(l.buf, "try:  # [PROFILE]"));
	line_of(e.out.buf, 10, &l);
	CHECK(!strcmp(l.buf, "    from sonde import region as _sonde_region  # [PROFILE]"));
	line_of(e.out.buf, 13, &l);
	CHECK(!strcmp(l.buf, "@functools.total_ordering"));
	line_of(e.out.buf, 20, &l);
	CHECK(!strcmp(l.buf, "    @_sonde_region(\"m.py:Matcher.normalize\")  # [PROFILE]"));
	CHECK(e.lines.v[0].line == 9 && e.lines.v[4].line == 20);
	CHECK(!strcmp(e.lines.v[4].text, l.buf));
	line_of(e.out.buf, 21, &l);
	CHECK(!strcmp(l.buf, "    def normalize(title):"));
	strbuf_release(&l);
	edit_release(&e);
}

TEST(round_trip_every_kind, "removing the inserted lines gives the text back byte for byte: "
			    "decorated, async, nested, conditional and last defs")
{
	struct pyedit_target t[] = { { "Matcher.normalize", "a" },
				     { "Matcher.fetch", "b" },
				     { "Matcher.fetch.inner", "c" },
				     { "helper", "d" },
				     { "main", "e" } };
	round_trip(SRC, sizeof(SRC) - 1, t, 5);
	struct edit e;
	REQUIRE(instrument(SRC, sizeof(SRC) - 1, t, 5, &e) == PYEDIT_OK);
	CHECK(e.lines.n == 4 + 6); /* helper twice: the if and the else */
	edit_release(&e);
}

TEST(tabs_crlf_no_newline, "a file indented with tabs, with CRLF line ends and no final line "
			   "end gets tab-indented CRLF lines, and comes back exactly")
{
	static const char src[] = "class A:\r\n\tdef m(self):\r\n\t\treturn 1\r\n"
				  "def last(): return 2";
	struct pyedit_target t[] = { { "A.m", "A.m" }, { "last", "last" } };
	struct edit e;
	REQUIRE(instrument(src, sizeof(src) - 1, t, 2, &e) == PYEDIT_OK);
	CHECK(!strcmp(e.out.buf, "try:  # [PROFILE]\r\n"
				 "\tfrom sonde import region as _sonde_region  # [PROFILE]\r\n"
				 "except ImportError:  # [PROFILE]\r\n"
				 "\tdef _sonde_region(name): return lambda fn: fn  # [PROFILE]\r\n"
				 "class A:\r\n"
				 "\t@_sonde_region(\"A.m\")  # [PROFILE]\r\n"
				 "\tdef m(self):\r\n\t\treturn 1\r\n"
				 "@_sonde_region(\"last\")  # [PROFILE]\r\n"
				 "def last(): return 2"));
	edit_release(&e);
	round_trip(src, sizeof(src) - 1, t, 2);
}

TEST(bom_stays_first, "a UTF-8 byte order mark stays the file's first bytes")
{
	static const char src[] = "\xef\xbb\xbf"
				  "def f():\n    pass\n";
	struct pyedit_target t[] = { { "f", "caf\xc3\xa9 \"q\"\\" } };
	struct edit e;
	REQUIRE(instrument(src, sizeof(src) - 1, t, 1, &e) == PYEDIT_OK);
	CHECK(!strncmp(e.out.buf, "\xef\xbb\xbftry:  # [PROFILE]\n", 21));
	CHECK(strstr(e.out.buf, "@_sonde_region(\"caf\\u00e9 \\\"q\\\"\\\\\")  # [PROFILE]\n"));
	edit_release(&e);
	round_trip(src, sizeof(src) - 1, t, 1);
}

TEST(missing_function, "a name that is no def is refused, saying which, with nothing written")
{
	struct pyedit_target t[] = { { "helper", "x" }, { "Matcher.nope", "y" } };
	struct edit e;
	CHECK(instrument(SRC, sizeof(SRC) - 1, t, 2, &e) == PYEDIT_NOT_FOUND);
	CHECK(e.bad == 1 && e.out.len == 0 && e.lines.n == 0);
	CHECK(strstr(e.err.buf, "Matcher.nope"));
	edit_release(&e);
	struct pyedit_target c[] = { { "Matcher", "x" } };
	CHECK(instrument(SRC, sizeof(SRC) - 1, c, 1, &e) == PYEDIT_NOT_FUNCTION);
	edit_release(&e);
	struct pyedit_target s[] = { { "fake", "x" } };
	CHECK(instrument(SRC, sizeof(SRC) - 1, s, 1, &e) == PYEDIT_NOT_FOUND);
	edit_release(&e);
}

TEST(comment_last, "a comment on the last line without a line end ends the scan")
{
	static const char src[] = "def f():\n    pass\n# the end";
	struct pyscan scan = PYSCAN_INIT;
	struct strbuf err = STRBUF_INIT;
	CHECK(pyscan_defs(src, sizeof(src) - 1, &scan, &err) == 0 && scan.n == 1);
	pyscan_release(&scan);
	strbuf_release(&err);
}

TEST(unterminated_string, "a text that does not tokenize is refused with the line")
{
	static const char src[] = "def f():\n    s = '''open\n";
	struct pyedit_target t[] = { { "f", "f" } };
	struct edit e;
	CHECK(instrument(src, sizeof(src) - 1, t, 1, &e) == PYEDIT_SYNTAX);
	CHECK(strstr(e.err.buf, "line 2"));
	edit_release(&e);
}

TEST(strip_checks_lines, "removing refuses a line that is no longer the one inserted")
{
	static const char src[] = "def f():\n    pass\n";
	struct pyedit_target t[] = { { "f", "f" } };
	struct edit e;
	struct strbuf back = STRBUF_INIT, err = STRBUF_INIT;
	REQUIRE(instrument(src, sizeof(src) - 1, t, 1, &e) == PYEDIT_OK);
	struct strbuf edited = STRBUF_INIT;
	strbuf_addstr(&edited, "import os\n");
	strbuf_addstr(&edited, e.out.buf);
	CHECK(pyedit_strip(edited.buf, edited.len, e.lines.v, e.lines.n, &back, &err) ==
	      PYEDIT_MISMATCH);
	CHECK(back.len == 0 && strstr(err.buf, "line 1"));
	size_t left = 99;
	strbuf_addstr(&edited, "x = 1  # [PROFILE]\n");
	CHECK(pyedit_strip_marked(edited.buf, edited.len, e.lines.v, e.lines.n, &back, &left) == 5);
	CHECK(!strcmp(back.buf, "import os\ndef f():\n    pass\nx = 1  # [PROFILE]\n"));
	CHECK(left == 1);
	strbuf_release(&edited);
	strbuf_release(&back);
	strbuf_release(&err);
	edit_release(&e);
}

TEST(sha256_vectors, "sha256 gives FIPS 180-4's digests")
{
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex("", 0, hex);
	CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	sha256_hex("abc", 3, hex);
	CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_hex(two, sizeof(two) - 1, hex);
	CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
}

CHECK_MAIN()
