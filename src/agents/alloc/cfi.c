/* cfi: a cached DWARF CFI unwinder for the allocation agent (see cfi.h).
 * A return address's rule (where the CFA is, where the caller's return
 * address and rbp are saved) is computed once from its FDE, found through
 * glibc's _dl_find_object and the module's .eh_frame_hdr, and then served
 * from a fixed, lock-free cache. */
#include "cfi.h"

#if defined(__x86_64__)

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* ---- the rule of one return address ---- */

/* What the unwinder needs of a frame, once its CFA program has run up to
 * the return address: the caller's CFA is (rbp or rsp) + cfa_off, its return
 * address sits at CFA - 8 and rbp, when saved, at CFA + rbp_off. Packed into
 * 64 bits so that a cache entry is small. */
struct cfi_rule {
	int32_t cfa_off;
	int16_t rbp_off;
	uint8_t flags;
};
#define RULE_CFA_RBP 1u	 /* the CFA is rbp-based (else rsp-based) */
#define RULE_RBP_SAVED 2u /* rbp is saved at CFA + rbp_off (else unchanged) */
#define RULE_END 4u	 /* the return address is undefined: the outermost frame */

static uint64_t rule_pack(struct cfi_rule r)
{
	return (uint64_t)(uint32_t)r.cfa_off | (uint64_t)(uint16_t)r.rbp_off << 32 |
	       (uint64_t)r.flags << 48;
}

static struct cfi_rule rule_unpack(uint64_t v)
{
	return (struct cfi_rule){ .cfa_off = (int32_t)(uint32_t)v,
				  .rbp_off = (int16_t)(uint16_t)(v >> 32),
				  .flags = (uint8_t)(v >> 48) };
}

/* ---- reading .eh_frame ---- */

#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_omit 0xff

/* A cursor over call-frame data of a loaded module: trusted to be there (as
 * libgcc trusts it), but never read past end. */
struct cur {
	const unsigned char *p, *end;
};

static int cur_u8(struct cur *c, uint8_t *v)
{
	if (c->p >= c->end)
		return -1;
	*v = *c->p++;
	return 0;
}

static int cur_bytes(struct cur *c, void *v, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		return -1;
	memcpy(v, c->p, n);
	c->p += n;
	return 0;
}

/* A LEB128 number, sign-extended when is_signed. */
static int cur_leb(struct cur *c, int is_signed, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		if (cur_u8(c, &b) || shift > 63)
			return -1;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		r |= ~(uint64_t)0 << shift;
	*v = r;
	return 0;
}

static int cur_uleb(struct cur *c, uint64_t *v)
{
	return cur_leb(c, 0, v);
}

static int cur_sleb(struct cur *c, int64_t *v)
{
	uint64_t u;
	if (cur_leb(c, 1, &u))
		return -1;
	*v = (int64_t)u;
	return 0;
}

/* A fixed-size little-endian value of n bytes (2, 4 or 8), sign-extended
 * when is_signed. */
static int cur_fixed(struct cur *c, size_t n, int is_signed, uint64_t *v)
{
	unsigned char b[8] = { 0 };
	uint64_t u;
	if (cur_bytes(c, b, n))
		return -1;
	memcpy(&u, b, sizeof(u));
	if (is_signed && n < 8 && (b[n - 1] & 0x80))
		u |= ~(uint64_t)0 << (8 * n);
	*v = u;
	return 0;
}

/* A pointer encoded as enc says; datarel is relative to data_base. The
 * indirect bit is refused: nothing the unwinder needs is encoded so. */
