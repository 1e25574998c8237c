/* utf8: a strict validator (no overlongs, no surrogates, max U+10FFFF). */
#include "utf8.h"
#include "strbuf.h"

#include <string.h>

/* Length of the valid sequence at s (at most n bytes), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned min;
	unsigned cp;
	if ((c & 0xe0) == 0xc0) {
		len = 2;
		min = 0x80;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		min = 0x800;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		min = 0x10000;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n) {
		size_t k = utf8_seq(p, n);
		if (!k)
			return 0;
		p += k;
		n -= k;
	}
	return 1;
}

void utf8_sanitize(const char *s, size_t n, struct strbuf *out)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;
	while (n) {
		size_t k = utf8_seq(p, n);
		if (!k) { /* the valid run so far, then the replacement */
			strbuf_add(out, run, (size_t)(p - run));
			strbuf_addstr(out, "\xef\xbf\xbd");
			k = 1;
			run = p + 1;
		}
		p += k;
		n -= k;
	}
	strbuf_add(out, run, (size_t)(p - run));
}

/* One unit of escaped text at p: a printable character (*esc = 0, its bytes)
 * or a byte to escape (*esc = 1; a C1 control escapes its two bytes). Returns
 * its length in bytes; *chars gets its printed width in characters. */
static size_t escape_unit(const unsigned char *p, size_t n, int *esc, size_t *chars)
{
	size_t k = utf8_seq(p, n);
	*esc = 0;
	*chars = 1;
	if (k == 1 && (p[0] < 0x20 || p[0] == 0x7f)) {
		*esc = 1;
		*chars = 4;
	} else if (k == 2 && p[0] == 0xc2 && p[1] < 0xa0) { /* U+0080..U+009F */
		*esc = 1;
		*chars = 8;
	} else if (!k) { /* invalid, or a NUL */
		k = 1;
		*esc = 1;
		*chars = 4;
	}
	return k;
}

/* Appends units of p[from..to): plain runs at once, escapes byte by byte. */
static void escape_range(struct strbuf *out, const unsigned char *p, size_t from, size_t to)
{
	size_t run = from, k, w;
	int esc;
	for (size_t i = from; i < to; i += k) {
		k = escape_unit(p + i, to - i, &esc, &w);
		if (!esc)
			continue;
		strbuf_add(out, p + run, i - run);
		for (size_t j = 0; j < k; j++)
			strbuf_addf(out, "\\x%02x", p[i + j]);
		run = i + k;
	}
	strbuf_add(out, p + run, to - run);
}

int utf8_escape(const char *s, size_t n, size_t max_chars, struct strbuf *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = 0, k, w;
	int esc;
	for (size_t i = 0; i < n; i += k) {
		k = escape_unit(p + i, n - i, &esc, &w);
		total += w;
	}
	if (!max_chars || total <= max_chars) {
		escape_range(out, p, 0, n);
		return 0;
	}
	/* Head and tail around the ellipsis, each cut between whole units. */
	size_t room = max_chars > 1 ? max_chars - 1 : 0, head = room - room / 3, tail = room / 3;
	size_t used = 0, i = 0;
	for (; i < n; i += k) {
		k = escape_unit(p + i, n - i, &esc, &w);
		if (used + w > head)
			break;
		used += w;
	}
	escape_range(out, p, 0, i);
	strbuf_addstr(out, "\xe2\x80\xa6");
	size_t left = total - used;
	for (; i < n && left > tail; i += k) {
		k = escape_unit(p + i, n - i, &esc, &w);
		left -= w;
	}
	escape_range(out, p, i, n);
	return 1;
}

void utf8_print(FILE *out, const char *s, size_t max_chars)
{
	struct strbuf sb = STRBUF_INIT;
	if (s)
		utf8_escape(s, strlen(s), max_chars, &sb);
	fputs(strbuf_str(&sb), out);
	strbuf_release(&sb);
}
