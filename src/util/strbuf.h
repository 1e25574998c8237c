/* strbuf: a growable, always NUL-terminated byte string.
 * Owns its buffer; strbuf_release() frees it and leaves an empty strbuf.
 * Allocation failure aborts (sonde cannot report anything without memory). */
#ifndef SONDE_STRBUF_H
#define SONDE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	char *buf; /* never NULL after any call; "" when empty */
	size_t len;
	size_t alloc;
};

#define STRBUF_INIT { NULL, 0, 0 }

void strbuf_init(struct strbuf *sb);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, char c);
__attribute__((format(printf, 2, 3))) void strbuf_addf(struct strbuf *sb, const char *fmt, ...);
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Returns buf, never NULL (an empty strbuf yields ""). */
const char *strbuf_str(const struct strbuf *sb);
/* Hands the buffer to the caller (free() it) and resets sb. */
char *strbuf_detach(struct strbuf *sb);

/* xmalloc family: abort with a message on failure. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* The first n bytes of s, or up to its NUL, terminated. */
char *xstrndup(const char *s, size_t n);

#endif
