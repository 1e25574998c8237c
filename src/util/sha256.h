/* sha256: the SHA-256 digest of a byte string (FIPS 180-4), for recording
 * what a file held before and after sonde changed it. No state outside the
 * caller's struct; no allocation. */
#ifndef SONDE_SHA256_H
#define SONDE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_HEX_LEN 64 /* hex digits, without the NUL */

struct sha256 {
	uint32_t state[8];
	uint64_t total_bytes;
	unsigned char block[64];
	size_t block_len;
};

void sha256_init(struct sha256 *h);
void sha256_update(struct sha256 *h, const void *data, size_t len);
/* Writes the digest; h must be initialised again before reuse. */
void sha256_final(struct sha256 *h, unsigned char out[SHA256_BYTES]);

/* The digest of data[0..len) as 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);

#endif
