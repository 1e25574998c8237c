/* test_utf8: outside text is made safe for JSON and markup. */
#include "check.h"
#include "util/strbuf.h"
#include "util/utf8.h"

#define S(lit) lit, sizeof(lit) - 1
#define FFFD "\xef\xbf\xbd"

TEST(valid_accepted, "ASCII and well-formed 2, 3 and 4 byte sequences are valid")
{
	CHECK(utf8_valid(S("")));
	CHECK(utf8_valid(S("plain ascii")));
	CHECK(utf8_valid(S("caf\xc3\xa9")));		/* é */
	CHECK(utf8_valid(S("\xe2\x82\xac")));		/* € */
	CHECK(utf8_valid(S("\xf0\x9f\x98\x80")));	/* 😀 */
	CHECK(utf8_valid(S("\xf4\x8f\xbf\xbf")));	/* U+10FFFF */
	CHECK(utf8_valid(S("\xed\x9f\xbf")));		/* U+D7FF */
}

TEST(invalid_refused, "overlongs, surrogates, code points past U+10FFFF, stray and truncated bytes and NULs are invalid")
{
	CHECK(!utf8_valid(S("\xc0\xaf")));		/* overlong '/' */
	CHECK(!utf8_valid(S("\xe0\x80\xaf")));		/* overlong */
	CHECK(!utf8_valid(S("\xf0\x80\x80\xaf")));	/* overlong */
	CHECK(!utf8_valid(S("\xed\xa0\x80")));		/* U+D800 */
	CHECK(!utf8_valid(S("\xf4\x90\x80\x80")));	/* U+110000 */
	CHECK(!utf8_valid(S("\x80")));			/* stray continuation */
	CHECK(!utf8_valid(S("\xff")));
	CHECK(!utf8_valid(S("\xe2\x82")));		/* truncated at end */
	CHECK(!utf8_valid(S("\xe2\x82x")));		/* interrupted */
	CHECK(!utf8_valid(S("a\0b")));
}

TEST(sanitize_valid_unchanged, "sanitizing valid text appends it unchanged")
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, ">");
	utf8_sanitize(S("caf\xc3\xa9 \xf0\x9f\x98\x80"), &sb);
	CHECK_STR_EQ(sb.buf, ">caf\xc3\xa9 \xf0\x9f\x98\x80");
	strbuf_release(&sb);
}

TEST(sanitize_replaces, "invalid bytes and NULs become U+FFFD, the text around them is kept and the result is valid")
{
	struct strbuf sb = STRBUF_INIT;
	utf8_sanitize(S("a\xff" "b\0c\xe2\x82"), &sb);
	CHECK(utf8_valid(sb.buf, sb.len));
	CHECK(!memcmp(sb.buf, "a" FFFD "b" FFFD "c", 1 + 3 + 1 + 3 + 1));
	CHECK(sb.len > 1 + 3 + 1 + 3 + 1); /* the truncated tail is replaced, not dropped */
	CHECK_NOT_CONTAINS(sb.buf, "\xe2\x82" "");
	strbuf_release(&sb);
}

TEST(sanitize_all_bytes, "every single byte value sanitizes to valid UTF-8")
{
	int bad = 0;
	for (int c = 0; c < 256; c++) {
		struct strbuf sb = STRBUF_INIT;
		char b = (char)c;
		utf8_sanitize(&b, 1, &sb);
		bad += !utf8_valid(sb.buf, sb.len) || sb.len == 0;
		strbuf_release(&sb);
	}
	CHECK_INT_EQ(bad, 0);
}

static char *escaped(const char *s, size_t n, size_t max)
{
	struct strbuf sb = STRBUF_INIT;
	utf8_escape(s, n, max, &sb);
	return strbuf_detach(&sb);
}

TEST(escape_controls, "ESC, BEL, CR, LF, TAB, DEL, NUL, C1 controls and invalid bytes are escaped as \\xNN; printable text, backslashes and valid UTF-8 pass")
{
	char *e = escaped(S("a\x1b]0;owned\x07" "b\rc\nd\te\x7f" "f\0g\xc2\x9bh\xffi caf\xc3\xa9\\"), 0);
	CHECK_STR_EQ(e, "a\\x1b]0;owned\\x07b\\x0dc\\x0ad\\x09e\\x7ff\\x00g\\xc2\\x9bh\\xffi caf\xc3\xa9\\");
	free(e);
}

TEST(escape_every_byte, "no byte value comes out of the escape as a control character")
{
	int bad = 0;
	for (int c = 0; c < 256; c++) {
		char b[3] = { (char)c, (char)0xc2, (char)c };
		for (size_t len = 1; len <= 3; len++) {
			char *e = escaped(b, len, 0);
			for (const unsigned char *p = (const unsigned char *)e; *p; p++)
				bad += *p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0);
			free(e);
		}
	}
	CHECK_INT_EQ(bad, 0);
}

TEST(escape_shortens, "a long name is shortened to max_chars characters, head and tail kept around an ellipsis, and a short one is kept whole")
{
	char name[10000];
	memset(name, 'x', sizeof(name));
	memcpy(name, "HEAD", 4);
	memcpy(name + sizeof(name) - 4, "TAIL", 4);
	struct strbuf sb = STRBUF_INIT;
	CHECK_INT_EQ(utf8_escape(name, sizeof(name), 80, &sb), 1);
	CHECK(!strncmp(sb.buf, "HEAD", 4));
	CHECK(sb.len >= 4 && !strcmp(sb.buf + sb.len - 4, "TAIL"));
	CHECK_CONTAINS(sb.buf, "\xe2\x80\xa6");
	CHECK_INT_EQ((long long)sb.len, 80 - 1 + 3); /* 79 ASCII characters and a 3-byte ellipsis */
	strbuf_reset(&sb);
	CHECK_INT_EQ(utf8_escape(S("short"), 80, &sb), 0);
	CHECK_STR_EQ(sb.buf, "short");
	strbuf_release(&sb);
}

TEST(escape_shortens_whole_units, "shortening never cuts an escape or a multi-byte character in two")
{
	char name[400];
	for (size_t i = 0; i < sizeof(name); i += 2) {
		name[i] = (char)0xc3; /* é */
		name[i + 1] = (char)0xa9;
	}
	name[100] = '\x1b';
	name[101] = '\x1b';
	for (size_t max = 2; max < 60; max++) {
		struct strbuf sb = STRBUF_INIT;
		utf8_escape(name, sizeof(name), max, &sb);
		const char *ell = strstr(sb.buf, "\xe2\x80\xa6");
		CHECK(ell != NULL);
		CHECK(utf8_valid(sb.buf, sb.len));
		/* a cut escape would leave "\x" or "\x1" before the ellipsis */
		CHECK(!ell || ell == sb.buf || ell[-1] != 'x');
		strbuf_release(&sb);
	}
}

CHECK_MAIN()
