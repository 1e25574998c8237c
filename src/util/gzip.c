/* gzip: one gzip member from memory onto a stream (gzip.h). */
#include "gzip.h"
#include "strbuf.h"

#include <zlib.h>

#define GZIP_CHUNK 65536
#define GZIP_WINDOW_BITS (15 + 16) /* 32 KiB window, gzip header and trailer */

int gzip_write(FILE *out, const void *data, size_t len, struct strbuf *err)
{
	z_stream z = {0};
	unsigned char buf[GZIP_CHUNK];
	int ret = -1, zrc;
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW_BITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		strbuf_addstr(err, "cannot start gzip compression");
		return -1;
	}
	const unsigned char *p = data;
	do {
		/* avail_in is an unsigned int: feed a large buffer in pieces. */
		if (!z.avail_in && len) {
			size_t part = len > (1u << 30) ? (1u << 30) : len;
			z.next_in = (unsigned char *)p;
			z.avail_in = (unsigned int)part;
			p += part;
			len -= part;
		}
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zrc = deflate(&z, len || z.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (zrc == Z_STREAM_ERROR) {
			strbuf_addstr(err, "gzip compression failed");
			goto out;
		}
		size_t have = sizeof(buf) - z.avail_out;
		if (have && fwrite(buf, 1, have, out) != have) {
			strbuf_addstr(err, "write failed");
			goto out;
		}
	} while (zrc != Z_STREAM_END);
	ret = 0;
out:
	deflateEnd(&z);
	return ret;
}
