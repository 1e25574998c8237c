/* Unit tests for the offcpu probe's pieces: the tracepoint's prev_state
 * letters, the switch and raw-sample decoders (bounds-checked, ASan sees every
 * record at its exact size), and the tracker that turns switch-outs and
 * switch-ins into blocked intervals and per-thread on/off totals. */
#include "check.h"
#include "probes/offcpu.h"
#include "probes/perf_record.h"

#include <linux/perf_event.h>
#include <stdint.h>

static uint8_t *copy_exact(const void *p, size_t n)
{
	uint8_t *r = malloc(n);
	memcpy(r, p, n);
	return r;
}

TEST(state_letters, "prev_state decodes to S, D, R (0 and preempted) and ? when absent")
{
	uint8_t raw[48] = { 0 };
	int64_t s = 1;
	memcpy(raw + 32, &s, 8);
	CHECK(offcpu_state_from_raw(raw, sizeof(raw), 32) == 'S');
	s = 2;
	memcpy(raw + 32, &s, 8);
	CHECK(offcpu_state_from_raw(raw, sizeof(raw), 32) == 'D');
	s = 0;
	memcpy(raw + 32, &s, 8);
	CHECK(offcpu_state_from_raw(raw, sizeof(raw), 32) == 'R');
	s = 0x100 | 1;
	memcpy(raw + 32, &s, 8);
	CHECK(offcpu_state_from_raw(raw, sizeof(raw), 32) == 'R');
	CHECK(offcpu_state_from_raw(raw, 36, 32) == '?');
	CHECK(offcpu_state_from_raw(raw, sizeof(raw), -1) == '?');
	CHECK(offcpu_state_from_raw(NULL, 0, 32) == '?');
}

TEST(switch_record, "a switch record's tid, time and out/preempt flags decode; a short one is refused")
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t time;
	} r = { { PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
		  sizeof(r) },
		7, 9, 12345 };
	uint8_t *rec = copy_exact(&r, sizeof(r));
	struct perf_switch sw;
	uint64_t st = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	REQUIRE(!perf_decode_switch(rec, sizeof(r), st, &sw));
	CHECK(sw.pid == 7 && sw.tid == 9 && sw.time == 12345 && sw.out && sw.preempt);
	CHECK(perf_decode_switch(rec, sizeof(r), PERF_SAMPLE_TID, &sw) != 0);
	free(rec);
	r.h.size = sizeof(struct perf_event_header) + 8;
	rec = copy_exact(&r, r.h.size);
	CHECK(perf_decode_switch(rec, r.h.size, st, &sw) != 0);
	free(rec);
}

TEST(raw_sample, "a sample's raw tracepoint data decodes, and a raw size past the record is refused")
{
	uint8_t buf[128];
	size_t n = 0;
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 0 };
	n += sizeof(h);
	uint64_t tidv = (9ULL << 32) | 7, t = 99;
	memcpy(buf + n, &tidv, 8), n += 8;
	memcpy(buf + n, &t, 8), n += 8;
	uint32_t rs = 12; /* 4 + 12 = 16: aligned */
	memcpy(buf + n, &rs, 4), n += 4;
	memset(buf + n, 0xab, rs), n += rs;
	h.size = (uint16_t)n;
	memcpy(buf, &h, sizeof(h));
	uint8_t *rec = copy_exact(buf, n);
	struct perf_sample ps;
	uint64_t st = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	REQUIRE(!perf_decode_sample(rec, n, st, 0, &ps));
	CHECK(ps.pid == 7 && ps.tid == 9 && ps.time == 99 && ps.raw_size == 12 && ps.raw[0] == 0xab);
	free(rec);
	rs = 200;
	memcpy(buf + sizeof(h) + 16, &rs, 4);
	rec = copy_exact(buf, n);
	CHECK(perf_decode_sample(rec, n, st, 0, &ps) != 0);
	free(rec);
}

TEST(tracker_intervals, "a switch-out then a switch-in is one interval with the out stack and state; on-CPU time adds up")
{
	struct offcpu_tracker *t = offcpu_tracker_new();
	struct offcpu_interval iv;
	CHECK(!offcpu_tracker_switch(t, 1, 2, 100, 0, 0, &iv)); /* first switch-in */
	offcpu_tracker_out(t, 1, 2, 300, 'S', 5);
	CHECK(!offcpu_tracker_switch(t, 1, 2, 301, 1, 0, &iv)); /* its switch-out record */
	REQUIRE(offcpu_tracker_switch(t, 1, 2, 1300, 0, 0, &iv));
	CHECK(iv.pid == 1 && iv.tid == 2 && iv.t_ns == 300 && iv.dur_ns == 1000 && iv.state == 'S' &&
	      iv.stack == 5);
	/* A preemption seen only through the switch record. */
	CHECK(!offcpu_tracker_switch(t, 1, 2, 1500, 1, 1, &iv));
	REQUIRE(offcpu_tracker_switch(t, 1, 2, 1600, 0, 0, &iv));
	CHECK(iv.state == 'R' && iv.dur_ns == 100 && iv.stack == UINT32_MAX);
	/* An exiting thread's last switch-out has no interval. */
	offcpu_tracker_out(t, 1, 3, 50, 'Z', 1);
	offcpu_tracker_exit(t, 1, 3, 60);
	/* A thread blocked at the end is closed at the end. */
	offcpu_tracker_out(t, 1, 2, 2000, 'D', 6);
	REQUIRE(offcpu_tracker_finish(t, 2500, &iv));
	CHECK(iv.tid == 2 && iv.dur_ns == 500 && iv.state == 'D');
	CHECK(!offcpu_tracker_finish(t, 2500, &iv));
	offcpu_tracker_free(t);
}

CHECK_MAIN()
