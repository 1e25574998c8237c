/* cpython_names: names each thread by threading's Thread.name and tells
 * its OS thread as sonde numbers it (<= 3.10 from glibc's struct pthread).
 * threading keeps every Thread it knows (MainThread and dummies included) in
 * threading._active, ident -> Thread, and its name in the instance attribute
 * _name. sonde follows sys.modules -> "threading" -> its __dict__ ->
 * "_active", then each Thread's _name, through the dict and instance layouts
 * of each version. Looked at when a thread not seen before shows up (a few
 * tries while a new thread registers itself) and every CPY_NAMES_EVERY_NS
 * (a name can be set after the start). Anything that does not check out
 * (type names, sizes, counts) gives no name: the caller falls back to comm. */
#define LOG_DOMAIN "cpython"
#include "cpython_proc.h"
#include "../util/clock.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define CPY_PTHREAD_SCAN 2048	     /* bytes of struct pthread searched for the tid */
#define CPY_MAX_DICT 65536	     /* entries of a dict looked through (sys.modules) */
#define CPY_DICT_CHUNK 128	     /* dict entries read at once */
#define CPY_NAMES_EVERY_NS NS_PER_S  /* threading's names read again this often */
#define CPY_NAMES_RETRY_NS (50 * NS_PER_MS) /* a thread not named yet: tried again after */
#define CPY_NAMES_TRIES 5	     /* ... this many times, then only every CPY_NAMES_EVERY_NS */

#define TPFLAGS_INLINE_VALUES (1UL << 2) /* 3.13 */
#define TPFLAGS_MANAGED_DICT (1UL << 4)	 /* 3.11+ */
#define TPFLAGS_HEAPTYPE (1UL << 9)

enum { TY_DICT, TY_STR, TY_INT, TY_MODULE };
static const char *const ty_names[CPY_TYPES] = { "dict", "str", "int", "module" };

/* Is obj an instance of the builtin type ty (by its tp_name, a static type)? */
static int obj_is(struct cpython_proc *cp, uint64_t obj, int ty)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t type, name_ptr, flags;
	char name[8];
	size_t n = strlen(ty_names[ty]) + 1;
	if (!obj || (obj & 7) || cpy_rd_u64(cp, obj + (uint64_t)l->object_type, &type) || !type)
		return 0;
	if (type == cp->types[ty])
		return 1;
	if (cpy_rd_u64(cp, type + (uint64_t)l->type_name, &name_ptr) ||
	    cpy_rd(cp, name_ptr, name, n) || memcmp(name, ty_names[ty], n) ||
	    cpy_rd_u64(cp, type + (uint64_t)l->type_flags, &flags) || (flags & TPFLAGS_HEAPTYPE))
		return 0;
	cp->types[ty] = type;
	return 1;
}

/* Is s the str `want` (ASCII)? */
static int str_is(struct cpython_proc *cp, uint64_t s, const char *want)
{
	const struct cpython_layout *l = &cp->lay;
	size_t n = strlen(want);
	uint8_t hdr[64];
	char data[64];
	if (n > sizeof(data) || (size_t)l->unicode_state + 4 > sizeof(hdr) || (s & 7) ||
	    cpy_rd(cp, s, hdr, (size_t)l->unicode_state + 4))
		return 0;
	uint32_t state = (uint32_t)get_i32(hdr, l->unicode_state);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (get_u64(hdr, l->unicode_length) != n || kind != 1 || !compact || !ascii)
		return 0;
	return !cpy_rd(cp, s + (uint64_t)l->unicode_ascii_size, data, n) &&
	       !memcmp(data, want, n) && obj_is(cp, s, TY_STR);
}

/* Calls visit for each entry of the keys object at keys whose key is set,
 * until it returns nonzero. visit gets the entry's index, key and value (the
 * entry's own, meaningless in a split table). Its nonzero result, 0 when
 * none, -1 when the keys object cannot be read or believed. */
typedef int (*dict_visit_fn)(struct cpython_proc *cp, void *arg, uint64_t index, uint64_t key,
			     uint64_t value);

