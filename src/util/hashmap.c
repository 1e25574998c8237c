/* hashmap: FNV-1a hashing with linear probing, grown at 70% load. */
#include "hashmap.h"
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

uint64_t hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

static struct hashmap_slot *find_slot(const struct hashmap *m, const void *key, size_t len,
				      uint64_t h)
{
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct hashmap_slot *s = &m->slots[i];
		if (!s->key || (s->hash == h && s->key_len == len && !memcmp(s->key, key, len)))
			return s;
	}
}

int64_t *hashmap_get(const struct hashmap *m, const void *key, size_t len)
{
	if (!m->cap)
		return NULL;
	struct hashmap_slot *s = find_slot(m, key, len, hash_bytes(key, len));
	return s->key ? &s->value : NULL;
}

static void grow(struct hashmap *m)
{
	struct hashmap old = *m;
	m->cap = old.cap ? old.cap * 2 : 64;
	m->slots = xcalloc(m->cap, sizeof(*m->slots));
	for (size_t i = 0; i < old.cap; i++) {
		struct hashmap_slot *o = &old.slots[i];
		if (o->key)
			*find_slot(m, o->key, o->key_len, o->hash) = *o;
	}
	free(old.slots);
}

int64_t *hashmap_put(struct hashmap *m, const void *key, size_t len, int64_t value)
{
	if ((m->len + 1) * 10 > m->cap * 7)
		grow(m);
	uint64_t h = hash_bytes(key, len);
	struct hashmap_slot *s = find_slot(m, key, len, h);
	if (!s->key) {
		s->key = xmalloc(len ? len : 1);
		memcpy(s->key, key, len);
		s->key_len = len;
		s->hash = h;
		m->len++;
	}
	s->value = value;
	return &s->value;
}

void hashmap_release(struct hashmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
