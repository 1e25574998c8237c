/* perf_ring: one mmap'd perf_event ring buffer, read in two steps so that a
 * slow consumer never holds the kernel back: perf_ring_take() copies what the
 * kernel wrote into a private stage (unwrapped) and hands the space back at
 * once; perf_ring_peek()/perf_ring_next() then walk the staged records.
 *
 * Contract:
 * - A ring owns its fd (closed by perf_ring_release) and its stage.
 * - The stage grows to at most the ring's data size. A record whose header
 *   is malformed ends the stage (the rest of that take is dropped). */
#ifndef SONDE_PERF_RING_H
#define SONDE_PERF_RING_H

#include <stddef.h>
#include <stdint.h>

struct perf_ring {
	int fd; /* -1: not mapped */
	void *base;
	size_t mmap_bytes, data_bytes;
	uint8_t *stage;
	size_t stage_len, stage_pos, stage_alloc;
};

#define PERF_RING_INIT { -1, NULL, 0, 0, NULL, 0, 0, 0 }

/* Maps fd's ring with data_pages (a power of two) pages of data, halving it
 * down to min_pages while the kernel says EPERM/ENOMEM (perf_event_mlock_kb).
 * On success the ring owns fd. Returns 0 or -errno. */
int perf_ring_map(struct perf_ring *r, int fd, size_t data_pages, size_t min_pages);
void perf_ring_release(struct perf_ring *r);

/* Moves everything written so far into the stage (dropping what was left unread there). */
void perf_ring_take(struct perf_ring *r);
/* The next staged record and its size, or NULL. */
const uint8_t *perf_ring_peek(const struct perf_ring *r, size_t *size);
/* Steps past the record perf_ring_peek returned. */
void perf_ring_next(struct perf_ring *r);

#endif
