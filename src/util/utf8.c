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