static int cur_encoded(struct cur *c, uint8_t enc, uintptr_t data_base, uintptr_t *v)
{
	/* the size of each fixed format, by its low four bits (absptr: 8) */
	static const uint8_t fixed_bytes[16] = { [DW_EH_PE_absptr] = 8, [DW_EH_PE_udata2] = 2,
						 [DW_EH_PE_udata4] = 4, [DW_EH_PE_udata8] = 8,
						 [DW_EH_PE_sdata2] = 2, [DW_EH_PE_sdata4] = 4,
						 [DW_EH_PE_sdata8] = 8 };
	uintptr_t at = (uintptr_t)c->p;
	uint64_t u = 0;
	int64_t s;
	uint8_t format = enc & 0x0f;
	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -1;
	if (format == DW_EH_PE_uleb128) {
		if (cur_uleb(c, &u))
			return -1;
	} else if (format == DW_EH_PE_sleb128) {
		if (cur_sleb(c, &s))
			return -1;
		u = (uint64_t)s;
	} else if (!fixed_bytes[format] ||
		   cur_fixed(c, fixed_bytes[format], format & 0x08, &u)) {
		return -1;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		u += at;
		break;
	case DW_EH_PE_datarel:
		u += data_base;
		break;
	default:
		return -1; /* textrel, funcrel, aligned: not used on x86_64 Linux */
	}
	*v = (uintptr_t)u;
	return 0;
}

/* One length-prefixed record of .eh_frame (a CIE or an FDE) starting at p:
 * c covers its body (after the length). */
static int record_open(const unsigned char *p, struct cur *c)
{
	uint32_t len32;
	memcpy(&len32, p, 4);
	p += 4;
	uint64_t len = len32;
	if (len32 == 0xffffffffu) {
		memcpy(&len, p, 8);
		p += 8;
	}
	if (!len || len > (1u << 24))
		return -1; /* a terminator, or nonsense */
	c->p = p;
	c->end = p + len;
	return 0;
}

