/* buffers: each thread's record buffer. Allocations and frees are packed into
 * ALLOC_REC_EVENTS records, a call stack (or a Python stack, after the
 * descriptions of its code objects the thread has not sent) is sent once per
 * thread and named by its id afterwards, and the buffer goes to the channel
 * whole: when full, when its oldest record is old enough, at thread exit and
 * at process exit (alloc_wire.h). Buffers come from mmap, one per thread. */
#include "agent.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* ---- packing events ---- */

static unsigned char *put_uleb(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* A difference of two unsigned values, read as signed, zigzag-coded. */
static uint64_t zigzag(uint64_t d)
{
	return (d << 1) ^ (0 - (d >> 63));
}

/* Closes the open EVENTS record: zero tags pad it to 8 bytes. */
static void pack_close(unsigned char *data, size_t *len, struct packer *pk)
{
	if (pk->batch == PACK_NONE)
		return;
	size_t n = *len - pk->batch, padded = (n + 7) & ~(size_t)7;
	uint16_t len16 = (uint16_t)padded;
	memset(data + *len, 0, padded - n);
	memcpy(data + pk->batch + offsetof(struct alloc_rec_head, len), &len16, sizeof(len16));
	*len = pk->batch + padded;
	pk->batch = PACK_NONE;
}

/* Bytes the next event may take, with a new record's head and the padding. */
#define PACK_ROOM (sizeof(struct alloc_rec_head) + ALLOC_EV_MAX_BYTES + 7)

/* Appends one event at data + *len (PACK_ROOM bytes free), in the open EVENTS
 * record or a new one. */
static void pack_event(unsigned char *data, size_t *len, struct packer *pk, uint32_t tid,
		       int tag, uint64_t t, uint64_t ptr, uint64_t size, uint32_t stack,
		       uint32_t pystack)
{
	if (pk->batch == PACK_NONE) {
		struct alloc_rec_head h = { ALLOC_REC_EVENTS, 0, tid, t };
		pk->batch = *len;
		memcpy(data + *len, &h, sizeof(h));
		*len += sizeof(h);
		pk->last_t = t;
		pk->last_ptr = 0;
	}
	unsigned char *p = data + *len;
	*p++ = (unsigned char)tag;
	p = put_uleb(p, zigzag(t - pk->last_t));
	p = put_uleb(p, zigzag(ptr - pk->last_ptr));
	if (tag != ALLOC_EV_FREE) {
		p = put_uleb(p, size);
		p = put_uleb(p, stack);
	}
	if (tag == ALLOC_EV_ALLOC_PY)
		p = put_uleb(p, pystack);
	pk->last_t = t;
	pk->last_ptr = ptr;
	*len = (size_t)(p - data);
}

/* Writes a STACK record at data (room for it); returns its length. */
static size_t pack_stack(unsigned char *data, uint32_t tid, uint64_t t, uint32_t id,
			 const uint64_t *ips, int n)
{
	struct alloc_rec_stack r = { { ALLOC_REC_STACK, (uint16_t)(sizeof(r) + 8 * (size_t)n), tid, t },
				     id, (uint32_t)n };
	memcpy(data, &r, sizeof(r));
	memcpy(data + sizeof(r), ips, 8 * (size_t)n);
	return r.h.len;
}

/* ---- the thread's stack cache ---- */

/* The addresses are mixed independently (no chain of multiplies), each
 * rotated by its position so that order counts. */
static uint64_t stack_hash(const uint64_t *ips, int n)
{
	uint64_t h = (uint64_t)n;
	for (int i = 0; i < n; i++) {
		uint64_t x = ips[i] * 0x9E3779B97F4A7C15ULL;
		h ^= (x << (i & 63)) | (x >> ((64 - i) & 63));
	}
	h *= 0xff51afd7ed558ccdULL;
	return (h ^ (h >> 32)) | 1; /* 0 marks an empty slot */
}

static int ips_equal(const uint64_t *a, const uint64_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

static void scache_reset(struct scache *c)
{
	memset(c->slots, 0, sizeof(c->slots));
	c->nstacks = 0;
	c->arena_used = 0;
}

/* The id the thread sent these words under; 0: not sent (or forgotten). */
static uint32_t scache_get(const struct scache *c, uint64_t hash, const uint64_t *words, int n)
{
	uint32_t i = (uint32_t)hash & (SCACHE_SLOTS - 1);
	for (int k = 0; k < SCACHE_PROBES; k++, i = (i + 1) & (SCACHE_SLOTS - 1)) {
		const struct scache_slot *s = &c->slots[i];
		if (!s->hash)
			return 0;
		if (s->hash == hash && (s->at & 0xff) == (uint32_t)n &&
		    ips_equal(c->arena + (s->at >> 8), words, n))
			return s->id;
	}
	return 0;
}

/* Remembers a stack about to be sent (n words, at most 255); returns its new id. */
static uint32_t scache_put(struct scache *c, uint64_t hash, const uint64_t *words, int n)
{
	if (c->nstacks >= SCACHE_SLOTS / 4 * 3 || c->arena_used + (uint32_t)n > SCACHE_WORDS)
		scache_reset(c);
	uint32_t i = (uint32_t)hash & (SCACHE_SLOTS - 1);
	int k;
	for (k = 0; k < SCACHE_PROBES && c->slots[i].hash; k++, i = (i + 1) & (SCACHE_SLOTS - 1))
		;
	if (k == SCACHE_PROBES) {
		scache_reset(c);
		i = (uint32_t)hash & (SCACHE_SLOTS - 1);
	}
	if (!++c->next_id)
		c->next_id = 1; /* 0 is the one-off id */
	memcpy(c->arena + c->arena_used, words, 8 * (size_t)n);
	c->slots[i] = (struct scache_slot){ hash, c->next_id, c->arena_used << 8 | (uint32_t)n };
	c->arena_used += (uint32_t)n;
	c->nstacks++;
	return c->next_id;
}

/* ---- the thread's described code objects ---- */

static uint64_t code_hash(const uint64_t *frame)
{
	uint64_t h = frame[0] * 0x9E3779B97F4A7C15ULL ^ frame[2];
	h *= 0xff51afd7ed558ccdULL;
	return (h ^ (h >> 32)) | 1; /* 0 marks an empty slot */
}

/* 1 when the thread described frame's code before; else remembers it (it is
 * about to be) and returns 0. */
static int ccache_seen(struct ccache *c, const uint64_t *frame)
{
	uint64_t h = code_hash(frame);
	if (c->n >= CCACHE_SLOTS / 4 * 3)
		memset(c, 0, sizeof(*c));
	uint32_t i = (uint32_t)h & (CCACHE_SLOTS - 1);
	for (int k = 0; k < CCACHE_PROBES; k++, i = (i + 1) & (CCACHE_SLOTS - 1)) {
		if (c->slots[i] == h)
			return 1;
		if (!c->slots[i]) {
			c->slots[i] = h;
			c->n++;
			return 0;
		}
	}
	return 0; /* a crowded run of slots: described again, not remembered */
}

/* Records of the thread may have been lost: it sends every stack again. */
void agent_tbuf_forget(struct tbuf *b)
{
	scache_reset(&b->native);
	scache_reset(&b->python);
	memset(&b->codes, 0, sizeof(b->codes));
	b->last_id = 0;
}

/* ---- per-thread buffers ---- */

static AGENT_TLS int thread_done;

void agent_tbuf_flush(struct tbuf *b)
{
	pack_close(b->data, &b->len, &b->pk);
	/* Lost bytes may hold stack records: the thread sends its stacks again. */
	if (b->len && agent_write_all(b->data, b->len))
		agent_tbuf_forget(b);
	b->len = 0;
}

void agent_tbuf_lock(struct tbuf *b)
{
	while (atomic_exchange_explicit(&b->busy, 1, memory_order_acquire))
		;
}

void agent_tbuf_unlock(struct tbuf *b)
{
	atomic_store_explicit(&b->busy, 0, memory_order_release);
}

/* Flushes when the oldest record is older than the flush age (the counter
 * of another CPU may read a little behind: only a positive age counts). */
static void tbuf_aged(struct tbuf *b, uint64_t t)
{
	if ((int64_t)(t - b->first_t) > (int64_t)agent_flush_age)
		agent_tbuf_flush(b);
}

void agent_thread_gone(void *arg)
{
	struct tbuf *b = arg;
	thread_done = 1;
	pthread_mutex_lock(&agent_list_lock);
	for (struct tbuf **pp = &agent_buffers; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	pthread_mutex_unlock(&agent_list_lock);
	agent_tbuf_lock(b);
	agent_tbuf_flush(b);
	munmap(b, sizeof(*b));
	agent_my_buf = NULL;
}

static struct tbuf *thread_buf(void)
{
	if (agent_my_buf || thread_done)
		return agent_my_buf;
	/* The stack cache's pages are touched only as they fill. */
	void *m = mmap(NULL, sizeof(struct tbuf), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	struct tbuf *b = m;
	b->tid = agent_gettid_cached();
	b->pk.batch = PACK_NONE;
	pthread_mutex_lock(&agent_list_lock);
	b->next = agent_buffers;
	agent_buffers = b;
	pthread_mutex_unlock(&agent_list_lock);
	agent_my_buf = b;
	pthread_setspecific(agent_buf_key, b);
	return b;
}

/* Appends one record (ALLOC_REC_* other than EVENTS); rec->h.len must be set.
 * Writes through when the thread has no buffer (after its exit handlers) or
 * the process is exiting. */
void agent_emit(void *rec)
{
	struct alloc_rec_head *h = rec;
	if (agent_out_fd < 0)
		return;
	struct tbuf *b = agent_exiting ? NULL : thread_buf();
	if (!b) {
		agent_write_all(rec, h->len);
		return;
	}
	agent_tbuf_lock(b);
	pack_close(b->data, &b->len, &b->pk);
	if (b->len + h->len > sizeof(b->data))
		agent_tbuf_flush(b);
	if (!b->len)
		b->first_t = h->t;
	memcpy(b->data + b->len, rec, h->len);
	b->len += h->len;
	tbuf_aged(b, h->t);
	agent_tbuf_unlock(b);
}

/* The id of the thread's stack ips (n of them), sent first in a STACK record
 * when the thread has not sent it since its cache last started over. */
static uint32_t stack_id_put(struct tbuf *b, uint64_t t, const uint64_t *ips, int n)
{
	if (b->last_id && b->last_n == (uint32_t)n && ips_equal(b->last_ips, ips, n))
		return b->last_id;
	uint64_t hash = stack_hash(ips, n);
	uint32_t id = scache_get(&b->native, hash, ips, n);
	if (!id) {
		id = scache_put(&b->native, hash, ips, n);
		pack_close(b->data, &b->len, &b->pk);
		b->len += pack_stack(b->data + b->len, b->tid, t, id, ips, n);
	}
	b->last_id = id;
	b->last_n = (uint32_t)n;
	memcpy(b->last_ips, ips, 8 * (size_t)n);
	return id;
}

/* Room a PYCODE record is written in, with the PYSTACK record and the
 * event that follow it. */
#define PYCODE_ROOM (ALLOC_PYCODE_MAX_BYTES + sizeof(union pystack_rec) + PACK_ROOM)

/* The PYCODE records of py's code objects the thread has not described,
 * before py goes in (a full buffer is flushed first: the thread's records
 * stay in order). */
static void pycodes_put(struct tbuf *b, const union pystack_rec *py)
{
	const uint64_t *words = (const uint64_t *)(py->raw + sizeof(py->p));
	size_t n = (py->p.h.len - sizeof(py->p)) / 24;
	for (size_t k = 0; k < n; k++) {
		if (ccache_seen(&b->codes, words + 3 * k))
			continue;
		if (b->len + PYCODE_ROOM > sizeof(b->data)) {
			agent_tbuf_flush(b);
			b->first_t = py->p.h.t;
		}
		b->len += pystack_code_record(words + 3 * k, b->tid, py->p.h.t, b->data + b->len,
					      sizeof(b->data) - b->len);
	}
}

/* The PYCODE records of py's code objects written through (no buffer), at
 * most a small record each: this path is rare (a thread past its exit
 * handlers) and its stack may be small. */
static __attribute__((noinline)) void pycodes_write(const union pystack_rec *py)
{
	_Alignas(8) unsigned char raw[4096];
	const uint64_t *words = (const uint64_t *)(py->raw + sizeof(py->p));
	size_t n = (py->p.h.len - sizeof(py->p)) / 24;
	for (size_t k = 0; k < n; k++) {
		size_t len =
		    pystack_code_record(words + 3 * k, py->p.h.tid, py->p.h.t, raw, sizeof(raw));
		if (len)
			agent_write_all(raw, len);
	}
}

/* The id of the thread's Python stack py, sent first (under that id, after
 * its code objects' descriptions) when the thread has not sent it since its
 * cache last started over. */
static uint32_t pystack_id_put(struct tbuf *b, union pystack_rec *py)
{
	const uint64_t *words = (const uint64_t *)(py->raw + sizeof(py->p));
	int n = (int)(py->p.h.len - sizeof(py->p)) / 8;
	uint64_t hash = stack_hash(words, n) ^ (uint64_t)py->p.flags << 1; /* stays odd: not empty */
	uint32_t id = scache_get(&b->python, hash, words, n);
	if (!id) {
		id = scache_put(&b->python, hash, words, n);
		b->py_new = 1;
		py->p.id = id;
		pack_close(b->data, &b->len, &b->pk);
		pycodes_put(b, py);
		memcpy(b->data + b->len, py, py->p.h.len);
		b->len += py->p.h.len;
	}
	return id;
}

/* The most one event appends: its stack, its Python stack and itself. */
#define EVENT_ROOM (sizeof(struct alloc_rec_stack) + 8 * ALLOC_WIRE_MAX_FRAMES + \
		    sizeof(union pystack_rec) + PACK_ROOM)

/* Appends an allocation (tag ALLOC_EV_ALLOC, with its stack ips and, when the
 * thread runs Python code, its Python frames py: then an ALLOC_EV_ALLOC_PY)
 * or a free (ALLOC_EV_FREE, ips and py NULL) at time t. The stacks' records
 * go first when the thread has not sent them since its caches last started
 * over; the room for all of it is made first, so they go out in the event's
 * chunk. Without a buffer, the event is written through with its stacks
 * under the one-off id 0. */
void agent_emit_event(int tag, uint64_t t, uint64_t ptr, uint64_t size, const uint64_t *ips,
		       int n, union pystack_rec *py)
{
	if (agent_out_fd < 0)
		return;
	if (py)
		tag = ALLOC_EV_ALLOC_PY;
	struct tbuf *b = agent_exiting ? NULL : thread_buf();
	if (!b) {
		_Alignas(8) unsigned char raw[EVENT_ROOM];
		struct packer pk = { PACK_NONE, 0, 0 };
		size_t len = 0;
		if (py) {
			pycodes_write(py);
			py->p.id = 0;
			memcpy(raw, py, py->p.h.len);
			len = py->p.h.len;
		}
		if (tag != ALLOC_EV_FREE)
			len += pack_stack(raw + len, agent_gettid_cached(), t, 0, ips, n);
		pack_event(raw, &len, &pk, agent_gettid_cached(), tag, t, ptr, size, 0, 0);
		pack_close(raw, &len, &pk);
		agent_write_all(raw, len);
		return;
	}
	agent_tbuf_lock(b);
	if (b->len + EVENT_ROOM > sizeof(b->data))
		agent_tbuf_flush(b);
	if (!b->len)
		b->first_t = t;
	uint32_t id = tag != ALLOC_EV_FREE ? stack_id_put(b, t, ips, n) : 0;
	uint32_t pyid = py ? pystack_id_put(b, py) : 0;
	pack_event(b->data, &b->len, &b->pk, b->tid, tag, t, ptr, size, id, pyid);
	tbuf_aged(b, t);
	agent_tbuf_unlock(b);
}
