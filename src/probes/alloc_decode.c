/* alloc_decode: framing, STACK and PYCODE records and packed events of the
 * agent's stream (see alloc_decode.h and alloc_wire.h). */
#include "alloc_decode.h"

#include <string.h>

int alloc_frame(const unsigned char *p, size_t avail, struct alloc_rec_head *h)
{
	if (avail < sizeof(*h))
		return 0;
	memcpy(h, p, sizeof(*h));
	if (h->len < sizeof(*h) || h->len % 8)
		return -1;
	return avail >= h->len;
}

int alloc_stack_parse(const unsigned char *rec, size_t len, uint32_t *id, uint64_t *ips,
		      uint32_t *nips)
{
	struct alloc_rec_stack s;
	if (len < sizeof(s))
		return -1;
	memcpy(&s, rec, sizeof(s));
	if (s.nips > ALLOC_WIRE_MAX_FRAMES || len != sizeof(s) + 8 * (size_t)s.nips)
		return -1;
	memcpy(ips, rec + sizeof(s), 8 * (size_t)s.nips);
	*id = s.id;
	*nips = s.nips;
	return 0;
}

static int kind_ok(unsigned kind, size_t len)
{
	return (kind == 1 || kind == 2 || kind == 4) && len % kind == 0;
}

int alloc_pycode_parse(const unsigned char *rec, size_t len, struct alloc_pycode *out)
{
	struct alloc_rec_pycode r;
	if (len < sizeof(r))
		return -1;
	memcpy(&r, rec, sizeof(r));
	if (r.name_len > ALLOC_PYCODE_MAX_NAME || r.file_len > ALLOC_WIRE_MAX_PATH ||
	    r.table_len > ALLOC_PYCODE_MAX_TABLE ||
	    sizeof(r) + (size_t)r.name_len + r.file_len + r.table_len > len ||
	    !kind_ok(r.name_kind, r.name_len) || !kind_ok(r.file_kind, r.file_len))
		return -1;
	const unsigned char *p = rec + sizeof(r);
	*out = (struct alloc_pycode){.code = r.code,
				     .ident = r.ident,
				     .firstlineno = r.firstlineno,
				     .py_version = r.py_version,
				     .units_off = r.units_off,
				     .name_kind = r.name_kind,
				     .file_kind = r.file_kind,
				     .name = p,
				     .name_len = r.name_len,
				     .file = p + r.name_len,
				     .file_len = r.file_len,
				     .table = p + r.name_len + r.file_len,
				     .table_len = r.table_len};
	return 0;
}

void alloc_events_begin(struct alloc_events *it, const unsigned char *rec, size_t len)
{
	struct alloc_rec_head h;
	memcpy(&h, rec, sizeof(h));
	it->p = rec + sizeof(h);
	it->end = rec + (len > sizeof(h) ? len : sizeof(h));
	it->t = h.t;
	it->ptr = 0;
}

/* Returns 0, or -1 when the number runs past the end or over 64 bits. */
static int uleb(struct alloc_events *it, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (it->p == it->end)
			return -1;
		unsigned char c = *it->p++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

static uint64_t unzigzag(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

int alloc_events_next(struct alloc_events *it, struct alloc_ev *ev)
{
	if (it->p == it->end || *it->p == ALLOC_EV_PAD)
		return 0;
	int tag = *it->p++;
	uint64_t dt, dptr, size = 0, stack = 0, pystack = 0;
	if (tag != ALLOC_EV_ALLOC && tag != ALLOC_EV_FREE && tag != ALLOC_EV_ALLOC_PY)
		return -1;
	if (uleb(it, &dt) || uleb(it, &dptr))
		return -1;
	if (tag != ALLOC_EV_FREE && (uleb(it, &size) || uleb(it, &stack) || stack > UINT32_MAX))
		return -1;
	if (tag == ALLOC_EV_ALLOC_PY && (uleb(it, &pystack) || pystack > UINT32_MAX))
		return -1;
	/* Unsigned arithmetic: a hostile delta wraps instead of overflowing. */
	it->t += unzigzag(dt);
	it->ptr += unzigzag(dptr);
	*ev = (struct alloc_ev){ .tag = tag, .t = it->t, .ptr = it->ptr, .size = size,
				 .stack = (uint32_t)stack, .pystack = (uint32_t)pystack };
	return 1;
}