/* The FDE whose code holds pc, by binary search of .eh_frame_hdr's table. */
static int fde_find(uintptr_t pc, const unsigned char **fde)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)pc, &dlfo) || !dlfo.dlfo_eh_frame)
		return -1;
	const unsigned char *hdr = dlfo.dlfo_eh_frame;
	uintptr_t base = (uintptr_t)hdr, eh_frame, count;
	if (hdr[0] != 1 || hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -1;
	struct cur c = { hdr + 4, hdr + 4 + 16 };
	if (cur_encoded(&c, hdr[1], base, &eh_frame) || cur_encoded(&c, hdr[2], base, &count))
		return -1;
	const unsigned char *table = c.p;
	int32_t start, at;
	if (!count)
		return -1;
	size_t lo = 0, hi = count; /* the answer: the last entry starting at or below pc */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		memcpy(&start, table + 8 * mid, 4);
		if (base + (intptr_t)start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(&start, table + 8 * lo, 4);
	memcpy(&at, table + 8 * lo + 4, 4);
	if (base + (intptr_t)start > pc)
		return -1;
	*fde = (const unsigned char *)(base + (intptr_t)at);
	return 0;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	int has_aug_len;
	struct cur insns;
};

static int cie_parse(const unsigned char *p, struct cie *cie)
{
	struct cur c;
	uint32_t id;
	uint8_t version, ra;
	const char *aug;
	if (record_open(p, &c) || cur_bytes(&c, &id, 4) || id != 0 || cur_u8(&c, &version))
		return -1;
	if (version != 1 && version != 3)
		return -1;
	aug = (const char *)c.p;
	size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
	if (aug_len == (size_t)(c.end - c.p))
		return -1;
	c.p += aug_len + 1;
	if (cur_uleb(&c, &cie->code_align) || cur_sleb(&c, &cie->data_align))
		return -1;
	if (version == 1) {
		if (cur_u8(&c, &ra))
			return -1;
	} else {
		uint64_t r;
		if (cur_uleb(&c, &r))
			return -1;
		ra = r > 255 ? 0 : (uint8_t)r;
	}
	if (ra != 16)
		return -1; /* the return address is rip's column on x86_64 */
	cie->fde_enc = DW_EH_PE_absptr;
	cie->has_aug_len = aug[0] == 'z';
	if (aug[0] && aug[0] != 'z')
		return -1; /* an augmentation we cannot skip */
	const unsigned char *aug_end = c.p;
	if (cie->has_aug_len) {
		uint64_t n;
		if (cur_uleb(&c, &n) || n > (uint64_t)(c.end - c.p))
			return -1;
		aug_end = c.p + n;
	}
	for (const char *a = aug + (aug[0] == 'z'); *a; a++) {
		uint8_t enc;
		uintptr_t skip;
		switch (*a) {
		case 'R':
			if (cur_u8(&c, &cie->fde_enc))
				return -1;
			break;
		case 'L':
			if (cur_u8(&c, &enc))
				return -1;
			break;
		case 'P':
			/* the personality routine: skipped, so its address is
			 * read without the indirection */
			if (cur_u8(&c, &enc) || cur_encoded(&c, enc & 0x7f, 0, &skip))
				return -1;
			break;
		default:
			return -1; /* 'S' (a signal frame) and anything unknown */
		}
	}
	if (cie->has_aug_len)
		c.p = aug_end;
	cie->insns = c;
	return 0;
}

/* ---- the CFA program ---- */

enum how { HOW_SAME, HOW_OFFSET, HOW_UNDEF, HOW_OTHER };

struct reg_rule {
	uint8_t how;
	int64_t off;
};

/* The columns that matter: rbp (6), rsp (7) and the return address (16). */
struct cfa_state {
	int cfa_reg; /* -1: an expression or another register */
	int64_t cfa_off;
	struct reg_rule rbp, rsp, ra;
};

#define STATE_STACK_MAX 8

struct cfa_run {
	struct cfa_state st, init;
	struct cfa_state saved[STATE_STACK_MAX];
	int depth;
	const struct cie *cie;
};

static struct reg_rule *state_reg(struct cfa_state *st, uint64_t reg)
{
	switch (reg) {
	case 6:
		return &st->rbp;
	case 7:
		return &st->rsp;
	case 16:
		return &st->ra;
	default:
		return NULL; /* other registers: their rules do not matter here */
	}
}

static void reg_set(struct cfa_state *st, uint64_t reg, uint8_t how, int64_t off)
{
	struct reg_rule *r = state_reg(st, reg);
	if (r)
		*r = (struct reg_rule){ how, off };
}

static void reg_restore(struct cfa_run *run, uint64_t reg)
{
	struct reg_rule *r = state_reg(&run->st, reg);
	if (r)
		*r = *state_reg(&run->init, reg);
}

/* Runs the instructions in c while the location is below pc_end (all of
 * them when pc_end is UINTPTR_MAX); loc starts at the FDE's first address. */
static int cfa_execute(struct cfa_run *run, struct cur c, uintptr_t loc, uintptr_t pc_end)
{
	const struct cie *cie = run->cie;
	struct cfa_state *st = &run->st;
	while (c.p < c.end && loc < pc_end) {
		uint8_t op;
		uint64_t reg, u;
		int64_t s;
		uint8_t b1;
		uint16_t b2;
		uint32_t b4;
		if (cur_u8(&c, &op))
			return -1;
		switch (op & 0xc0) {
		case 0x40: /* DW_CFA_advance_loc */
			loc += (op & 0x3f) * cie->code_align;
			continue;
		case 0x80: /* DW_CFA_offset */
			if (cur_uleb(&c, &u))
				return -1;
			reg_set(st, op & 0x3f, HOW_OFFSET, (int64_t)u * cie->data_align);
			continue;
		case 0xc0: /* DW_CFA_restore */
			reg_restore(run, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: /* DW_CFA_nop */
			break;
		case 0x01: /* DW_CFA_set_loc */
			if (cur_encoded(&c, cie->fde_enc, 0, &loc))
				return -1;
			break;
		case 0x02: /* DW_CFA_advance_loc1 */
			if (cur_u8(&c, &b1))
				return -1;
			loc += b1 * cie->code_align;
			break;
		case 0x03: /* DW_CFA_advance_loc2 */
			if (cur_bytes(&c, &b2, 2))
				return -1;
			loc += b2 * cie->code_align;
			break;
		case 0x04: /* DW_CFA_advance_loc4 */
			if (cur_bytes(&c, &b4, 4))
				return -1;
			loc += b4 * cie->code_align;
			break;
		case 0x05: /* DW_CFA_offset_extended */
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u))
				return -1;
			reg_set(st, reg, HOW_OFFSET, (int64_t)u * cie->data_align);
			break;
		case 0x06: /* DW_CFA_restore_extended */
			if (cur_uleb(&c, &reg))
				return -1;
			reg_restore(run, reg);
			break;
		case 0x07: /* DW_CFA_undefined */
			if (cur_uleb(&c, &reg))
				return -1;
			reg_set(st, reg, HOW_UNDEF, 0);
			break;
		case 0x08: /* DW_CFA_same_value */
			if (cur_uleb(&c, &reg))
				return -1;
			reg_set(st, reg, HOW_SAME, 0);
			break;
		case 0x09: /* DW_CFA_register */
		case 0x14: /* DW_CFA_val_offset */
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u))
				return -1;
			reg_set(st, reg, HOW_OTHER, 0);
			break;
		case 0x0a: /* DW_CFA_remember_state */
			if (run->depth == STATE_STACK_MAX)
				return -1;
			run->saved[run->depth++] = *st;
			break;
		case 0x0b: /* DW_CFA_restore_state */
			if (!run->depth)
				return -1;
			/* the whole row, the CFA rule included */
			*st = run->saved[--run->depth];
			break;
		case 0x0c: /* DW_CFA_def_cfa */
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u))
				return -1;
			st->cfa_reg = reg == 6 || reg == 7 ? (int)reg : -1;
			st->cfa_off = (int64_t)u;
			break;
		case 0x0d: /* DW_CFA_def_cfa_register */
			if (cur_uleb(&c, &reg))
				return -1;
			st->cfa_reg = reg == 6 || reg == 7 ? (int)reg : -1;
			break;
		case 0x0e: /* DW_CFA_def_cfa_offset */
			if (cur_uleb(&c, &u))
				return -1;
			st->cfa_off = (int64_t)u;
			break;
		case 0x0f: /* DW_CFA_def_cfa_expression */
			if (cur_uleb(&c, &u) || u > (uint64_t)(c.end - c.p))
				return -1;
			c.p += u;
			st->cfa_reg = -1;
			break;
		case 0x10: /* DW_CFA_expression */
		case 0x16: /* DW_CFA_val_expression */
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u) || u > (uint64_t)(c.end - c.p))
				return -1;
			c.p += u;
			reg_set(st, reg, HOW_OTHER, 0);
			break;
		case 0x11: /* DW_CFA_offset_extended_sf */
			if (cur_uleb(&c, &reg) || cur_sleb(&c, &s))
				return -1;
			reg_set(st, reg, HOW_OFFSET, s * cie->data_align);
			break;
		case 0x12: /* DW_CFA_def_cfa_sf */
			if (cur_uleb(&c, &reg) || cur_sleb(&c, &s))
				return -1;
			st->cfa_reg = reg == 6 || reg == 7 ? (int)reg : -1;
			st->cfa_off = s * cie->data_align;
			break;
		case 0x13: /* DW_CFA_def_cfa_offset_sf */
			if (cur_sleb(&c, &s))
				return -1;
			st->cfa_off = s * cie->data_align;
			break;
		case 0x15: /* DW_CFA_val_offset_sf */
			if (cur_uleb(&c, &reg) || cur_sleb(&c, &s))
				return -1;
			reg_set(st, reg, HOW_OTHER, 0);
			break;
		case 0x2e: /* DW_CFA_GNU_args_size */
			if (cur_uleb(&c, &u))
				return -1;
			break;
		case 0x2f: /* DW_CFA_GNU_negative_offset_extended */
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u))
				return -1;
			reg_set(st, reg, HOW_OFFSET, -(int64_t)u * cie->data_align);
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* The rule for the frame that returns to ip: its FDE is the one holding
 * ip - 1 (a call's return address may lie past the end of a noreturn
 * function), its program run up to ip, as libgcc does. */
