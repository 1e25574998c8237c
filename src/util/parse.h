/* parse: strict parsing of numbers and lists given on the command line.
 * Each returns 0 and writes *out only when the whole string is valid. */
#ifndef SONDE_PARSE_H
#define SONDE_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A duration: "2.5" or "2.5s" (seconds), "100ms", "1m". Must be > 0 and finite. */
int parse_duration_ns(const char *s, int64_t *out_ns);
/* A non-negative integer within [min, max]. */
int parse_long_range(const char *s, long min, long max, long *out);
/* 1 when the comma list ("a,b,c"; NULL is empty) holds name[0..n). */
int parse_list_has(const char *list, const char *name, size_t n);

#endif
