/* test_hashmap: byte-string keys to int64 values. */
#include "check.h"
#include "util/hashmap.h"

#include <stdint.h>
#include <stdio.h>

TEST(absent_is_null, "a lookup in an empty map, or of a key never put, finds nothing")
{
	struct hashmap m = HASHMAP_INIT;
	CHECK(hashmap_get(&m, "a", 1) == NULL);
	hashmap_put(&m, "a", 1, 1);
	CHECK(hashmap_get(&m, "b", 1) == NULL);
	CHECK(hashmap_get(&m, "a", 0) == NULL);
	CHECK(hashmap_get(&m, "ab", 2) == NULL);
	hashmap_release(&m);
}

TEST(put_then_get, "a value put under a key is found under the same bytes")
{
	struct hashmap m = HASHMAP_INIT;
	char key[] = "frame";
	hashmap_put(&m, key, 5, 42);
	key[0] = 'X'; /* the map copied the key */
	int64_t *v = hashmap_get(&m, "frame", 5);
	REQUIRE(v != NULL);
	CHECK_INT_EQ(*v, 42);
	CHECK(hashmap_get(&m, key, 5) == NULL);
	hashmap_release(&m);
}

TEST(overwrite_keeps_one, "putting an existing key overwrites its value without adding an entry")
{
	struct hashmap m = HASHMAP_INIT;
	hashmap_put(&m, "k", 1, 1);
	hashmap_put(&m, "k", 1, 2);
	CHECK_INT_EQ(m.len, 1);
	CHECK_INT_EQ(*hashmap_get(&m, "k", 1), 2);
	hashmap_release(&m);
}

TEST(binary_keys, "keys are bytes: embedded NULs and the empty key are distinct keys")
{
	struct hashmap m = HASHMAP_INIT;
	hashmap_put(&m, "a\0b", 3, 1);
	hashmap_put(&m, "a\0c", 3, 2);
	hashmap_put(&m, "a", 1, 3);
	hashmap_put(&m, "", 0, 4);
	CHECK_INT_EQ(m.len, 4);
	CHECK_INT_EQ(*hashmap_get(&m, "a\0b", 3), 1);
	CHECK_INT_EQ(*hashmap_get(&m, "a\0c", 3), 2);
	CHECK_INT_EQ(*hashmap_get(&m, "a", 1), 3);
	CHECK_INT_EQ(*hashmap_get(&m, "", 0), 4);
	int64_t pair[2] = { 0, 7 }, other[2] = { 7, 0 };
	hashmap_put(&m, pair, sizeof(pair), 5);
	CHECK(hashmap_get(&m, other, sizeof(other)) == NULL);
	hashmap_release(&m);
}

TEST(many_keys_survive_growth, "every one of 100000 keys is still found after the map grew many times")
{
	struct hashmap m = HASHMAP_INIT;
	char key[32];
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(key, sizeof(key), "key-%d", i);
		hashmap_put(&m, key, (size_t)n, i);
	}
	CHECK_INT_EQ(m.len, 100000);
	CHECK(m.len * 10 <= m.cap * 7);
	int missing = 0, wrong = 0;
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(key, sizeof(key), "key-%d", i);
		int64_t *v = hashmap_get(&m, key, (size_t)n);
		missing += !v;
		wrong += v && *v != i;
	}
	CHECK_INT_EQ(missing, 0);
	CHECK_INT_EQ(wrong, 0);
	hashmap_release(&m);
	CHECK_INT_EQ(m.len, 0);
	CHECK(hashmap_get(&m, "key-1", 5) == NULL);
}

TEST(value_pointer_writable, "the pointer put returns updates the stored value")
{
	struct hashmap m = HASHMAP_INIT;
	int64_t *v = hashmap_put(&m, "n", 1, 1);
	*v += 10;
	CHECK_INT_EQ(*hashmap_get(&m, "n", 1), 11);
	hashmap_release(&m);
}

TEST(hash_stable, "hash_bytes is deterministic and tells apart keys that differ in one byte")
{
	CHECK(hash_bytes("abc", 3) == hash_bytes("abc", 3));
	CHECK(hash_bytes("abc", 3) != hash_bytes("abd", 3));
	CHECK(hash_bytes("abc", 3) != hash_bytes("abc", 2));
}

CHECK_MAIN()
