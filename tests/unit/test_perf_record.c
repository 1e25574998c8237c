/* Unit tests for the perf_event record decoders and the ring's staging:
 * decoding what the kernel writes, refusing truncated or malformed records
 * without reading past them (checked by ASan: every record is allocated to
 * its exact size), and unwrapping records that straddle the ring's end. */
#include "check.h"
#include "probes/perf_record.h"
#include "probes/perf_ring.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SAMPLE_TYPE                                                                                \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |             \
	 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define REGS_MASK 0x7ULL /* three registers */

struct builder {
	unsigned char buf[1024];
	size_t len;
};

static void put(struct builder *b, const void *p, size_t n)
{
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static void put64(struct builder *b, uint64_t v) { put(b, &v, 8); }

static void put32(struct builder *b, uint32_t v) { put(b, &v, 4); }

static void header(struct builder *b, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = {type, misc, 0};
	b->len = 0;
	put(b, &h, sizeof(h));
}

/* Sets the header's size and returns an exact-size heap copy (free it). */
static unsigned char *finish(struct builder *b, size_t len)
{
	uint16_t size = (uint16_t)len;
	memcpy(b->buf + 6, &size, 2);
	unsigned char *rec = malloc(len ? len : 1);
	memcpy(rec, b->buf, len);
	return rec;
}

static void build_sample(struct builder *b)
{
	header(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put64(b, 0x401000);  /* ip */
	put32(b, 42);	     /* pid */
	put32(b, 43);	     /* tid */
	put64(b, 123456789); /* time */
	put64(b, 3);	     /* nr */
	put64(b, (uint64_t)PERF_CONTEXT_USER);
	put64(b, 0x401000);
	put64(b, 0x402000);
	put64(b, 2);				  /* abi 64 */
	put64(b, 11), put64(b, 22), put64(b, 33); /* regs */
	put64(b, 16);				  /* stack size */
	put(b, "0123456789abcdef", 16);
	put64(b, 8); /* dyn size */
}

TEST(
    sample,
    "a sample decodes: ip, pid, tid, time, callchain, registers and its stack copy; a layout with unknown bits is refused")
{
	struct builder b;
	build_sample(&b);
	size_t full = b.len;
	unsigned char *rec = finish(&b, full);
	struct perf_sample s;
	int rc = perf_decode_sample(rec, full, SAMPLE_TYPE, REGS_MASK, &s);
	CHECK_NAMED("a full sample decodes", rc == 0);
	CHECK_NAMED("its ip, pid, tid and time are read",
		    s.ip == 0x401000 && s.pid == 42 && s.tid == 43 && s.time == 123456789);
	CHECK_NAMED("its callchain is read", s.nr == 3 && perf_u64(s.chain + 16) == 0x402000);
	CHECK_NAMED("one register per mask bit is read",
		    s.abi == 2 && s.nregs == 3 && s.regs[0] == 11 && s.regs[2] == 33);
	CHECK_NAMED("the stack copy is limited to its dynamic size",
		    s.stack && s.stack_len == 8 && !memcmp(s.stack, "01234567", 8));
	CHECK_NAMED("a sample's time is found",
		    perf_record_time(rec, full, SAMPLE_TYPE) == 123456789);
	CHECK_NAMED("a layout with unknown bits is refused",
		    perf_decode_sample(rec, full, SAMPLE_TYPE | PERF_SAMPLE_PERIOD, REGS_MASK,
				       &s) == -ENOTSUP);
	free(rec);
	int all_refused = 1;
	for (size_t len = 0; len < full; len++) {
		build_sample(&b);
		rec = finish(&b, len);
		if (!perf_decode_sample(rec, len, SAMPLE_TYPE, REGS_MASK, &s))
			all_refused = 0;
		free(rec);
	}
	CHECK_NAMED("every truncation of a sample is refused", all_refused);
	build_sample(&b);
	memcpy(b.buf + 32, &(uint64_t){1ULL << 60}, 8); /* nr */
	rec = finish(&b, full);
	CHECK_NAMED("a callchain longer than the record is refused",
		    perf_decode_sample(rec, full, SAMPLE_TYPE, REGS_MASK, &s) != 0);
	free(rec);
}

#define GROUP_TYPE                                                                                 \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_READ |                  \
	 PERF_SAMPLE_CALLCHAIN)
#define GROUP_FORMAT (PERF_FORMAT_GROUP | PERF_FORMAT_ID)

/* A cycles sample reading its group: cycles, instructions, cache-misses. */
static void build_group_sample(struct builder *b)
{
	header(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put64(b, 0x401000);		 /* ip */
	put32(b, 42), put32(b, 43);	 /* pid, tid */
	put64(b, 1000);			 /* time */
	put64(b, 3);			 /* nr of the group */
	put64(b, 5000000), put64(b, 11); /* cycles, its id */
	put64(b, 1500000), put64(b, 12); /* instructions */
	put64(b, 40000), put64(b, 13);	 /* cache-misses */
	put64(b, 2);			 /* callchain nr */
	put64(b, (uint64_t)PERF_CONTEXT_USER);
	put64(b, 0x401000);
}

TEST(group_read, "a sample with a group read gives each counter's value")
{
	struct builder b;
	build_group_sample(&b);
	size_t full = b.len;
	unsigned char *rec = finish(&b, full);
	struct perf_sample s;
	CHECK_NAMED("a sample that reads its group decodes",
		    perf_decode_sample_read(rec, full, GROUP_TYPE, GROUP_FORMAT, 0, &s) == 0);
	CHECK_NAMED("the group's values come with their ids, leader first",
		    s.read.n == 3 && s.read.v[0].value == 5000000 && s.read.v[0].id == 11 &&
			s.read.v[1].value == 1500000 && s.read.v[2].id == 13);
	CHECK_NAMED("the callchain after the group is still read",
		    s.nr == 2 && perf_u64(s.chain + 8) == 0x401000);
	CHECK_NAMED("the time before the group is found",
		    perf_record_time(rec, full, GROUP_TYPE) == 1000);
	CHECK_NAMED("a layout with READ needs the read format",
		    perf_decode_sample(rec, full, GROUP_TYPE, 0, &s) == -ENOTSUP);
	CHECK_NAMED("an unknown read format is refused",
		    perf_decode_sample_read(rec, full, GROUP_TYPE, GROUP_FORMAT | (1u << 8), 0,
					    &s) == -ENOTSUP);
	free(rec);
	int all_refused = 1;
	for (size_t len = 0; len < full; len++) {
		build_group_sample(&b);
		rec = finish(&b, len);
		if (!perf_decode_sample_read(rec, len, GROUP_TYPE, GROUP_FORMAT, 0, &s))
			all_refused = 0;
		free(rec);
	}
	CHECK_NAMED("every truncation of a group sample is refused", all_refused);
	build_group_sample(&b);
	memcpy(b.buf + 32, &(uint64_t){1ULL << 40}, 8); /* nr of the group */
	rec = finish(&b, full);
	CHECK_NAMED("a group bigger than sonde reads is refused",
		    perf_decode_sample_read(rec, full, GROUP_TYPE, GROUP_FORMAT, 0, &s) ==
			-ENOTSUP);
	free(rec);

	/* PERF_RECORD_READ: an inherited task's counts at its exit. */
	const uint64_t fmt =
	    PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
	header(&b, PERF_RECORD_READ, 0);
	put32(&b, 42), put32(&b, 44);
	put64(&b, 777), put64(&b, 3000), put64(&b, 1000), put64(&b, 21);
	full = b.len;
	rec = finish(&b, full);
	struct perf_read_record rr;
	CHECK_NAMED("a read record decodes",
		    perf_decode_read(rec, full, fmt, &rr) == 0 && rr.pid == 42 && rr.tid == 44 &&
			rr.values.n == 1 && rr.values.v[0].value == 777 &&
			rr.values.time_enabled == 3000 && rr.values.time_running == 1000 &&
			rr.values.v[0].id == 21);
	CHECK_NAMED("a read record is not a sample",
		    perf_decode_sample(rec, full, GROUP_TYPE, 0, &s) != 0);
	free(rec);
	all_refused = 1;
	for (size_t len = 0; len < full; len++) {
		header(&b, PERF_RECORD_READ, 0);
		put32(&b, 42), put32(&b, 44);
		put64(&b, 777), put64(&b, 3000), put64(&b, 1000), put64(&b, 21);
		rec = finish(&b, len);
		if (!perf_decode_read(rec, len, fmt, &rr))
			all_refused = 0;
		free(rec);
	}
	CHECK_NAMED("every truncation of a read record is refused", all_refused);
	uint64_t raw[4] = {9, 50, 25, 7};
	struct perf_read pr;
	CHECK_NAMED("what read(2) returns decodes with the same format",
		    perf_decode_read_values((const uint8_t *)raw, sizeof(raw), fmt, &pr) == 0 &&
			pr.v[0].value == 9 && pr.time_running == 25 && pr.v[0].id == 7);
	CHECK_NAMED("a short read(2) is refused",
		    perf_decode_read_values((const uint8_t *)raw, 24, fmt, &pr) == -EINVAL);
}

TEST(side_records, "mmap2, comm, fork and lost records decode, and an mmap2 name without its NUL is refused")
{
	struct builder b;
	header(&b, PERF_RECORD_MMAP2, 0);
	put32(&b, 7), put32(&b, 8);
	put64(&b, 0x7f0000000000), put64(&b, 0x2000), put64(&b, 0x1000);
	put32(&b, 8), put32(&b, 1), put64(&b, 99), put64(&b, 0);
	put32(&b, PROT_READ | PROT_EXEC), put32(&b, MAP_PRIVATE);
	put(&b, "/usr/lib/libx.so\0\0\0\0\0\0\0", 24);
	put32(&b, 7), put32(&b, 8), put64(&b, 555); /* sample_id: tid, time */
	size_t len = b.len;
	unsigned char *rec = finish(&b, len);
	struct perf_mmap2 m;
	CHECK_NAMED("an mmap2 record decodes", !perf_decode_mmap2(rec, len, &m));
	CHECK_NAMED("its mapping is read", m.pid == 7 && m.addr == 0x7f0000000000 &&
					       m.len == 0x2000 && m.pgoff == 0x1000 &&
					       (m.prot & PROT_EXEC));
	CHECK_NAMED("its file name is read", !strcmp(m.filename, "/usr/lib/libx.so"));
	CHECK_NAMED("a side record's time is its trailer's",
		    perf_record_time(rec, len, SAMPLE_TYPE) == 555);
	free(rec);

	header(&b, PERF_RECORD_MMAP2, 0);
	for (int i = 0; i < 8; i++)
		put64(&b, 0);
	put(&b, "no-terminator", 13);
	len = b.len;
	rec = finish(&b, len);
	CHECK_NAMED("an mmap2 file name without its NUL is refused",
		    perf_decode_mmap2(rec, len, &m));
	free(rec);

	header(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	put32(&b, 5), put32(&b, 6);
	put(&b, "worker\0\0", 8);
	len = b.len;
	rec = finish(&b, len);
	struct perf_comm c;
	CHECK_NAMED("a comm record from exec decodes", !perf_decode_comm(rec, len, &c) && c.exec &&
							   c.tid == 6 && !strcmp(c.comm, "worker"));
	free(rec);

	header(&b, PERF_RECORD_FORK, 0);
	put32(&b, 10), put32(&b, 9), put32(&b, 10), put32(&b, 9), put64(&b, 77);
	len = b.len;
	rec = finish(&b, len);
	struct perf_fork f;
	CHECK_NAMED("a fork record decodes",
		    !perf_decode_fork(rec, len, &f) && f.pid == 10 && f.ppid == 9 && f.time == 77);
	free(rec);

	header(&b, PERF_RECORD_LOST, 0);
	put64(&b, 1), put64(&b, 31);
	len = b.len;
	rec = finish(&b, len);
	uint64_t lost = 0;
	CHECK_NAMED("a lost record gives its count",
		    !perf_decode_lost(rec, len, &lost) && lost == 31);
	free(rec);
	header(&b, PERF_RECORD_LOST_SAMPLES, 0);
	put64(&b, 4);
	len = b.len;
	rec = finish(&b, len);
	CHECK_NAMED("a lost-samples record gives its count",
		    !perf_decode_lost(rec, len, &lost) && lost == 4);
	free(rec);
}

TEST(random_records, "random bytes never decode past the record that holds them")
{
	srand(12345);
	int survived = 1;
	for (int i = 0; i < 20000; i++) {
		struct builder b;
		size_t len = (size_t)(rand() % 300);
		for (size_t j = 0; j < len; j++)
			b.buf[j] = (unsigned char)rand();
		if (len >= 8) {
			uint32_t type = (uint32_t)(rand() % 20);
			memcpy(b.buf, &type, 4);
		}
		unsigned char *rec = finish(&b, len >= 8 ? len : 0);
		size_t size = len >= 8 ? len : 0;
		/* Sometimes the header claims more than there is. */
		if (size >= 8 && rand() % 4 == 0) {
			uint16_t lie = (uint16_t)(size + 8);
			memcpy(rec + 6, &lie, 2);
		}
		struct perf_sample s;
		struct perf_mmap2 m;
		struct perf_comm c;
		struct perf_fork f;
		uint64_t lost;
		perf_decode_sample(rec, size, SAMPLE_TYPE, 0x3ff, &s);
		perf_decode_mmap2(rec, size, &m);
		perf_decode_comm(rec, size, &c);
		perf_decode_fork(rec, size, &f);
		perf_decode_lost(rec, size, &lost);
		perf_record_time(rec, size, SAMPLE_TYPE);
		free(rec);
	}
	/* The real check is ASan: every record above was allocated to its exact size. */
	CHECK_NAMED("random records never make a decoder read past them", survived);
}

/* A fake ring of one data page in anonymous memory, as pr sees a mapped
 * one (perf_ring_release unmaps it). 0, or -1 when there is no memory. */
static int fake_ring(struct perf_ring *pr, struct perf_event_mmap_page **meta, unsigned char **ring,
		     size_t *data)
{
	long page = sysconf(_SC_PAGESIZE);
	*data = (size_t)page;
	void *mem = mmap(NULL, (size_t)page + *data, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		CHECK_NAMED("memory for a fake ring", 0);
		return -1;
	}
	*meta = mem;
	(*meta)->data_offset = (uint64_t)page;
	*ring = (unsigned char *)mem + page;
	*pr = (struct perf_ring)PERF_RING_INIT;
	pr->base = mem;
	pr->mmap_bytes = (size_t)page + *data;
	pr->data_bytes = *data;
	return 0;
}

TEST(ring_unwraps, "a record that straddles the ring's end is unwrapped whole")
{
	struct perf_ring pr;
	struct perf_event_mmap_page *meta;
	unsigned char *ring;
	size_t data;
	if (fake_ring(&pr, &meta, &ring, &data))
		return;
	/* Two lost records, 24 bytes each, the second straddling the end. */
	struct builder b;
	header(&b, PERF_RECORD_LOST, 0);
	put64(&b, 1), put64(&b, 5);
	unsigned char *rec = finish(&b, b.len);
	uint64_t tail = 3 * (uint64_t)data - 40; /* positions count up forever */
	for (int r = 0; r < 2; r++)
		for (size_t i = 0; i < 24; i++)
			ring[(tail + (uint64_t)r * 24 + i) & (data - 1)] = rec[i];
	free(rec);
	meta->data_tail = tail;
	meta->data_head = tail + 48;
	perf_ring_take(&pr);
	CHECK_NAMED("taking hands the space back to the kernel", meta->data_tail == tail + 48);
	size_t size, n = 0;
	uint64_t total = 0, lost;
	const unsigned char *r;
	while ((r = perf_ring_peek(&pr, &size))) {
		if (!perf_decode_lost(r, size, &lost))
			total += lost;
		n++;
		perf_ring_next(&pr);
	}
	CHECK_NAMED("a record straddling the ring's end is read whole", n == 2 && total == 10);
	perf_ring_take(&pr);
	CHECK_NAMED("nothing new: nothing staged", !perf_ring_peek(&pr, &size));
	perf_ring_release(&pr); /* unmaps mem; fd -1 is left alone */
}

/* Writes n LOST records (24 bytes, lost = first, first+1, ...) at the ring's head. */
static void ring_write_lost(struct perf_event_mmap_page *meta, unsigned char *ring, size_t data,
			    uint64_t first, int n)
{
	for (int k = 0; k < n; k++) {
		struct builder b;
		header(&b, PERF_RECORD_LOST, 0);
		put64(&b, 1), put64(&b, first + (uint64_t)k);
		unsigned char *rec = finish(&b, b.len);
		for (size_t i = 0; i < 24; i++)
			ring[(meta->data_head + i) & (data - 1)] = rec[i];
		meta->data_head += 24;
		free(rec);
	}
}

TEST(ring_keeps_unread,
     "the ring keeps what was not read yet and counts the records the kernel lost")
{
	struct perf_ring pr;
	struct perf_event_mmap_page *meta;
	unsigned char *ring;
	size_t data;
	if (fake_ring(&pr, &meta, &ring, &data))
		return;
	meta->data_head = meta->data_tail = 5 * (uint64_t)data - 30;
	ring_write_lost(meta, ring, data, 1, 3);
	perf_ring_take(&pr);
	size_t size;
	uint64_t lost, seen[8];
	int n = 0;
	const unsigned char *r = perf_ring_peek(&pr, &size);
	if (r && !perf_decode_lost(r, size, &lost))
		seen[n++] = lost;
	perf_ring_next(&pr); /* one of three read; the kernel writes two more */
	ring_write_lost(meta, ring, data, 4, 2);
	perf_ring_pump(&pr); /* copied aside, as the pump thread does */
	CHECK_NAMED("pumping hands the space back to the kernel",
		    meta->data_tail == meta->data_head);
	ring_write_lost(meta, ring, data, 6, 1);
	perf_ring_take(&pr);
	while (n < 8 && (r = perf_ring_peek(&pr, &size))) {
		if (!perf_decode_lost(r, size, &lost))
			seen[n++] = lost;
		perf_ring_next(&pr);
	}
	int in_order = n == 6;
	for (int i = 0; i < n; i++)
		in_order = in_order && seen[i] == (uint64_t)i + 1;
	CHECK_NAMED(
	    "a take keeps the unread records, then what was pumped, then the rest, in order",
	    in_order);
	/* A stage already holding PERF_RING_STAGE_RINGS rings' worth takes nothing. */
	pr.stage_len = pr.stage_pos = 0;
	ring_write_lost(meta, ring, data, 7, 1);
	pr.stage_len = PERF_RING_STAGE_RINGS * data; /* pretend it is full and unread */
	pr.stage = realloc(pr.stage, pr.stage_len + 64);
	pr.stage_alloc = pr.stage_len + 64;
	CHECK_NAMED("a full stage leaves the records in the kernel's ring",
		    perf_ring_take(&pr) == 0 && meta->data_tail + 24 == meta->data_head);
	perf_ring_release(&pr);
}

/* Writes one record of rec's bytes at the ring's head. */
static void ring_write(struct perf_event_mmap_page *meta, unsigned char *ring, size_t data,
		       const struct builder *b)
{
	struct builder sized = *b;
	struct perf_event_header h;
	memcpy(&h, sized.buf, sizeof(h));
	h.size = (uint16_t)sized.len;
	memcpy(sized.buf, &h, sizeof(h));
	for (size_t i = 0; i < sized.len; i++)
		ring[(meta->data_head + i) & (data - 1)] = sized.buf[i];
	meta->data_head += sized.len;
}

static void comm_record(struct builder *b, uint32_t pid)
{
	header(b, PERF_RECORD_COMM, 0);
	put32(b, pid), put32(b, pid);
	put64(b, 0x6b726f77); /* "work", padded to 8 */
}

/* The filter of the test: pids seen forking from a wanted one become wanted. */
struct wanted {
	uint32_t pids[8];
	int n;
};

static int wanted_has(const struct wanted *w, uint32_t pid)
{
	for (int i = 0; i < w->n; i++)
		if (w->pids[i] == pid)
			return 1;
	return 0;
}

static void see_forks(const uint8_t *rec, size_t size, void *arg)
{
	struct wanted *w = arg;
	struct perf_fork f;
	if (!perf_decode_fork(rec, size, &f) && rec[0] == PERF_RECORD_FORK &&
	    wanted_has(w, f.ppid) && w->n < 8)
		w->pids[w->n++] = f.pid;
}

static int keep_wanted(const uint8_t *rec, size_t size, void *arg)
{
	struct perf_comm c;
	if (rec[0] != PERF_RECORD_COMM || perf_decode_comm(rec, size, &c))
		return 1;
	return wanted_has(arg, c.pid);
}

TEST(ring_pump_filters,
     "the pump keeps the target's records in order and drops a stranger's, across rings")
{
	struct perf_ring pr[2];
	struct perf_event_mmap_page *meta[2];
	unsigned char *ring[2];
	size_t data[2];
	if (fake_ring(&pr[0], &meta[0], &ring[0], &data[0]))
		return;
	if (fake_ring(&pr[1], &meta[1], &ring[1], &data[1])) {
		perf_ring_release(&pr[0]);
		return;
	}
	struct wanted w = {{100}, 1};
	struct builder b;
	/* Ring 0 (one CPU): the child's comm, a stranger's, a lost record, the
	 * parent's; ring 1 (another CPU): the fork that made the child. */
	comm_record(&b, 101);
	ring_write(meta[0], ring[0], data[0], &b);
	comm_record(&b, 555);
	ring_write(meta[0], ring[0], data[0], &b);
	header(&b, PERF_RECORD_LOST, 0);
	put64(&b, 1), put64(&b, 9);
	ring_write(meta[0], ring[0], data[0], &b);
	comm_record(&b, 100);
	ring_write(meta[0], ring[0], data[0], &b);
	header(&b, PERF_RECORD_FORK, 0);
	put32(&b, 101), put32(&b, 100), put32(&b, 101), put32(&b, 100), put64(&b, 7);
	ring_write(meta[1], ring[1], data[1], &b);
	struct perf_ring_filter f = {see_forks, keep_wanted, &w};
	perf_ring_pump_all(pr, 2, &f);
	CHECK_NAMED("pumping all rings hands their space back",
		    meta[0]->data_tail == meta[0]->data_head &&
			meta[1]->data_tail == meta[1]->data_head);
	perf_ring_take(&pr[0]);
	uint32_t order[8];
	int n = 0;
	size_t size;
	const unsigned char *r;
	while (n < 8 && (r = perf_ring_peek(&pr[0], &size))) {
		struct perf_comm c;
		order[n++] = !perf_decode_comm(r, size, &c) && r[0] == PERF_RECORD_COMM ? c.pid : 0;
		perf_ring_next(&pr[0]);
	}
	CHECK_NAMED("a fork on one ring counts for the child's records on another, a stranger's "
		    "records are dropped, the rest kept in order",
		    n == 3 && order[0] == 101 && order[1] == 0 && order[2] == 100);
	perf_ring_release(&pr[0]);
	perf_ring_release(&pr[1]);
}

CHECK_MAIN()
