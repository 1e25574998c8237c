/* perf_ring: one mmap'd perf_event ring buffer, read in two steps so that a
 * slow consumer never holds the kernel back: perf_ring_take() copies what the
 * kernel wrote into a private stage (unwrapped) and hands the space back at
 * once; perf_ring_peek()/perf_ring_next() then walk the staged records.
 * perf_ring_pump(), from another thread, copies the kernel's records aside
 * while the consumer is busy (symbolizing, loading DWARF), and the next take
 * moves them to the stage.
 *
 * Contract:
 * - A ring owns its fd (closed by perf_ring_release) and its buffers.
 * - A take keeps the records not yet read and appends the new ones after
 *   them, so a consumer may take again in the middle of a long walk. Stage
 *   and pumped records together hold at most PERF_RING_STAGE_RINGS times the
 *   ring's data size: what would overflow that stays in the kernel's ring
 *   (which counts what it then loses).
 * - perf_ring_pump() is the only call that may run on another thread, at the
 *   same time as any call but perf_ring_map() and perf_ring_release().
 * - A record whose header is malformed ends the stage (the rest of what was
 *   staged is dropped). Pointers from perf_ring_peek() are valid until the
 *   next perf_ring_take() or perf_ring_next(). */
#ifndef SONDE_PERF_RING_H
#define SONDE_PERF_RING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PERF_RING_STAGE_RINGS 8

struct perf_ring {
	int fd; /* -1: not mapped */
	void *base;
	size_t mmap_bytes, data_bytes;
	uint8_t *stage;
	size_t stage_len, stage_pos, stage_alloc;
	uint8_t *pumped; /* copied by perf_ring_pump, not yet taken */
	size_t pumped_len, pumped_alloc;
	size_t pump_mark; /* perf_ring_pump_all: where this pump's copy began */
	pthread_mutex_t lock; /* the kernel's tail, pumped, stage_len */
};

#define PERF_RING_INIT { -1, NULL, 0, 0, NULL, 0, 0, 0, NULL, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER }

/* Maps fd's ring with data_pages (a power of two) pages of data, halving it
 * down to min_pages while the kernel says EPERM/ENOMEM (perf_event_mlock_kb).
 * On success the ring owns fd. Returns 0 or -errno. */
int perf_ring_map(struct perf_ring *r, int fd, size_t data_pages, size_t min_pages);
void perf_ring_release(struct perf_ring *r);

/* Moves what was pumped, then everything written since, to the end of the
 * stage, as far as it fits. Returns the bytes taken from the kernel's ring. */
size_t perf_ring_take(struct perf_ring *r);
/* Copies what the kernel wrote aside (for the next take) and hands the space
 * back, as far as it fits; does nothing on a ring not mapped yet. */
void perf_ring_pump(struct perf_ring *r);
/* What perf_ring_pump_all() does with the records it copies aside: see()
 * looks at every new record of every ring first (a fork written on one CPU
 * must count for the child's records on another), then keep() says which
 * stay (1) and which are dropped (0). Both run on the pump's thread with
 * every ring of the call locked; either may be NULL. */
struct perf_ring_filter {
	void (*see)(const uint8_t *rec, size_t size, void *arg);
	int (*keep)(const uint8_t *rec, size_t size, void *arg);
	void *arg;
};
/* perf_ring_pump() of n rings, all locked together, then f over the records
 * it copied (f NULL: none dropped). A malformed header ends the walk: what
 * follows it stays, for the take to judge. */
void perf_ring_pump_all(struct perf_ring *rings, size_t n, const struct perf_ring_filter *f);
/* perf_ring_pump_all() with f, then perf_ring_take() of what it copied and
 * nothing more, so every record taken has passed f (a record the kernel
 * writes after the pump waits for the next one). "see" still runs on the
 * caller's thread here: it must be safe on any thread. */
void perf_ring_take_filtered(struct perf_ring *rings, size_t n, const struct perf_ring_filter *f);
/* The next staged record and its size, or NULL (a malformed header drops the
 * rest of the stage). */
const uint8_t *perf_ring_peek(struct perf_ring *r, size_t *size);
/* Steps past the record perf_ring_peek returned. */
void perf_ring_next(struct perf_ring *r);

#endif
