/* perf_layer: records of every set handed over in time order to the handlers
 * of their set and kind, lost records counted, a ring of a probe's own read
 * through handlers, and the stacks and users registered with the layer. The
 * rings are fake: anonymous memory laid out as the kernel maps a ring. */
#include "check.h"
#include "probes/perf_layer.h"
#include "probes/perf_ring.h"

#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Makes r a fake ring of one data page (perf_ring_release unmaps it). */
static int ring_fake(struct perf_ring *r)
{
	long page = sysconf(_SC_PAGESIZE);
	void *mem = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -1;
	((struct perf_event_mmap_page *)mem)->data_offset = (uint64_t)page;
	r->base = mem;
	r->mmap_bytes = 2 * (size_t)page;
	r->data_bytes = (size_t)page;
	return 0;
}

/* Writes a record of type with payload (n u64s) at the ring's head. */
static void ring_put(struct perf_ring *r, uint32_t type, const uint64_t *payload, size_t n)
{
	struct perf_event_mmap_page *meta = r->base;
	uint8_t *data = (uint8_t *)r->base + meta->data_offset;
	struct perf_event_header h = { type, 0, (uint16_t)(sizeof(h) + 8 * n) };
	uint8_t rec[256];
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + sizeof(h), payload, 8 * n);
	for (size_t i = 0; i < h.size; i++)
		data[(meta->data_head + i) & (r->data_bytes - 1)] = rec[i];
	meta->data_head += h.size;
}

static void sample_put(struct perf_ring *r, uint64_t t_ns)
{
	ring_put(r, PERF_RECORD_SAMPLE, &t_ns, 1);
}

/* What the handlers saw, in order: set * 1000 + handler * 100 + t. */
struct seen {
	int v[16];
	size_t n;
};

static struct seen *seen_of;

static void note(int set, int handler, const uint8_t *rec)
{
	uint64_t t;
	memcpy(&t, rec + sizeof(struct perf_event_header), 8);
	if (seen_of->n < 16)
		seen_of->v[seen_of->n++] = set * 1000 + handler * 100 + (int)t;
}

static void first_on_samples(void *arg, const uint8_t *rec, size_t size)
{
	(void)arg, (void)size;
	note(0, 1, rec);
}

static void second_on_samples(void *arg, const uint8_t *rec, size_t size)
{
	(void)arg, (void)size;
	note(0, 2, rec);
}

static void on_switches(void *arg, const uint8_t *rec, size_t size)
{
	(void)arg, (void)size;
	note(1, 1, rec);
}

/* A layer with both sets registered, sampling TIME only, their first ring faked. */
static struct perf_layer *layer_fake(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_TIME;
	struct perf_layer *l = perf_layer_new();
	if (perf_layer_set_add(l, PERF_LAYER_SAMPLES, &a, NULL) ||
	    perf_layer_set_add(l, PERF_LAYER_SWITCHES, &a, NULL) ||
	    ring_fake(&perf_layer_rings(l, PERF_LAYER_SAMPLES)[0]) ||
	    ring_fake(&perf_layer_rings(l, PERF_LAYER_SWITCHES)[0])) {
		perf_layer_free(l);
		return NULL;
	}
	return l;
}

TEST(time_order, "the records of every set are handed over in time order, each to the handlers "
		 "of its set and kind in the order they were registered")
{
	struct seen seen = { { 0 }, 0 };
	seen_of = &seen;
	struct perf_layer *l = layer_fake();
	REQUIRE(l);
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	CHECK(perf_layer_set_add(l, PERF_LAYER_SAMPLES, &a, NULL) == -1);
	CHECK(perf_layer_set_attr(l, PERF_LAYER_SAMPLES)->sample_type == PERF_SAMPLE_TIME);
	perf_layer_on(l, PERF_LAYER_SAMPLES, PERF_RECORD_SAMPLE, first_on_samples, NULL);
	perf_layer_on(l, PERF_LAYER_SAMPLES, PERF_RECORD_SAMPLE, second_on_samples, NULL);
	perf_layer_on(l, PERF_LAYER_SWITCHES, PERF_RECORD_SAMPLE, on_switches, NULL);
	perf_layer_on(l, PERF_LAYER_SWITCHES, PERF_RECORD_SWITCH, first_on_samples, NULL);
	sample_put(&perf_layer_rings(l, PERF_LAYER_SAMPLES)[0], 10);
	sample_put(&perf_layer_rings(l, PERF_LAYER_SAMPLES)[0], 30);
	sample_put(&perf_layer_rings(l, PERF_LAYER_SWITCHES)[0], 20);
	perf_layer_drain(l, -1);
	CHECK(seen.n == 5);
	CHECK(seen.v[0] == 110 && seen.v[1] == 210 && seen.v[2] == 1120 && seen.v[3] == 130 &&
	      seen.v[4] == 230);
	seen.n = 0;
	perf_layer_drain(l, -1);
	CHECK(seen.n == 0); /* nothing new */
	perf_layer_reset(l);
	CHECK(!perf_layer_set_attr(l, PERF_LAYER_SAMPLES) && !perf_layer_stacks(l));
	perf_layer_free(l);
}

