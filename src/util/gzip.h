/* gzip: bytes in memory written to a stream as one gzip member (RFC 1952),
 * through zlib (pprof's profile.pb.gz is gzip'd protobuf). */
#ifndef SONDE_GZIP_H
#define SONDE_GZIP_H

#include <stddef.h>
#include <stdio.h>

struct strbuf;

/* Compresses data[0..len) onto out. 0, or -1 with a message in err (part
 * of the member may have been written: the caller discards the file). */
int gzip_write(FILE *out, const void *data, size_t len, struct strbuf *err);

#endif
