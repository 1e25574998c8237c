/* perf_record: bounds-checked decoding of perf_event ring records. */
#include "perf_record.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#define HDR sizeof(struct perf_event_header)

/* The layouts we decode; anything else in sample_type shifts fields we do not know. */
#define KNOWN_SAMPLE_BITS                                                                   \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_READ |           \
	 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER |                  \
	 PERF_SAMPLE_STACK_USER)
#define KNOWN_READ_FORMAT                                                                   \
	(PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID | \
	 PERF_FORMAT_GROUP | PERF_FORMAT_LOST)

int perf_record_header(const uint8_t *rec, size_t size, uint32_t *type, uint16_t *misc)
{
	struct perf_event_header h;
	if (size < HDR)
		return -EINVAL;
	memcpy(&h, rec, HDR);
	if (h.size < HDR || h.size > size)
		return -EINVAL;
	*type = h.type;
	*misc = h.misc;
	return 0;
}

/* A cursor over one record's body. */
struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t take_u64(struct cursor *c)
{
	if (c->bad || c->end - c->p < 8) {
		c->bad = 1;
		return 0;
	}
	uint64_t v = perf_u64(c->p);
	c->p += 8;
	return v;
}

static const uint8_t *take_bytes(struct cursor *c, uint64_t n)
{
	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	const uint8_t *at = c->p;
	c->p += n;
	return at;
}

int64_t perf_record_time(const uint8_t *rec, size_t size, uint64_t sample_type)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc) || !(sample_type & PERF_SAMPLE_TIME))
		return -1;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	if (type == PERF_RECORD_SAMPLE) {
		size_t off = HDR + ((sample_type & PERF_SAMPLE_IP) ? 8 : 0) +
			     ((sample_type & PERF_SAMPLE_TID) ? 8 : 0);
		if (h.size < off + 8)
			return -1;
		return (int64_t)perf_u64(rec + off);
	}
	if (h.size < HDR + 8)
		return -1;
	return (int64_t)perf_u64(rec + h.size - 8);
}

/* read_format's layout: {value, [enabled], [running], [id], [lost]}, or with
 * GROUP {nr, [enabled], [running], {value, [id], [lost]} x nr}. */
static int take_read(struct cursor *c, uint64_t read_format, struct perf_read *out)
{
	memset(out, 0, sizeof(*out));
	if (read_format & ~(uint64_t)KNOWN_READ_FORMAT)
		return -ENOTSUP;
	uint64_t nr = 1;
	if (read_format & PERF_FORMAT_GROUP) {
		nr = take_u64(c);
		if (c->bad || nr == 0)
			return -EINVAL;
		if (nr > PERF_RECORD_MAX_READ)
			return -ENOTSUP;
	} else {
		out->v[0].value = take_u64(c);
	}
	if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
		out->time_enabled = take_u64(c);
	if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
		out->time_running = take_u64(c);
	for (uint64_t i = 0; i < nr; i++) {
		if (read_format & PERF_FORMAT_GROUP)
			out->v[i].value = take_u64(c);
		if (read_format & PERF_FORMAT_ID)
			out->v[i].id = take_u64(c);
		if (read_format & PERF_FORMAT_LOST)
			take_u64(c);
	}
	out->n = (size_t)nr;
	return c->bad ? -EINVAL : 0;
}

int perf_decode_read_values(const uint8_t *buf, size_t size, uint64_t read_format,
			    struct perf_read *out)
{
	struct cursor c = { buf, buf + size, 0 };
	return take_read(&c, read_format, out);
}

int perf_decode_read(const uint8_t *rec, size_t size, uint64_t read_format,
		     struct perf_read_record *out)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc) || type != PERF_RECORD_READ)
		return -EINVAL;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	if (h.size < HDR + 8)
		return -EINVAL;
	memcpy(&out->pid, rec + HDR, 4);
	memcpy(&out->tid, rec + HDR + 4, 4);
	struct cursor c = { rec + HDR + 8, rec + h.size, 0 };
	return take_read(&c, read_format, &out->values);
}

int perf_decode_sample(const uint8_t *rec, size_t size, uint64_t sample_type,
		       uint64_t regs_mask, struct perf_sample *out)
{
	if (sample_type & PERF_SAMPLE_READ)
		return -ENOTSUP; /* its layout depends on the read_format */
	return perf_decode_sample_read(rec, size, sample_type, 0, regs_mask, out);
}