static int rule_compute(uintptr_t ip, struct cfi_rule *out)
{
	const unsigned char *fde;
	struct cur c;
	struct cie cie;
	uint32_t cie_off;
	uintptr_t pc_begin, pc_range, pc = ip - 1;
	if (fde_find(pc, &fde) || record_open(fde, &c))
		return -1;
	const unsigned char *cie_ptr_at = c.p;
	if (cur_bytes(&c, &cie_off, 4) || !cie_off || cie_parse(cie_ptr_at - cie_off, &cie))
		return -1;
	if (cur_encoded(&c, cie.fde_enc, 0, &pc_begin) ||
	    cur_encoded(&c, cie.fde_enc & 0x0f, 0, &pc_range))
		return -1;
	if (pc < pc_begin || pc - pc_begin >= pc_range)
		return -1;
	if (cie.has_aug_len) {
		uint64_t n;
		if (cur_uleb(&c, &n) || n > (uint64_t)(c.end - c.p))
			return -1;
		c.p += n;
	}
	struct cfa_run run = { .cie = &cie };
	run.st.cfa_reg = -1;
	if (cfa_execute(&run, cie.insns, 0, UINTPTR_MAX))
		return -1;
	run.init = run.st;
	run.depth = 0;
	if (cfa_execute(&run, c, pc_begin, ip))
		return -1;

	const struct cfa_state *st = &run.st;
	struct cfi_rule r = { 0 };
	if (st->ra.how == HOW_UNDEF) {
		r.flags = RULE_END;
		*out = r;
		return 0;
	}
	if (st->ra.how != HOW_OFFSET || st->ra.off != -8 || st->rsp.how != HOW_SAME)
		return -1;
	if (st->cfa_reg < 0 || st->cfa_off < 8 || st->cfa_off > INT32_MAX)
		return -1;
	r.cfa_off = (int32_t)st->cfa_off;
	r.flags = st->cfa_reg == 6 ? RULE_CFA_RBP : 0;
	if (st->rbp.how == HOW_OFFSET) {
		if (st->rbp.off < INT16_MIN || st->rbp.off > INT16_MAX)
			return -1;
		r.rbp_off = (int16_t)st->rbp.off;
		r.flags |= RULE_RBP_SAVED;
	} else if (st->rbp.how != HOW_SAME) {
		return -1;
	}
	*out = r;
	return 0;
}

