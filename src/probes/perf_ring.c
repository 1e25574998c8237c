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
			r->fd = fd;
			r->base = p;
			r->mmap_bytes = bytes;
			r->data_bytes = pages * (size_t)page;
			r->stage_len = r->stage_pos = 0;
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
	*r = (struct perf_ring)PERF_RING_INIT;
}

void perf_ring_take(struct perf_ring *r)
{
	r->stage_len = r->stage_pos = 0;
	if (!r->base)
		return;
	struct perf_event_mmap_page *meta = r->base;
	const uint8_t *data = (const uint8_t *)r->base + meta->data_offset;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	size_t len = (size_t)(head - tail), at = (size_t)(tail & (r->data_bytes - 1));
	if (len > r->data_bytes)
		len = r->data_bytes; /* not with a sane kernel */
	if (len) {
		if (r->stage_alloc < len) {
			r->stage = xrealloc(r->stage, len);
			r->stage_alloc = len;
		}
		size_t first = r->data_bytes - at < len ? r->data_bytes - at : len;
		memcpy(r->stage, data + at, first);
		memcpy(r->stage + first, data, len - first);
		r->stage_len = len;
	}
	__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
}

const uint8_t *perf_ring_peek(const struct perf_ring *r, size_t *size)
{
	if (!r->stage || r->stage_pos >= r->stage_len)
		return NULL;
	const uint8_t *rec = r->stage + r->stage_pos;
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, r->stage_len - r->stage_pos, &type, &misc))
		return NULL;
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
