/* Unit tests of the dict keys header decoder (symbols/cpython_dict.c) on
 * headers built as each CPython lays them out, and on garbage a torn read or
 * a stale pointer could hand it. */
#include "check.h"
#include "symbols/cpython_layout.h"

#include <stdint.h>
#include <string.h>

static void put_u64(uint8_t *b, int64_t off, uint64_t v)
{
	memcpy(b + off, &v, sizeof(v));
}

/* A 3.8-3.10 keys header: dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries. */
static void keys_310(uint8_t *b, const struct cpython_layout *l, uint64_t size, uint64_t nentries)
{
	memset(b, 0, 64);
	put_u64(b, 0, 1);
	put_u64(b, l->keys_size, size);
	put_u64(b, l->keys_nentries, nentries);
}

/* A 3.11+ keys header: log2 size, log2 index bytes, kind, nentries. */
static void keys_311(uint8_t *b, const struct cpython_layout *l, unsigned log2_size,
		     unsigned log2_bytes, unsigned kind, uint64_t nentries)
{
	memset(b, 0, 64);
	put_u64(b, 0, 1);
	b[l->keys_size] = (uint8_t)log2_size;
	b[l->keys_log2_index_bytes] = (uint8_t)log2_bytes;
	b[l->keys_kind] = (uint8_t)kind;
	put_u64(b, l->keys_nentries, nentries);
}

TEST(keys_310_small, "a 3.8-3.10 keys object of 8 slots has 1-byte indices and 24-byte entries after them")
{
	for (int minor = 8; minor <= 10; minor++) {
		const struct cpython_layout *l = cpython_layout_find(3, minor);
		REQUIRE(l);
		uint8_t b[64];
		struct cpython_dict_keys k;
		keys_310(b, l, 8, 3);
		REQUIRE(cpython_dict_keys_decode(l, b, sizeof(b), &k) == 0);
		CHECK(k.entries_off == (uint64_t)l->keys_indices + 8);
		CHECK(k.nentries == 3);
		CHECK(k.entry_size == 24 && k.key_off == 8 && k.value_off == 16 && k.hash_off == 0);
	}
}

TEST(keys_310_wide, "a 3.8-3.10 keys object of 256 slots has 2-byte indices, of 65536 slots 4-byte ones")
{
	const struct cpython_layout *l = cpython_layout_find(3, 9);
	REQUIRE(l);
	uint8_t b[64];
	struct cpython_dict_keys k;
	keys_310(b, l, 256, 170);
	REQUIRE(cpython_dict_keys_decode(l, b, sizeof(b), &k) == 0);
	CHECK(k.entries_off == (uint64_t)l->keys_indices + 512);
	keys_310(b, l, 65536, 1);
	REQUIRE(cpython_dict_keys_decode(l, b, sizeof(b), &k) == 0);
	CHECK(k.entries_off == (uint64_t)l->keys_indices + 65536 * 4);
}

TEST(keys_310_empty, "the shared empty keys object (dk_size 1, no entries) decodes to no entries")
{
	const struct cpython_layout *l = cpython_layout_find(3, 8);
	REQUIRE(l);
	uint8_t b[64];
	struct cpython_dict_keys k;
	keys_310(b, l, 1, 0);
	REQUIRE(cpython_dict_keys_decode(l, b, sizeof(b), &k) == 0);
	CHECK(k.nentries == 0);
}

TEST(keys_311_kinds, "3.11+ str-keyed and split keys have 16-byte entries without a hash, general ones 24 with")
{
	for (int minor = 11; minor <= 13; minor++) {
		const struct cpython_layout *l = cpython_layout_find(3, minor);
		REQUIRE(l);
		uint8_t b[64];
		struct cpython_dict_keys k;
		keys_311(b, l, 3, 3, 1, 5);
		REQUIRE(cpython_dict_keys_decode(l, b, sizeof(b), &k) == 0);
		CHECK(k.entries_off == (uint64_t)l->keys_indices + 8);
		CHECK(k.entry_size == 16 && k.key_off == 0 && k.value_off == 8 && k.hash_off == -1);
		keys_311(b, l, 3, 3, 2, 2);
		REQUIRE(cpython_dict_keys_decode(l, b, sizeof(b), &k) == 0);
		CHECK(k.entry_size == 16);
		keys_311(b, l, 10, 11, 0, 600);
		REQUIRE(cpython_dict_keys_decode(l, b, sizeof(b), &k) == 0);
		CHECK(k.entries_off == (uint64_t)l->keys_indices + 2048);
		CHECK(k.entry_size == 24 && k.key_off == 8 && k.value_off == 16 && k.hash_off == 0);
		CHECK(k.nentries == 600);
	}
}

TEST(keys_garbage, "a keys header that no CPython writes is refused")
{
	const struct cpython_layout *old = cpython_layout_find(3, 10);
	const struct cpython_layout *l = cpython_layout_find(3, 12);
	REQUIRE(old && l);
	uint8_t b[64];
	struct cpython_dict_keys k;
	keys_310(b, old, 12, 3); /* not a power of two */
	CHECK(cpython_dict_keys_decode(old, b, sizeof(b), &k) == -1);
	keys_310(b, old, 0, 0);
	CHECK(cpython_dict_keys_decode(old, b, sizeof(b), &k) == -1);
	keys_310(b, old, 8, 6); /* more entries than 2/3 of the slots */
	CHECK(cpython_dict_keys_decode(old, b, sizeof(b), &k) == -1);
	keys_310(b, old, 1ull << 40, 3);
	CHECK(cpython_dict_keys_decode(old, b, sizeof(b), &k) == -1);
	keys_311(b, l, 3, 4, 1, 2); /* index bytes do not match the size */
	CHECK(cpython_dict_keys_decode(l, b, sizeof(b), &k) == -1);
	keys_311(b, l, 3, 3, 7, 2); /* no such kind */
	CHECK(cpython_dict_keys_decode(l, b, sizeof(b), &k) == -1);
	keys_311(b, l, 40, 43, 0, 2); /* absurd size */
	CHECK(cpython_dict_keys_decode(l, b, sizeof(b), &k) == -1);
	keys_311(b, l, 3, 3, 1, UINT64_MAX);
	CHECK(cpython_dict_keys_decode(l, b, sizeof(b), &k) == -1);
	keys_311(b, l, 3, 3, 1, 2); /* a header cut short */
	CHECK(cpython_dict_keys_decode(l, b, 16, &k) == -1);
}

CHECK_MAIN()
