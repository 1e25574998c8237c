/* test_strbuf: the growable string every module builds text with. */
#include "check.h"
#include "util/strbuf.h"

TEST(empty_is_empty_string, "a fresh strbuf, static or initialised, reads as the empty string")
{
	struct strbuf a = STRBUF_INIT, b;
	strbuf_init(&b);
	CHECK_STR_EQ(strbuf_str(&a), "");
	CHECK_STR_EQ(strbuf_str(&b), "");
	CHECK(b.buf != NULL);
	CHECK_INT_EQ(a.len, 0);
	strbuf_release(&a);
	strbuf_release(&b);
	CHECK_STR_EQ(strbuf_str(&a), "");
}

TEST(add_keeps_nul, "appended bytes are kept in order and the buffer stays NUL-terminated")
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "ab");
	strbuf_addch(&sb, 'c');
	strbuf_add(&sb, "d\0e", 3);
	CHECK_INT_EQ(sb.len, 6);
	CHECK(!memcmp(sb.buf, "abcd\0e", 6));
	CHECK_INT_EQ(sb.buf[sb.len], 0);
	strbuf_release(&sb);
}

TEST(grows_past_many_doublings, "a strbuf grows across many reallocations without losing content")
{
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < 100000; i++)
		strbuf_addch(&sb, (char)('a' + i % 26));
	CHECK_INT_EQ(sb.len, 100000);
	CHECK(sb.alloc > sb.len);
	int ok = 1;
	for (int i = 0; i < 100000; i++)
		ok &= sb.buf[i] == (char)('a' + i % 26);
	CHECK(ok);
	CHECK_INT_EQ(strlen(sb.buf), 100000);
	strbuf_release(&sb);
}

TEST(addf_formats, "addf appends formatted text, including text longer than the first allocation")
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "pid %d: %s", 42, "ok");
	CHECK_STR_EQ(sb.buf, "pid 42: ok");
	char big[500];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	strbuf_addf(&sb, "[%s]", big);
	CHECK_INT_EQ(sb.len, 10 + 2 + 499);
	CHECK(sb.buf[10] == '[' && sb.buf[sb.len - 1] == ']');
	strbuf_addf(&sb, "%s", "");
	CHECK_INT_EQ(sb.len, 10 + 2 + 499);
	strbuf_release(&sb);
}

TEST(addf_on_fresh, "addf with an empty result leaves a fresh strbuf readable")
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s", "");
	CHECK_STR_EQ(strbuf_str(&sb), "");
	strbuf_release(&sb);
}

TEST(reset_keeps_memory, "reset empties the string and later adds start from the beginning")
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "hello world");
	strbuf_reset(&sb);
	CHECK_STR_EQ(sb.buf, "");
	CHECK_INT_EQ(sb.len, 0);
	strbuf_addstr(&sb, "x");
	CHECK_STR_EQ(sb.buf, "x");
	strbuf_release(&sb);

	struct strbuf fresh = STRBUF_INIT;
	strbuf_reset(&fresh);
	CHECK_STR_EQ(strbuf_str(&fresh), "");
	strbuf_release(&fresh);
}

TEST(detach_hands_over, "detach hands over a malloc'd string and leaves the strbuf empty and usable")
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "mine");
	char *p = strbuf_detach(&sb);
	CHECK_STR_EQ(p, "mine");
	CHECK_STR_EQ(strbuf_str(&sb), "");
	CHECK_INT_EQ(sb.len, 0);
	strbuf_addstr(&sb, "again");
	CHECK_STR_EQ(sb.buf, "again");
	CHECK_STR_EQ(p, "mine");
	free(p);
	strbuf_release(&sb);

	struct strbuf empty = STRBUF_INIT;
	char *e = strbuf_detach(&empty);
	REQUIRE(e != NULL);
	CHECK_STR_EQ(e, "");
	free(e); /* must be freeable even though nothing was ever added */
}

TEST(grow_reserves, "grow reserves room so that adds within it do not move the buffer")
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_grow(&sb, 1000);
	CHECK(sb.alloc >= 1001);
	char *before = sb.buf;
	for (int i = 0; i < 1000; i++)
		strbuf_addch(&sb, 'z');
	CHECK(sb.buf == before);
	strbuf_release(&sb);
}

TEST(xstrdup_copies, "xstrdup returns an independent copy")
{
	char src[] = "abc";
	char *d = xstrdup(src);
	src[0] = 'X';
	CHECK_STR_EQ(d, "abc");
	free(d);
}

CHECK_MAIN()