static int keys_each(struct cpython_proc *cp, uint64_t keys, dict_visit_fn visit, void *arg)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t hdr[64];
	struct cpython_dict_keys k;
	if (!keys || (keys & 7) || (size_t)l->keys_indices > sizeof(hdr) ||
	    cpy_rd(cp, keys, hdr, (size_t)l->keys_indices) ||
	    cpython_dict_keys_decode(l, hdr, (size_t)l->keys_indices, &k) ||
	    k.nentries > CPY_MAX_DICT)
		return -1;
	uint8_t buf[CPY_DICT_CHUNK * 24];
	for (uint64_t i = 0; i < k.nentries;) {
		uint64_t n = k.nentries - i < CPY_DICT_CHUNK ? k.nentries - i : CPY_DICT_CHUNK;
		if (cpy_rd(cp, keys + k.entries_off + i * k.entry_size, buf, n * k.entry_size))
			return -1;
		for (uint64_t j = 0; j < n; j++, i++) {
			const uint8_t *e = buf + j * k.entry_size;
			uint64_t key = get_u64(e, k.key_off);
			int r = key ? visit(cp, arg, i, key, get_u64(e, k.value_off)) : 0;
			if (r)
				return r;
		}
	}
	return 0;
}

struct key_find {
	const char *key;
	uint64_t *cached; /* the key's str object when last found: compared first */
	int by_pointer;
	uint64_t values; /* split table: the values array, else 0 */
	uint64_t max_index;
	uint64_t value;
};

static int find_visit(struct cpython_proc *cp, void *arg, uint64_t index, uint64_t key,
		      uint64_t value)
{
	struct key_find *f = arg;
	if (f->by_pointer ? key != *f->cached : key == *f->cached)
		return 0;
	if (!str_is(cp, key, f->key))
		return 0;
	if (f->values) {
		if (index >= f->max_index ||
		    cpy_rd_u64(cp, f->values + (uint64_t)cp->lay.values_values + 8 * index, &value))
			return -1;
	}
	if (!value)
		return 0;
	*f->cached = key;
	f->value = value;
	return 1;
}

/* The value of str key `key` in the keys object keys (values: a split
 * table's values, else 0). Keys are interned, so the str object last found
 * (*cached) is looked for first; then every key's text. */
static int keys_get(struct cpython_proc *cp, uint64_t keys, uint64_t values, uint64_t max_index,
		    const char *key, uint64_t *cached, uint64_t *value)
{
	struct key_find f = { .key = key, .cached = cached, .by_pointer = 1, .values = values,
			      .max_index = max_index };
	int r = 0;
	if (*cached)
		r = keys_each(cp, keys, find_visit, &f);
	if (r == 0) {
		f.by_pointer = 0;
		r = keys_each(cp, keys, find_visit, &f);
	}
	if (r != 1)
		return -1;
	*value = f.value;
	return 0;
}

static int dict_get(struct cpython_proc *cp, uint64_t dict, const char *key, uint64_t *cached,
		    uint64_t *value)
{
	uint64_t keys, values;
	if (!obj_is(cp, dict, TY_DICT) ||
	    cpy_rd_u64(cp, dict + (uint64_t)cp->lay.dict_keys, &keys) ||
	    cpy_rd_u64(cp, dict + (uint64_t)cp->lay.dict_values, &values))
		return -1;
	return keys_get(cp, keys, values, UINT64_MAX, key, cached, value);
}

/* The instance attribute `key` of obj, from its __dict__: at tp_dictoffset
 * (<= 3.10 and types without a managed dict); 3.11 a values pointer 4 words
 * before the object, else the dict 3 words before; 3.12 one tagged word 3
 * before (low bit set: values - 1); 3.13 the dict 3 words before, else the
 * values inline after tp_basicsize. Values go with the type's shared keys. */
static int attr_get(struct cpython_proc *cp, uint64_t obj, const char *key, uint64_t *cached,
		    uint64_t *value)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t type, flags, dict = 0, values = 0, keys, max_index = UINT64_MAX;
	if (!obj || (obj & 7) || obj < 64 ||
	    cpy_rd_u64(cp, obj + (uint64_t)l->object_type, &type) ||
	    cpy_rd_u64(cp, type + (uint64_t)l->type_flags, &flags))
		return -1;
	if (l->minor < 11 || !(flags & TPFLAGS_MANAGED_DICT)) {
		int64_t off;
		if (cpy_rd(cp, type + (uint64_t)l->type_dictoffset, &off, sizeof(off)) ||
		    off <= 0 || off > 4096 || cpy_rd_u64(cp, obj + (uint64_t)off, &dict))
			return -1;
		return dict_get(cp, dict, key, cached, value);
	}
	uint64_t slot;
	if (cpy_rd_u64(cp, obj - 24, &slot))
		return -1;
	if (l->minor == 11) {
		dict = slot;
		if (cpy_rd_u64(cp, obj - 32, &values))
			return -1;
	} else if (l->minor == 12) {
		if (slot & 1)
			values = slot + 1;
		else
			dict = slot;
	} else {
		dict = slot;
		if (!dict && (flags & TPFLAGS_INLINE_VALUES)) {
			int64_t basic;
			uint8_t vh[4]; /* capacity, size, embedded, valid */
			if (cpy_rd(cp, type + (uint64_t)l->type_basicsize, &basic, sizeof(basic)) ||
			    basic <= 0 || basic > 4096 ||
			    cpy_rd(cp, obj + (uint64_t)basic, vh, sizeof(vh)) || !vh[3])
				return -1;
			values = obj + (uint64_t)basic;
			max_index = vh[0];
		}
	}
	if (values) {
		if (!(flags & TPFLAGS_HEAPTYPE) ||
		    cpy_rd_u64(cp, type + (uint64_t)l->heaptype_cached_keys, &keys))
			return -1;
		return keys_get(cp, keys, values, max_index, key, cached, value);
	}
	return dict_get(cp, dict, key, cached, value);
}

