/* hashmap: byte-string keys to int64 values, open addressing.
 * Keys are copied; the map owns them. No removal (sonde's maps only grow
 * during a run and are freed whole). */
#ifndef SONDE_HASHMAP_H
#define SONDE_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
	uint64_t hash;
	char *key; /* NULL: empty */
	size_t key_len;
	int64_t value;
};

struct hashmap {
	struct hashmap_slot *slots;
	size_t cap, len; /* cap is a power of two */
};

#define HASHMAP_INIT { NULL, 0, 0 }

uint64_t hash_bytes(const void *data, size_t len);
/* Returns a pointer to the value, or NULL when absent. */
int64_t *hashmap_get(const struct hashmap *m, const void *key, size_t key_len);
/* Inserts or overwrites. Returns a pointer to the stored value. */
int64_t *hashmap_put(struct hashmap *m, const void *key, size_t key_len, int64_t value);
void hashmap_release(struct hashmap *m);

#endif