TEST(lost, "the records a set's rings lost add up in the count given")
{
	struct perf_layer *l = layer_fake();
	REQUIRE(l);
	uint64_t lost = 0, lost_other = 0;
	perf_layer_on_lost(l, PERF_LAYER_SWITCHES, &lost);
	perf_layer_on_lost(l, PERF_LAYER_SAMPLES, &lost_other);
	uint64_t id_lost[2] = { 1, 7 }, lost_samples = 5;
	ring_put(&perf_layer_rings(l, PERF_LAYER_SWITCHES)[0], PERF_RECORD_LOST, id_lost, 2);
	ring_put(&perf_layer_rings(l, PERF_LAYER_SWITCHES)[0], PERF_RECORD_LOST_SAMPLES,
		 &lost_samples, 1);
	perf_layer_drain(l, -1);
	CHECK(lost == 12 && lost_other == 0);
	perf_layer_free(l);
}

static void count_records(void *arg, const uint8_t *rec, size_t size)
{
	(void)rec, (void)size;
	(*(int *)arg)++;
}

TEST(own_ring, "a ring read on its own hands each record to the handlers of its kind only")
{
	struct perf_ring r = PERF_RING_INIT;
	REQUIRE(!ring_fake(&r));
	uint64_t payload[2] = { 1, 2 };
	ring_put(&r, PERF_RECORD_READ, payload, 2);
	ring_put(&r, PERF_RECORD_SAMPLE, payload, 1);
	ring_put(&r, PERF_RECORD_READ, payload, 2);
	static const struct perf_layer_handler reads[] = { { PERF_RECORD_READ, count_records } };
	int n = 0;
	perf_layer_ring_read(&r, reads, 1, &n);
	CHECK(n == 2);
	perf_ring_release(&r);
}

struct calls {
	char log[16];
	size_t n;
	int64_t node;
};

static uint32_t stack_of(void *owner, const struct perf_sample *ps)
{
	(void)owner, (void)ps;
	return 7;
}

static void weighted(void *owner, const struct perf_weighted *w)
{
	struct perf_layer *l = owner; /* the owner writes it at once */
	perf_layer_written(l, w, 42);
}

static void records_end(void *arg, int64_t end_ns)
{
	struct calls *c = arg;
	c->log[c->n++] = 'e';
	CHECK(end_ns == 99);
}

static void written(void *arg, const struct perf_weighted *w, int64_t node)
{
	struct calls *c = arg;
	c->log[c->n++] = 'w';
	c->node = w->stack == 7 && w->weight == 5 ? node : -1;
}

static void done(void *arg, struct recorder *rec)
{
	struct calls *c = arg;
	(void)rec;
	c->log[c->n++] = 'd';
}

TEST(users, "a user reaches the stacks through the layer and hears the end, each weighted "
	    "sample written with its node, and the last flush")
{
	struct perf_layer *l = perf_layer_new();
	struct calls c = { "", 0, 0 };
	struct perf_stacks s = { stack_of, weighted, NULL, l };
	CHECK(!perf_layer_stacks_set(l, &s));
	CHECK(perf_layer_stacks_set(l, &s) == -1);
	struct perf_user u = { records_end, written, done, &c };
	CHECK(!perf_layer_user_add(l, &u));
	const struct perf_stacks *got = perf_layer_stacks(l);
	REQUIRE(got);
	struct perf_weighted w = { 1, 2, 3, 5, 'S', got->stack_of(got->owner, NULL) };
	perf_layer_records_end(l, 99);
	got->weighted(got->owner, &w);
	perf_layer_done(l, NULL);
	CHECK(c.n == 3 && !memcmp(c.log, "ewd", 3) && c.node == 42);
	perf_layer_free(l);
}

CHECK_MAIN()
