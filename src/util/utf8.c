/* utf8: a strict validator (no overlongs, no surrogates, max U+10FFFF). */
#include "utf8.h"
#include "strbuf.h"

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
	const unsigned char *p = (const unsigned char *)s;
	while (n) {
		size_t k = utf8_seq(p, n);
		if (k) {
			strbuf_add(out, p, k);
		} else {
			strbuf_addstr(out, "\xef\xbf\xbd");
			k = 1;
		}
		p += k;
		n -= k;
	}
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

static void escape_put(struct strbuf *out, const unsigned char *p, size_t k, int esc)
{
	if (!esc) {
		strbuf_add(out, p, k);
		return;
	}
	for (size_t i = 0; i < k; i++)
		strbuf_addf(out, "\\x%02x", p[i]);
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
	/* Whole when it fits; else head and tail around the ellipsis. */
	size_t head = total, tail = 0, used = 0;
	if (max_chars && total > max_chars) {
		size_t room = max_chars > 1 ? max_chars - 1 : 0;
		head = room - room / 3;
		tail = room / 3;
	}
	size_t i = 0;
	for (; i < n; i += k) {
		k = escape_unit(p + i, n - i, &esc, &w);
		if (used + w > head)
			break;
		escape_put(out, p + i, k, esc);
		used += w;
	}
	if (i == n)
		return 0;
	strbuf_addstr(out, "\xe2\x80\xa6");
	/* The tail: skip units until what is left fits in tail characters. */
	size_t left = total - used;
	for (; i < n && left > tail; i += k) {
		k = escape_unit(p + i, n - i, &esc, &w);
		left -= w;
	}
	for (; i < n; i += k) {
		k = escape_unit(p + i, n - i, &esc, &w);
		escape_put(out, p + i, k, esc);
	}
	return 1;
}