/* ---- the cache ----
 *
 * Direct-mapped by return address. Each entry is a small seqlock: a writer
 * makes seq odd (by compare-and-swap: a second writer gives up, the rule is
 * only not cached), writes the key and the rule, and makes seq even again; a
 * reader that sees seq odd or changed across its reads takes a miss. The key
 * carries the flush epoch in its top bits (user addresses fit in 48), so a
 * flush invalidates every entry at once. */
#define CACHE_BITS 13
#define CACHE_SIZE (1u << CACHE_BITS)

struct cache_entry {
	_Atomic uint64_t seq, key, rule;
	uint64_t pad;
};

static struct cache_entry cache[CACHE_SIZE];
static _Atomic uint64_t cache_epoch;
static __thread __attribute__((tls_model("initial-exec"))) struct cfi_stats stats;

static uint64_t cache_key(uintptr_t ip)
{
	return ((uint64_t)ip & 0xffffffffffffull) |
	       atomic_load_explicit(&cache_epoch, memory_order_relaxed) << 48;
}

size_t cfi_cache_slot(uintptr_t ip)
{
	return (size_t)(((uint64_t)ip * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS));
}

static struct cache_entry *cache_slot(uintptr_t ip)
{
	return &cache[cfi_cache_slot(ip)];
}