/* A non-negative int that fits 64 bits (30-bit digits). */
static int long_get(struct cpython_proc *cp, uint64_t obj, uint64_t *out)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t b[64];
	if ((size_t)l->long_digit + 12 > sizeof(b) || !obj_is(cp, obj, TY_INT) ||
	    cpy_rd(cp, obj, b, (size_t)l->long_digit + 12))
		return -1;
	uint64_t ndigits;
	if (l->minor >= 12) { /* lv_tag: digits << 3 | sign (0 positive, 1 zero, 2 negative) */
		uint64_t tag = get_u64(b, l->long_size);
		if ((tag & 3) == 2)
			return -1;
		ndigits = tag >> 3;
	} else {
		int64_t size = (int64_t)get_u64(b, l->long_size);
		if (size < 0)
			return -1;
		ndigits = (uint64_t)size;
	}
	if (ndigits > 3)
		return -1;
	uint64_t v = 0;
	for (uint64_t i = ndigits; i-- > 0;) {
		uint32_t d = (uint32_t)get_i32(b, l->long_digit + (int64_t)(4 * i));
		if ((d >> 30) || (i == 2 && (d >> 4)))
			return -1;
		v = (v << 30) | d;
	}
	*out = v;
	return 0;
}

struct names_walk {
	struct thread_name *out;
	size_t n, cap;
};

static int active_visit(struct cpython_proc *cp, void *arg, uint64_t index, uint64_t key,
			uint64_t value)
{
	struct names_walk *w = arg;
	uint64_t ident, name;
	(void)index;
	if (w->n >= w->cap)
		return 1;
	struct thread_name *tn = &w->out[w->n];
	if (!value || long_get(cp, key, &ident) || attr_get(cp, value, "_name", &cp->key_name, &name) ||
	    !obj_is(cp, name, TY_STR) || cpy_rd_unicode(cp, name, tn->name, sizeof(tn->name)) ||
	    !tn->name[0])
		return 0;
	for (char *c = tn->name; *c; c++) /* never a control character in a report */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	tn->ident = ident;
	tn->tid = 0;
	tn->tries = 0;
	/* Thread._native_id (3.8+): the OS thread the name is of, read with it. */
	uint64_t native_id, tid;
	if (!attr_get(cp, value, "_native_id", &cp->key_native_id, &native_id) &&
	    !long_get(cp, native_id, &tid) && tid > 0 && tid < (1u << 30))
		tn->tid = cpy_host_tid(cp, (pid_t)tid); /* the samples' tids are the host's */
	for (size_t i = 0; i < w->n; i++) /* a subinterpreter's threading: the first wins */
		if (w->out[i].ident == ident)
			return 0;
	w->n++;
	return 0;
}

/* threading._active of the interpreter interp into w. */
static void names_of_interp(struct cpython_proc *cp, uint64_t interp, struct names_walk *w)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t modules, mod, md, active, keys, values;
	if (l->interp_modules < 0 ||
	    cpy_rd_u64(cp, interp + (uint64_t)l->interp_modules, &modules) ||
	    dict_get(cp, modules, "threading", &cp->key_threading, &mod) ||
	    !obj_is(cp, mod, TY_MODULE) || cpy_rd_u64(cp, mod + (uint64_t)l->module_dict, &md) ||
	    dict_get(cp, md, "_active", &cp->key_active, &active) || !obj_is(cp, active, TY_DICT) ||
	    cpy_rd_u64(cp, active + (uint64_t)l->dict_keys, &keys) ||
	    cpy_rd_u64(cp, active + (uint64_t)l->dict_values, &values) || values)
		return;
	keys_each(cp, keys, active_visit, w);
}