int perf_decode_sample_read(const uint8_t *rec, size_t size, uint64_t sample_type,
			    uint64_t read_format, uint64_t regs_mask, struct perf_sample *out)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc) || type != PERF_RECORD_SAMPLE)
		return -EINVAL;
	if (sample_type & ~(uint64_t)KNOWN_SAMPLE_BITS)
		return -ENOTSUP;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	struct cursor c = { rec + HDR, rec + h.size, 0 };
	memset(out, 0, sizeof(*out));
	if (sample_type & PERF_SAMPLE_IP)
		out->ip = take_u64(&c);
	if (sample_type & PERF_SAMPLE_TID) {
		uint64_t v = take_u64(&c);
		memcpy(&out->pid, &v, 4);
		memcpy(&out->tid, (const uint8_t *)&v + 4, 4);
	}
	if (sample_type & PERF_SAMPLE_TIME)
		out->time = take_u64(&c);
	if (sample_type & PERF_SAMPLE_READ) {
		int rc = take_read(&c, read_format, &out->read);
		if (rc)
			return rc;
	}
	if (sample_type & PERF_SAMPLE_CALLCHAIN) {
		out->nr = take_u64(&c);
		if (out->nr > (uint64_t)(c.end - c.p) / 8)
			return -EINVAL;
		out->chain = take_bytes(&c, out->nr * 8);
	}
	if (sample_type & PERF_SAMPLE_RAW) {
		/* u32 size, then the data; the two together are padded to 8 bytes. */
		if (c.bad || c.end - c.p < 4)
			return -EINVAL;
		uint32_t n;
		memcpy(&n, c.p, 4);
		c.p += 4;
		out->raw = take_bytes(&c, n);
		out->raw_size = n;
	}
	if (sample_type & PERF_SAMPLE_REGS_USER) {
		out->abi = take_u64(&c);
		if (out->abi) {
			for (unsigned bit = 0; bit < 64; bit++)
				if (regs_mask & (1ULL << bit))
					out->regs[out->nregs++] = take_u64(&c);
		}
	}
	if (sample_type & PERF_SAMPLE_STACK_USER) {
		uint64_t copied = take_u64(&c);
		out->stack = take_bytes(&c, copied);
		if (copied) {
			uint64_t dyn = take_u64(&c);
			out->stack_len = dyn < copied ? dyn : copied;
		}
	}
	return c.bad ? -EINVAL : 0;
}

/* A NUL-terminated string at p within the record, or NULL. */
static const char *record_string(const uint8_t *p, const uint8_t *end)
{
	if (p >= end || !memchr(p, '\0', (size_t)(end - p)))
		return NULL;
	return (const char *)p;
}

int perf_decode_mmap2(const uint8_t *rec, size_t size, struct perf_mmap2 *out)
{
	uint32_t type;
	uint16_t misc;
	/* pid tid addr len pgoff (maj min ino ino_generation | build id) prot flags filename */
	const size_t fixed = 4 + 4 + 8 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4;
	if (perf_record_header(rec, size, &type, &misc) || type != PERF_RECORD_MMAP2)
		return -EINVAL;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	if (h.size < HDR + fixed + 1)
		return -EINVAL;
	const uint8_t *p = rec + HDR;
	memcpy(&out->pid, p, 4);
	memcpy(&out->tid, p + 4, 4);
	out->addr = perf_u64(p + 8);
	out->len = perf_u64(p + 16);
	out->pgoff = perf_u64(p + 24);
	memcpy(&out->prot, p + 56, 4);
	memcpy(&out->flags, p + 60, 4);
	out->filename = record_string(p + fixed, rec + h.size);
	return out->filename ? 0 : -EINVAL;
}

int perf_decode_comm(const uint8_t *rec, size_t size, struct perf_comm *out)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc) || type != PERF_RECORD_COMM)
		return -EINVAL;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	if (h.size < HDR + 9)
		return -EINVAL;
	memcpy(&out->pid, rec + HDR, 4);
	memcpy(&out->tid, rec + HDR + 4, 4);
	out->comm = record_string(rec + HDR + 8, rec + h.size);
	out->exec = !!(misc & PERF_RECORD_MISC_COMM_EXEC);
	return out->comm ? 0 : -EINVAL;
}

int perf_decode_fork(const uint8_t *rec, size_t size, struct perf_fork *out)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc) ||
	    (type != PERF_RECORD_FORK && type != PERF_RECORD_EXIT))
		return -EINVAL;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	if (h.size < HDR + 24)
		return -EINVAL;
	const uint8_t *p = rec + HDR;
	memcpy(&out->pid, p, 4);
	memcpy(&out->ppid, p + 4, 4);
	memcpy(&out->tid, p + 8, 4);
	memcpy(&out->ptid, p + 12, 4);
	out->time = perf_u64(p + 16);
	return 0;
}

int perf_decode_switch(const uint8_t *rec, size_t size, uint64_t sample_type,
		       struct perf_switch *out)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc) || type != PERF_RECORD_SWITCH ||
	    (sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME)) !=
		(PERF_SAMPLE_TID | PERF_SAMPLE_TIME))
		return -EINVAL;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	if (h.size < HDR + 16)
		return -EINVAL;
	const uint8_t *p = rec + h.size - 16;
	memcpy(&out->pid, p, 4);
	memcpy(&out->tid, p + 4, 4);
	out->time = perf_u64(p + 8);
	out->out = !!(misc & PERF_RECORD_MISC_SWITCH_OUT);
	out->preempt = !!(misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	return 0;
}

int perf_decode_lost(const uint8_t *rec, size_t size, uint64_t *lost)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc))
		return -EINVAL;
	struct perf_event_header h;
	memcpy(&h, rec, HDR);
	if (type == PERF_RECORD_LOST && h.size >= HDR + 16) {
		*lost = perf_u64(rec + HDR + 8);
		return 0;
	}
	if (type == PERF_RECORD_LOST_SAMPLES && h.size >= HDR + 8) {
		*lost = perf_u64(rec + HDR);
		return 0;
	}
	return -EINVAL;
}
