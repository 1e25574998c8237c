/* md_html: report.md's Markdown as HTML, for report.html.
 *
 * The subset report.md is written in (markdown*.c, mdcell.c): headings,
 * paragraphs, "- " lists nested by two spaces, "> " quotes, pipe tables (a
 * header row, a |---| row, cells with \| escapes), fenced code, and inline
 * code spans (any number of backticks), **strong**, *emphasis*, backslash
 * escapes and entity references. Every other character is text: < > & " '
 * come out as entities, so nothing from the target (a function name, a log
 * line) can be markup. Cells that read as numbers get class "n" (right-aligned). Each
 * heading gets an id from its text (h-1, h-2, ... in order). */
#ifndef SONDE_MD_HTML_H
#define SONDE_MD_HTML_H

#include <stddef.h>
#include <stdio.h>

/* Called before each heading is written, with its level (1 to 6) and its
 * Markdown text; NULL once at the end. */
typedef void md_heading_fn(void *arg, int level, const char *text);

void md_html_write(FILE *out, const char *md, size_t len, md_heading_fn *at_heading, void *arg);

/* Text as HTML: & < > " ' as entities (for text and attribute values). */
void html_escape(FILE *out, const char *s, size_t n);

#endif
