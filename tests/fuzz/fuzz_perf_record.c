/* fuzz_perf_record: the perf ring record decoders must hold any bytes: sizes
 * that lie, callchains and raw data longer than the record, truncated
 * trailers; each decoder reads only within the record (ASan checks it).
 * sources: src/probes/perf_record.c */
#include "probes/perf_record.h"

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (n < 1)
		return 0;
	/* The first byte picks the sample layout; the rest is the record, copied
	 * to memory of its exact size. */
	static const uint64_t layouts[] = {
		PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
		PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			PERF_SAMPLE_RAW,
		PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
		PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
	};
	uint64_t st = layouts[data[0] % 4];
	size_t len = n - 1;
	uint8_t *rec = malloc(len ? len : 1);
	memcpy(rec, data + 1, len);
	struct perf_sample ps;
	struct perf_mmap2 m;
	struct perf_comm c;
	struct perf_fork f;
	struct perf_switch sw;
	uint64_t lost;
	struct perf_read_record rr;
	struct perf_read pr;
	/* The read formats the probes ask for: a group with ids, and one counter with times. */
	static const uint64_t formats[] = {
		PERF_FORMAT_GROUP | PERF_FORMAT_ID,
		PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID,
	};
	uint64_t rf = formats[(data[0] >> 2) % 2];
	if (!perf_decode_sample(rec, len, st, 0x1ff, &ps)) {
		if (ps.chain && ps.nr && perf_u64(ps.chain + (ps.nr - 1) * 8) == 0x42)
			rec[0] ^= 1; /* touch the last callchain entry */
		if (ps.raw_size && ps.raw[ps.raw_size - 1] == 0x42)
			rec[0] ^= 1;
	}
	if (!perf_decode_mmap2(rec, len, &m) && strlen(m.filename) > len)
		abort();
	if (!perf_decode_comm(rec, len, &c) && strlen(c.comm) > len)
		abort();
	if (!perf_decode_sample_read(rec, len, st | PERF_SAMPLE_READ, rf, 0x1ff, &ps) &&
	    ps.read.n > PERF_RECORD_MAX_READ)
		abort();
	if (!perf_decode_read(rec, len, rf, &rr) && rr.values.n > PERF_RECORD_MAX_READ)
		abort();
	perf_decode_read_values(rec, len, rf, &pr);
	perf_decode_fork(rec, len, &f);
	perf_decode_switch(rec, len, st, &sw);
	perf_decode_lost(rec, len, &lost);
	perf_record_time(rec, len, st);
	free(rec);
	return 0;
}
