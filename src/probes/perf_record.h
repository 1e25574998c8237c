/* perf_record: decoding the records a perf_event ring buffer carries.
 *
 * Contract:
 * - Every decoder reads only within [rec, rec + size): a truncated or
 *   malformed record returns -EINVAL (or -ENOTSUP for a layout it does not
 *   know) and leaves *out unspecified. Records come from the kernel, but the
 *   ring is shared memory and a bug must not turn into a wild read.
 * - Pointers in the results point into rec: valid as long as rec is.
 * - Samples: only the layouts the cpu probe asks for are decoded: IP, TID,
 *   TIME, READ, CALLCHAIN, RAW, REGS_USER, STACK_USER (any subset, in the
 *   kernel's order). READ needs the event's read_format (perf_decode_sample_read).
 * - Other records: the fields before the sample_id trailer. */
#ifndef SONDE_PERF_RECORD_H
#define SONDE_PERF_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define PERF_RECORD_MAX_REGS 64
#define PERF_RECORD_MAX_READ 8 /* counters in one group read; a bigger group is -ENOTSUP */

/* Counter values laid out by read_format (PERF_FORMAT_*): a read(2) of the
 * event, a PERF_RECORD_READ, or a sample's PERF_SAMPLE_READ. Fields the
 * format leaves out are 0. */
struct perf_read {
	uint64_t time_enabled, time_running;
	size_t n; /* 1, or the group's members, leader first */
	struct {
		uint64_t value, id;
	} v[PERF_RECORD_MAX_READ];
};

struct perf_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	struct perf_read read; /* PERF_SAMPLE_READ: the counters at the sample */
	uint64_t nr;	      /* callchain entries */
	const uint8_t *chain; /* nr little-endian u64, possibly unaligned: use perf_u64() */
	const uint8_t *raw;   /* PERF_SAMPLE_RAW: a tracepoint's fields, raw_size bytes */
	uint32_t raw_size;
	uint64_t abi;	      /* 0: no user registers (a kernel thread) */
	uint64_t regs[PERF_RECORD_MAX_REGS];
	size_t nregs;	      /* one per bit of the mask, lowest bit first */
	const uint8_t *stack; /* the copied user stack, starting at the stack pointer */
	uint64_t stack_len;   /* valid bytes (dyn_size), <= the copied size */
};

struct perf_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t prot, flags;
	const char *filename; /* NUL-terminated within the record */
};

struct perf_comm {
	uint32_t pid, tid;
	const char *comm; /* NUL-terminated within the record */
	int exec;	  /* PERF_RECORD_MISC_COMM_EXEC: the name changed by exec */
};

/* PERF_RECORD_SWITCH (context_switch=1 on a per-task event). */
struct perf_switch {
	uint32_t pid, tid;
	uint64_t time;
	int out;     /* PERF_RECORD_MISC_SWITCH_OUT: the task leaves the CPU */
	int preempt; /* PERF_RECORD_MISC_SWITCH_OUT_PREEMPT: it was still runnable */
};

struct perf_fork {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* PERF_RECORD_READ (inherit_stat: a child task's counts at its exit). */
struct perf_read_record {
	uint32_t pid, tid;
	struct perf_read values;
};

static inline uint64_t perf_u64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

/* The record's type and size from its header; -EINVAL when size cannot hold it. */
int perf_record_header(const uint8_t *rec, size_t size, uint32_t *type, uint16_t *misc);

/* The record's time: a sample's TIME field, else the sample_id trailer's last
 * u64 (sample_id_all with TID|TIME and nothing after TIME). -1 when absent. */
int64_t perf_record_time(const uint8_t *rec, size_t size, uint64_t sample_type);

int perf_decode_sample(const uint8_t *rec, size_t size, uint64_t sample_type,
		       uint64_t regs_mask, struct perf_sample *out);
/* The same, for layouts with PERF_SAMPLE_READ: read_format is the event's. */
int perf_decode_sample_read(const uint8_t *rec, size_t size, uint64_t sample_type,
			    uint64_t read_format, uint64_t regs_mask, struct perf_sample *out);
/* read_format's values in buf (what read(2) returned, size bytes). */
int perf_decode_read_values(const uint8_t *buf, size_t size, uint64_t read_format,
			    struct perf_read *out);
int perf_decode_mmap2(const uint8_t *rec, size_t size, struct perf_mmap2 *out);
int perf_decode_comm(const uint8_t *rec, size_t size, struct perf_comm *out);
int perf_decode_read(const uint8_t *rec, size_t size, uint64_t read_format,
		     struct perf_read_record *out);
/* PERF_RECORD_FORK and PERF_RECORD_EXIT share one layout. */
int perf_decode_fork(const uint8_t *rec, size_t size, struct perf_fork *out);
/* The sample_id trailer must hold TID and TIME and nothing after them. */
int perf_decode_switch(const uint8_t *rec, size_t size, uint64_t sample_type,
		       struct perf_switch *out);
/* PERF_RECORD_LOST (id, lost) and PERF_RECORD_LOST_SAMPLES (lost): the count. */
int perf_decode_lost(const uint8_t *rec, size_t size, uint64_t *lost);

#endif