static const struct thread_name *name_find(const struct cpython_proc *cp, uint64_t ident)
{
	int64_t *i = hashmap_get((struct hashmap *)&cp->name_index, &ident, sizeof(ident));
	return i ? &cp->names[*i] : NULL;
}

/* The name of (ident, tid) when it is known to be that thread's: NULL when
 * the ident's name was read for another OS thread (an ident reused). */
const struct thread_name *cpy_name_of_thread(const struct cpython_proc *cp, uint64_t ident,
					     pid_t tid)
{
	const struct thread_name *tn = name_find(cp, ident);
	return tn && (!tn->tid || !tid || tn->tid == tid) ? tn : NULL;
}

/* Binds each name read for idents[0..n) to its OS thread tids[i]. */
static void names_bind(struct cpython_proc *cp, const uint64_t *idents, const pid_t *tids,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t *k = hashmap_get(&cp->name_index, &idents[i], sizeof(idents[i]));
		if (k && !cp->names[*k].tid)
			cp->names[*k].tid = tids[i];
	}
}

/* Reads the names again when due: every CPY_NAMES_EVERY_NS, or sooner when
 * one of idents[0..n) (the threads of this sample, OS threads tids[0..n)) was
 * never looked for, was not found yet in its first few tries (a new thread
 * registers itself in _active shortly after its thread state exists), or is a
 * new thread with a finished one's ident. */
void cpy_names_update(struct cpython_proc *cp, const uint64_t *idents, const pid_t *tids, size_t n)
{
	int64_t now = clock_mono_ns(), age = now - cp->names_at_ns;
	int due = !cp->names_at_ns || age >= CPY_NAMES_EVERY_NS;
	for (size_t i = 0; i < n && !due && age >= CPY_NAMES_RETRY_NS; i++) {
		const struct thread_name *tn = name_find(cp, idents[i]);
		due = !tn || (!tn->name[0] && tn->tries < CPY_NAMES_TRIES) ||
		      !cpy_name_of_thread(cp, idents[i], tids[i]);
	}
	if (!due) {
		names_bind(cp, idents, tids, n);
		return;
	}
	/* Room for what was there, doubled: a process with many threads gets
	 * them all within a few reads; a small one stays small. */
	size_t cap = 2 * (cp->nnames + n);
	cap = cap < 32 ? 32 : cap > 2 * CPY_MAX_THREADS ? 2 * CPY_MAX_THREADS : cap;
	cp->names_next = xrealloc(cp->names_next, cap * sizeof(*cp->names_next));
	struct names_walk w = { .out = cp->names_next,
				.cap = cap - n < CPY_MAX_THREADS ? cap - n : CPY_MAX_THREADS };
	uint64_t interp;
	if (!cpy_rd_u64(cp, cp->runtime + (uint64_t)cp->lay.runtime_interp_head, &interp))
		for (int ni = 0; interp && ni < CPY_MAX_INTERPS; ni++) {
			names_of_interp(cp, interp, &w);
			if (cpy_rd_u64(cp, interp + (uint64_t)cp->lay.interp_next, &interp))
				break;
		}
	size_t found = w.n;
	/* Threads threading does not (yet) know: remembered, with their tries. */
	for (size_t i = 0; i < n && w.n < cap; i++) {
		size_t k;
		for (k = 0; k < w.n && w.out[k].ident != idents[i]; k++)
			;
		if (k < w.n)
			continue;
		const struct thread_name *old = cpy_name_of_thread(cp, idents[i], tids[i]);
		w.out[w.n] = (struct thread_name){ .ident = idents[i],
						   .tries = (old ? old->tries : 0) + 1 };
		w.n++;
	}
	struct thread_name *t = cp->names;
	cp->names = cp->names_next;
	cp->names_next = t;
	cp->nnames = w.n;
	hashmap_release(&cp->name_index);
	cp->name_index = (struct hashmap)HASHMAP_INIT;
	for (size_t i = 0; i < w.n; i++)
		hashmap_put(&cp->name_index, &cp->names[i].ident, sizeof(uint64_t), (int64_t)i);
	names_bind(cp, idents, tids, n);
	cp->names_at_ns = now;
	log_debug("pid %d: %zu thread names from threading in %lld us", (int)cp->pid, found,
		  (long long)((clock_mono_ns() - now) / 1000));
}

