/* perf_ring: the mmap'd ring of a perf_event fd, staged for reading. */
#include "perf_ring.h"
#include "perf_record.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int perf_ring_map(struct perf_ring *r, int fd, size_t data_pages, size_t min_pages)
{
	long page = sysconf(_SC_PAGESIZE);
	for (size_t pages = data_pages; pages >= min_pages && pages; pages /= 2) {
		size_t bytes = (pages + 1) * (size_t)page;
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			pthread_mutex_lock(&r->lock); /* a pump may be looking at base */
			r->fd = fd;
			r->mmap_bytes = bytes;
			r->data_bytes = pages * (size_t)page;
			r->stage_len = r->stage_pos = 0;
			r->base = p;
			pthread_mutex_unlock(&r->lock);
			return 0;
		}
		if (errno != EPERM && errno != ENOMEM)
			return -errno;
	}
	return -ENOMEM;
}

void perf_ring_release(struct perf_ring *r)
{
	if (r->base)
		munmap(r->base, r->mmap_bytes);
	if (r->fd >= 0)
		close(r->fd);
	free(r->stage);
	free(r->pumped);
	pthread_mutex_destroy(&r->lock);
	*r = (struct perf_ring)PERF_RING_INIT;
}

/* Appends n bytes to *buf (growing it by doubling). */
static void buf_append(uint8_t **buf, size_t *len, size_t *alloc, const uint8_t *from, size_t n,
		       size_t first_alloc)
{
	if (*alloc < *len + n) {
		size_t want = *alloc ? *alloc : first_alloc;
		while (want < *len + n)
			want *= 2;
		*buf = xrealloc(*buf, want);
		*alloc = want;
	}
	memcpy(*buf + *len, from, n);
	*len += n;
}

/* Copies the kernel's new records to the end of *buf when they fit in room
 * bytes, and hands their space back. Holds r->lock. Returns the bytes copied. */
static size_t copy_out(struct perf_ring *r, uint8_t **buf, size_t *len, size_t *alloc,
		       size_t room)
{
	if (!r->base)
		return 0;
	struct perf_event_mmap_page *meta = r->base;
	const uint8_t *data = (const uint8_t *)r->base + meta->data_offset;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	size_t n = (size_t)(head - tail), at = (size_t)(tail & (r->data_bytes - 1));
	if (n > r->data_bytes)
		n = r->data_bytes; /* not with a sane kernel */
	if (!n || n > room)
		return 0;
	size_t first = r->data_bytes - at < n ? r->data_bytes - at : n;
	buf_append(buf, len, alloc, data + at, first, r->data_bytes);
	buf_append(buf, len, alloc, data, n - first, r->data_bytes);
	__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
	return n;
}

static size_t held_bytes(const struct perf_ring *r)
{
	return r->stage_len + r->pumped_len;
}

static size_t cap_bytes(const struct perf_ring *r)
{
	return PERF_RING_STAGE_RINGS * r->data_bytes;
}

/* from_kernel: also what the kernel wrote since the last pump. */
static size_t take(struct perf_ring *r, int from_kernel)
{
	pthread_mutex_lock(&r->lock); /* stage_len is read by perf_ring_pump */
	/* Keep what is not read yet, moved to the front once it is the smaller
	 * part: a take in the middle of a long walk costs no big move. */
	if (r->stage_pos && r->stage_pos >= r->stage_len - r->stage_pos) {
		size_t left = r->stage_pos < r->stage_len ? r->stage_len - r->stage_pos : 0;
		memmove(r->stage, r->stage + r->stage_pos, left);
		r->stage_len = left;
		r->stage_pos = 0;
	}
	if (r->pumped_len) {
		buf_append(&r->stage, &r->stage_len, &r->stage_alloc, r->pumped, r->pumped_len,
			   r->data_bytes);
		r->pumped_len = 0;
	}
	size_t cap = cap_bytes(r), held = held_bytes(r);
	size_t n = from_kernel ? copy_out(r, &r->stage, &r->stage_len, &r->stage_alloc,
					  cap > held ? cap - held : 0)
			       : 0;
	pthread_mutex_unlock(&r->lock);
	return n;
}

size_t perf_ring_take(struct perf_ring *r)
{
	return take(r, 1);
}

void perf_ring_take_filtered(struct perf_ring *rings, size_t n, const struct perf_ring_filter *f)
{
	perf_ring_pump_all(rings, n, f);
	for (size_t i = 0; i < n; i++)
		take(&rings[i], 0);
}

void perf_ring_pump(struct perf_ring *r)
{
	perf_ring_pump_all(r, 1, NULL);
}

/* The size of the whole record at buf[at, len), or 0 (malformed, or cut). */
static size_t record_at(const uint8_t *buf, size_t at, size_t len, uint32_t *type)
{
	uint16_t misc;
	if (perf_record_header(buf + at, len - at, type, &misc))
		return 0;
	struct perf_event_header h;
	memcpy(&h, buf + at, sizeof(h));
	return h.size <= len - at ? h.size : 0;
}

/* Drops what keep refuses from r->pumped[pump_mark, pumped_len). */
static void pumped_filter(struct perf_ring *r, const struct perf_ring_filter *f)
{
	size_t at = r->pump_mark, to = at;
	uint32_t type;
	while (at < r->pumped_len) {
		size_t size = record_at(r->pumped, at, r->pumped_len, &type);
		if (!size)
			break;
		if (f->keep(r->pumped + at, size, f->arg)) {
			if (to != at)
				memmove(r->pumped + to, r->pumped + at, size);
			to += size;
		}
		at += size;
	}
	if (at < r->pumped_len && to != at) /* the unread rest, after a malformed header */
		memmove(r->pumped + to, r->pumped + at, r->pumped_len - at);
	r->pumped_len = to + (r->pumped_len - at);
}

void perf_ring_pump_all(struct perf_ring *rings, size_t n, const struct perf_ring_filter *f)
{
	for (size_t i = 0; i < n; i++) {
		struct perf_ring *r = &rings[i];
		pthread_mutex_lock(&r->lock);
		r->pump_mark = r->pumped_len;
		size_t cap = cap_bytes(r), held = r->pumped_len + r->stage_len;
		copy_out(r, &r->pumped, &r->pumped_len, &r->pumped_alloc,
			 cap > held ? cap - held : 0);
	}
	for (size_t i = 0; f && f->see && i < n; i++) {
		struct perf_ring *r = &rings[i];
		uint32_t type;
		size_t size;
		for (size_t at = r->pump_mark;
		     at < r->pumped_len && (size = record_at(r->pumped, at, r->pumped_len, &type));
		     at += size)
			f->see(r->pumped + at, size, f->arg);
	}
	for (size_t i = 0; f && f->keep && i < n; i++)
		pumped_filter(&rings[i], f);
	for (size_t i = n; i-- > 0;)
		pthread_mutex_unlock(&rings[i].lock);
}

const uint8_t *perf_ring_peek(struct perf_ring *r, size_t *size)
{
	if (!r->stage || r->stage_pos >= r->stage_len)
		return NULL;
	const uint8_t *rec = r->stage + r->stage_pos;
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, r->stage_len - r->stage_pos, &type, &misc)) {
		r->stage_pos = r->stage_len; /* nothing after it can be trusted */
		return NULL;
	}
	struct perf_event_header h;
	memcpy(&h, rec, sizeof(h));
	*size = h.size;
	return rec;
}

void perf_ring_next(struct perf_ring *r)
{
	size_t size;
	if (perf_ring_peek(r, &size))
		r->stage_pos += size;
}
