/* utf8: make outside text (process names, output lines, symbols) safe to
 * embed in JSON and markup. Invalid sequences become U+FFFD; nothing is dropped. */
#ifndef SONDE_UTF8_H
#define SONDE_UTF8_H

#include <stddef.h>

struct strbuf;

/* 1 when s[0..n) is valid UTF-8 without NUL bytes. */
int utf8_valid(const char *s, size_t n);
/* Appends s[0..n) to out, replacing invalid sequences and NULs with U+FFFD. */
void utf8_sanitize(const char *s, size_t n, struct strbuf *out);

#endif
