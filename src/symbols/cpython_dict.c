/* cpython_dict: decodes the header of a CPython dict keys object (3.8 to
 * 3.13), so its entries can be read from outside. A pure function on bytes
 * copied out of the target: unit tested, and it must refuse any garbage a
 * torn read or a stale pointer hands it. */
#include "cpython_layout.h"

#include <string.h>

#define DICT_MAX_LOG2 24 /* 16 M slots: no dict sonde reads is near it */

static uint64_t u64_at(const uint8_t *b, int64_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* log2 of the byte width of one index: 1 byte up to 0xff slots, then 2, 4, 8
 * (DK_IXSIZE before 3.11, the log2_index_bytes rule after). */
static unsigned index_width_log2(unsigned log2_size)
{
	return log2_size < 8 ? 0 : log2_size < 16 ? 1 : log2_size < 32 ? 2 : 3;
}

int cpython_dict_keys_decode(const struct cpython_layout *l, const uint8_t *hdr, size_t len,
			     struct cpython_dict_keys *out)
{
	if (l->keys_size < 0 || l->keys_nentries < 0 || l->keys_indices < 0 ||
	    (size_t)l->keys_indices > len || (size_t)l->keys_size + 8 > len ||
	    (size_t)l->keys_nentries + 8 > len)
		return -1;
	unsigned log2_size;
	struct cpython_dict_keys k = { 0 };
	if (l->keys_log2_index_bytes < 0) {
		/* 3.8-3.10: dk_size, a power of two (1 for the shared empty keys) */
		uint64_t size = u64_at(hdr, l->keys_size);
		if (!size || (size & (size - 1)) || size > (1ull << DICT_MAX_LOG2))
			return -1;
		for (log2_size = 0; (1ull << log2_size) < size; log2_size++)
			;
		k.entry_size = 24; /* me_hash, me_key, me_value */
		k.key_off = 8;
		k.value_off = 16;
		k.hash_off = 0;
	} else {
		if ((size_t)l->keys_log2_index_bytes >= len || l->keys_kind < 0 ||
		    (size_t)l->keys_kind >= len)
			return -1;
		log2_size = hdr[l->keys_size];
		unsigned log2_bytes = hdr[l->keys_log2_index_bytes];
		if (log2_size > DICT_MAX_LOG2 || log2_bytes != log2_size + index_width_log2(log2_size))
			return -1;
		switch (hdr[l->keys_kind]) {
		case 0: /* DICT_KEYS_GENERAL: me_hash, me_key, me_value */
			k.entry_size = 24;
			k.key_off = 8;
			k.value_off = 16;
			k.hash_off = 0;
			break;
		case 1: /* DICT_KEYS_UNICODE */
		case 2: /* DICT_KEYS_SPLIT: me_key, me_value */
			k.entry_size = 16;
			k.key_off = 0;
			k.value_off = 8;
			k.hash_off = -1;
			break;
		default:
			return -1;
		}
	}
	uint64_t size = 1ull << log2_size;
	uint64_t nentries = u64_at(hdr, l->keys_nentries);
	if (nentries > (size << 1) / 3) /* USABLE_FRACTION */
		return -1;
	k.nentries = nentries;
	k.entries_off = (uint64_t)l->keys_indices + (size << index_width_log2(log2_size));
	*out = k;
	return 0;
}
