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

CHECK_MAIN()
