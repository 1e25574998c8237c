/* utf8: make outside text (process names, output lines, symbols) safe to
 * embed in JSON and markup (invalid sequences become U+FFFD; nothing is
 * dropped) and to print on a terminal or in a text file (escaped). */
#ifndef SONDE_UTF8_H
#define SONDE_UTF8_H

#include <stddef.h>
#include <stdio.h>

struct strbuf;

/* 1 when s[0..n) is valid UTF-8 without NUL bytes. */
int utf8_valid(const char *s, size_t n);
/* Appends s[0..n) to out, replacing invalid sequences and NULs with U+FFFD. */
void utf8_sanitize(const char *s, size_t n, struct strbuf *out);

/* Appends s[0..n) for a terminal or a line-based text file: control
 * characters (C0 including TAB, CR and LF, DEL, C1 such as U+009B) and bytes
 * that are not UTF-8 become \xNN (one escape per byte), so no escape
 * sequence, line break or carriage return from outside text passes.
 * max_chars > 0 shortens a longer result to max_chars characters (an escape
 * counts as its 4): its head, U+2026 and its tail, never inside an escape or
 * a character; 0 keeps it whole. Returns 1 when shortened, else 0. */
int utf8_escape(const char *s, size_t n, size_t max_chars, struct strbuf *out);
/* utf8_escape() of the C string s (NULL prints nothing) written to out. */
void utf8_print(FILE *out, const char *s, size_t max_chars);

#endif