/* The process's threads as it numbers them, listed once per sample. */
static const pid_t *tids_listed(struct cpython_proc *cp, size_t *n)
{
	if (!cp->tids_fresh) {
		cpython_tids_refresh(&cp->tids);
		cp->tids_fresh = 1;
	}
	return cpython_tids_ns(&cp->tids, n);
}

/* sonde's id of the thread the process calls tid (a PID namespace numbers
 * its threads its own way); 0 when no such thread is listed. */
pid_t cpy_host_tid(struct cpython_proc *cp, pid_t tid)
{
	if (!cp->tids.nested || tid <= 0)
		return tid;
	pid_t h = cpython_tids_host(&cp->tids, tid);
	if (!h && !cp->tids_fresh) { /* a thread new since the last listing */
		size_t n;
		tids_listed(cp, &n);
		h = cpython_tids_host(&cp->tids, tid);
	}
	return h;
}

static int tid_known(const pid_t *tids, size_t n, int32_t v)
{
	for (size_t i = 0; i < n; i++)
		if (tids[i] == v)
			return 1;
	return 0;
}

/* <= 3.10 keeps only pthread_self(); the kernel tid sits inside glibc's
 * struct pthread at an offset glibc does not publish: learn it once by
 * finding, in every thread's struct, the same offset holding one of the
 * process's tids (all different). */
void cpy_learn_pthread_tid_offset(struct cpython_proc *cp, const uint64_t *pthreads, size_t n)
{
	size_t nt;
	const pid_t *tids = tids_listed(cp, &nt);
	if (!nt || !n)
		return;
	/* Distinct structs only: a thread being created briefly carries its
	 * creator's pthread_self(). */
	uint64_t uniq[8];
	size_t m = 0;
	for (size_t i = 0; i < n && m < 8; i++) {
		size_t j = 0;
		while (j < m && uniq[j] != pthreads[i])
			j++;
		if (j == m && pthreads[i])
			uniq[m++] = pthreads[i];
	}
	if (!m)
		return;
	uint8_t(*bufs)[CPY_PTHREAD_SCAN] = xmalloc(m * CPY_PTHREAD_SCAN);
	for (size_t i = 0; i < m; i++)
		if (cpy_rd(cp, uniq[i], bufs[i], CPY_PTHREAD_SCAN)) {
			free(bufs);
			return;
		}
	/* glibc 2.x on x86-64 keeps it at 0x2d0: try that first. */
	int64_t order[CPY_PTHREAD_SCAN / 4 + 1];
	size_t no = 0;
	order[no++] = 0x2d0;
	for (int64_t off = 0; off + 4 <= CPY_PTHREAD_SCAN; off += 4)
		if (off != 0x2d0)
			order[no++] = off;
	for (size_t k = 0; k < no; k++) {
		int64_t off = order[k];
		int ok = 1;
		for (size_t i = 0; i < m && ok; i++) {
			int32_t v = get_i32(bufs[i], off);
			ok = v > 0 && tid_known(tids, nt, v);
			for (size_t j = 0; j < i && ok; j++)
				ok = get_i32(bufs[j], off) != v;
		}
		if (ok) {
			cp->pthread_tid_off = off;
			log_debug("pid %d: the tid is at 0x%llx of struct pthread (%zu threads agree)",
				  (int)cp->pid, (long long)off, m);
			break;
		}
	}
	free(bufs);
}

/* A learnt offset is checked against threading's own word: each Thread's
 * _native_id. When two or more threads have one and not one agrees with the
 * tid read at the offset, the offset was learnt at a torn moment (it would
 * give every sample another thread's tid, and no thread its name): it is
 * forgotten and learnt again. A single disagreement is an ident reused by a
 * new thread, read before threading's entry for it. */
void cpy_check_pthread_tid_offset(struct cpython_proc *cp, const uint64_t *pthreads,
				  const pid_t *tids, size_t n)
{
	size_t agree = 0, disagree = 0;
	for (size_t i = 0; i < n; i++) {
		const struct thread_name *tn = name_find(cp, pthreads[i]);
		if (!tn || !tn->tid || !tids[i])
			continue;
		if (tn->tid == tids[i])
			agree++;
		else
			disagree++;
	}
	if (agree || disagree < 2)
		return;
	log_info("pid %d: the tid at 0x%llx of struct pthread disagrees with threading's "
		 "native ids of %zu threads: learning it again",
		 (int)cp->pid, (long long)cp->pthread_tid_off, disagree);
	cp->pthread_tid_off = -1;
	for (size_t i = 0; i < n; i++)
		cp->threads[i].tid = 0;
}
