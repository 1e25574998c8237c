/* cpython_lines: bytecode offset to source line, for the three line-table
 * formats CPython 3.8 to 3.13 use, a str's characters to UTF-8, plus the
 * layout table lookup. Pure
 * functions on bytes copied out of the target, so they are unit tested and
 * must survive any garbage a torn read hands them. */
#include "cpython_layout.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A line out of int range (a garbage first line from a torn read) is none. */
static int line_or_none(int64_t line)
{
	return line >= 0 && line <= INT_MAX ? (int)line : -1;
}

const struct cpython_layout *cpython_layout_find(int major, int minor)
{
	for (const struct cpython_layout *l = cpython_layouts; l->major; l++)
		if (l->major == major && l->minor == minor)
			return l;
	return NULL;
}

int cpython_line_lnotab(const uint8_t *table, size_t len, int firstlineno, int64_t addr)
{
	/* Pairs (bytecode increment, signed line increment); the line applies
	 * from the address reached so far until the next increment passes addr. */
	int64_t line = firstlineno, at = 0;
	for (size_t i = 0; i + 1 < len; i += 2) {
		at += table[i];
		if (at > addr)
			break;
		line += (int8_t)table[i + 1];
	}
	return line_or_none(line);
}

static int line_310(const uint8_t *table, size_t len, int firstlineno, int64_t addr, int previous)
{
	/* Pairs (range length in bytes, signed line delta); -128: no line. */
	if (addr < 0)
		return firstlineno;
	int64_t computed = firstlineno, line = -1;
	int64_t end = 0;
	size_t i = 0;
	while (end <= addr) {
		if (i + 1 >= len)
			return -1;
		end += table[i];
		int8_t d = (int8_t)table[i + 1];
		if (d == -128) {
			line = previous ? computed : -1;
		} else {
			computed += d;
			line = computed;
		}
		i += 2;
	}
	return line_or_none(line);
}

static int read_varint(const uint8_t *t, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (*i >= len || shift > 56)
			return -1;
		uint8_t b = t[(*i)++];
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*out = v;
	return 0;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *i, int64_t *out)
{
	uint64_t v;
	if (read_varint(t, len, i, &v))
		return -1;
	*out = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
	return 0;
}

static int line_311(const uint8_t *table, size_t len, int firstlineno, int64_t addr, int previous)
{
	/* Entries: header 1cccclll (code, length-1 in code units), then data by code:
	 * 15 no location; 14 long form (svarint dline, varint dendline, varint col+1,
	 * varint endcol+1); 13 no columns (svarint dline); 10-12 one line (dline =
	 * code-10, two column bytes); 0-9 short form (same line, one column byte). */
	if (addr < 0)
		return firstlineno;
	int64_t line = firstlineno, at = 0;
	size_t i = 0;
	while (i < len) {
		if (line < INT_MIN || line > INT_MAX)
			return -1; /* garbage: stop before the sum can overflow */
		uint8_t h = table[i++];
		if (!(h & 0x80))
			return -1; /* lost sync: garbage */
		int code = (h >> 3) & 15;
		int64_t n = (h & 7) + 1, d = 0;
		uint64_t skip;
		switch (code) {
		case 15:
			break;
		case 14:
			if (read_svarint(table, len, &i, &d) || read_varint(table, len, &i, &skip) ||
			    read_varint(table, len, &i, &skip) || read_varint(table, len, &i, &skip))
				return -1;
			break;
		case 13:
			if (read_svarint(table, len, &i, &d))
				return -1;
			break;
		case 10:
		case 11:
		case 12:
			d = code - 10;
			i += 2;
			break;
		default:
			i += 1;
			break;
		}
		line += d;
		if (addr >= at && addr < at + n)
			return code == 15 && !previous ? -1 : line_or_none(line);
		at += n;
	}
	return -1;
}

int cpython_line_310(const uint8_t *table, size_t len, int firstlineno, int64_t addr)
{
	return line_310(table, len, firstlineno, addr, 0);
}

int cpython_line_311(const uint8_t *table, size_t len, int firstlineno, int64_t addr)
{
	return line_311(table, len, firstlineno, addr, 0);
}

/* Entries without a line leave the running line as it was: that is the line
 * of the last entry before them that has one (or the first line). */
int cpython_line_310_or_previous(const uint8_t *table, size_t len, int firstlineno, int64_t addr)
{
	return line_310(table, len, firstlineno, addr, 1);
}

int cpython_line_311_or_previous(const uint8_t *table, size_t len, int firstlineno, int64_t addr)
{
	return line_311(table, len, firstlineno, addr, 1);
}

int cpython_code_line(int minor, const uint8_t *table, size_t len, int firstlineno, int64_t addr)
{
	int line;
	if (minor <= 9)
		line = cpython_line_lnotab(table, len, firstlineno, addr);
	else if (minor == 10)
		line = cpython_line_310_or_previous(table, len, firstlineno, addr);
	else
		line = cpython_line_311_or_previous(table, len, firstlineno, addr);
	return line > 0 ? line : 0;
}

int64_t cpython_code_addr(int minor, int64_t units_off, uint64_t code, uint64_t pos)
{
	if (minor <= 10) {
		int64_t lasti = (int64_t)pos;
		if (lasti < INT32_MIN || lasti > INT32_MAX)
			return -1; /* not an f_lasti: garbage from the target */
		return minor == 10 ? lasti * 2 : lasti;
	}
	uint64_t start = code + (uint64_t)units_off;
	return pos >= start ? (int64_t)((pos - start) / 2) : -1;
}

int cpython_chars_utf8(const uint8_t *raw, size_t nbytes, unsigned kind, char *out, size_t cap)
{
	if ((kind != 1 && kind != 2 && kind != 4) || !cap)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i + kind <= nbytes; i += kind) {
		uint32_t c = raw[i];
		if (kind == 2) {
			uint16_t u;
			memcpy(&u, raw + i, sizeof(u));
			c = u;
		} else if (kind == 4) {
			memcpy(&c, raw + i, sizeof(c));
		}
		char tmp[4];
		size_t n;
		if (c < 0x80) {
			tmp[0] = (char)c;
			n = 1;
		} else if (c < 0x800) {
			tmp[0] = (char)(0xC0 | (c >> 6));
			tmp[1] = (char)(0x80 | (c & 63));
			n = 2;
		} else if (c < 0x10000) {
			tmp[0] = (char)(0xE0 | (c >> 12));
			tmp[1] = (char)(0x80 | ((c >> 6) & 63));
			tmp[2] = (char)(0x80 | (c & 63));
			n = 3;
		} else if (c < 0x110000) {
			tmp[0] = (char)(0xF0 | (c >> 18));
			tmp[1] = (char)(0x80 | ((c >> 12) & 63));
			tmp[2] = (char)(0x80 | ((c >> 6) & 63));
			tmp[3] = (char)(0x80 | (c & 63));
			n = 4;
		} else {
			return -1;
		}
		if (o + n + 1 > cap)
			break;
		memcpy(out + o, tmp, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}