static int cache_get(uintptr_t ip, struct cfi_rule *r)
{
	struct cache_entry *e = cache_slot(ip);
	uint64_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	uint64_t key = atomic_load_explicit(&e->key, memory_order_relaxed);
	uint64_t rule = atomic_load_explicit(&e->rule, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	uint64_t s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if (!s1 || (s1 & 1) || s1 != s2 || key != cache_key(ip))
		return -1;
	*r = rule_unpack(rule);
	return 0;
}

static void cache_put(uintptr_t ip, struct cfi_rule r)
{
	struct cache_entry *e = cache_slot(ip);
	uint64_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if ((s & 1) || !atomic_compare_exchange_strong_explicit(&e->seq, &s, s + 1,
								 memory_order_acquire,
								 memory_order_relaxed))
		return;
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->key, cache_key(ip), memory_order_relaxed);
	atomic_store_explicit(&e->rule, rule_pack(r), memory_order_relaxed);
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
}

static int rule_get(uintptr_t ip, struct cfi_rule *r)
{
	if (!cache_get(ip, r)) {
		stats.hits++;
		return 0;
	}
	stats.misses++;
	if (rule_compute(ip, r))
		return -1;
	cache_put(ip, *r);
	return 0;
}

void cfi_cache_flush(void)
{
	atomic_fetch_add_explicit(&cache_epoch, 1, memory_order_relaxed);
}

void cfi_stats_get(struct cfi_stats *out)
{
	*out = stats;
}

/* ---- the walk ---- */

/* One 8-byte stack slot, only inside the thread's stack. */
__attribute__((no_sanitize("address"))) static int stack_read(const struct cfi_limits *lim,
							      uintptr_t at, uintptr_t *v)
{
	if (at & 7 || at < lim->stack_lo || at > lim->stack_hi - 8)
		return -1;
	*v = *(const uintptr_t *)at;
	return 0;
}

/* The walk proper, from the state of the caller of cfi_backtrace: its IP,
 * its rsp (the CFA of cfi_backtrace) and its rbp. */
static int walk(uint64_t *ips, uint64_t *cfas, int max, const struct cfi_limits *lim,
		uintptr_t ip, uintptr_t sp, uintptr_t bp)
{
	int n = 0;
	while (n < max && ip) {
		struct cfi_rule r;
		if (ip < lim->skip_start || ip >= lim->skip_end) {
			cfas[n] = sp; /* the callee's CFA, as libgcc pairs them */
			ips[n++] = ip;
			if ((ip >= lim->stop_start && ip < lim->stop_end) || n == max)
				break;
		}
		if (rule_get(ip, &r))
			return -1;
		if (r.flags & RULE_END)
			break;
		uintptr_t cfa = ((r.flags & RULE_CFA_RBP) ? bp : sp) + (uintptr_t)(intptr_t)r.cfa_off;
		if (cfa <= sp || stack_read(lim, cfa - 8, &ip))
			return -1;
		if ((r.flags & RULE_RBP_SAVED) &&
		    stack_read(lim, cfa + (uintptr_t)(intptr_t)r.rbp_off, &bp))
			return -1;
		sp = cfa;
	}
	return n;
}

/* Not inlined, and __builtin_frame_address makes it keep rbp as its frame
 * pointer: [rbp] is the caller's rbp, [rbp + 8] the return address. */
__attribute__((noinline, no_sanitize("address"))) int
cfi_backtrace(uint64_t *ips, uint64_t *cfas, int max, const struct cfi_limits *lim)
{
	const uintptr_t *fp = __builtin_frame_address(0);
	uintptr_t at = (uintptr_t)fp;
	if (max <= 0 || lim->stack_hi < lim->stack_lo + 16 || at & 7 || at < lim->stack_lo ||
	    at > lim->stack_hi - 16)
		return -1;
	return walk(ips, cfas, max, lim, fp[1], at + 16, fp[0]);
}

#else /* not x86_64 */

int cfi_backtrace(uint64_t *ips, uint64_t *cfas, int max, const struct cfi_limits *lim)
{
	(void)ips;
	(void)cfas;
	(void)max;
	(void)lim;
	return -1;
}

void cfi_stats_get(struct cfi_stats *out)
{
	*out = (struct cfi_stats){ 0, 0 };
}

void cfi_cache_flush(void)
{
}

#endif
