/* cpython_walk: reads one thread's Python stack: follows its frames from
 * the innermost one out, through a cache of code objects (by address, checked
 * again on every read), and walks again while the stack moves under the walk,
 * so that a stack is given whole, as the thread had it, or not at all. */
#include "cpython_proc.h"
#include "pysource.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define CPY_MAX_DEPTH 4096
#define CPY_WALK_TRIES 12	     /* walks of one thread's stack per sample */
#define CPY_WALK_QUICK 3	     /* ... the first ones at once, then after a pause */
#define CPY_WALK_PAUSE_NS 25000	     /* the first pause, doubled each time ... */
#define CPY_WALK_PAUSE_MAX_NS 200000 /* ... up to this: 1.4 ms in all at most */
#define CPY_RECHECK_CLIMB 16	     /* frames pushed during a walk followed back to it */
#define CPY_RECHECK_END_MAX 64	     /* frames of a walk read again up to its top again */

/* A frame as a walk read it, to check it again after the walk; pushed: the
 * stack's frames before it was walked (where its own frames start). */
struct walked_frame {
	uint64_t addr, back, code;
	size_t pushed;
};

struct code_key {
	uint64_t addr, name, file, table;
	int64_t firstlineno;
};

void cpy_codes_drop(struct cpython_proc *cp)
{
	for (size_t i = 0; i < cp->ncodes; i++) {
		free(cp->codes[i].func_s);
		free(cp->codes[i].file_s);
		free(cp->codes[i].lt);
	}
	cp->ncodes = 0;
	cp->code_bytes = 0;
	cp->code_gen++;
	hashmap_release(&cp->code_index);
	cp->code_index = (struct hashmap)HASHMAP_INIT;
}

static int is_code_type(struct cpython_proc *cp, uint64_t type)
{
	if (type && type == cp->code_type)
		return 1;
	uint64_t name_ptr;
	char name[8];
	if (cpy_rd_u64(cp, type + (uint64_t)cp->lay.type_name, &name_ptr) ||
	    cpy_rd(cp, name_ptr, name, 5) || memcmp(name, "code", 5))
		return 0;
	cp->code_type = type;
	return 1;
}

/* The cached entry for the code object at addr, reading it on a miss; NULL
 * when addr is not a readable code object. */
/* The text of a source file of the process (read once), NULL when it cannot
 * be read or the cache is full. */
static const struct cpy_source *source_get(struct cpython_proc *cp, const char *file)
{
	for (size_t i = 0; i < cp->nsources; i++)
		if (!strcmp(cp->sources[i].file, file))
			return cp->sources[i].text ? &cp->sources[i] : NULL;
	if (cp->nsources == CPY_SOURCES || cp->source_bytes >= CPY_SOURCE_BYTES)
		return NULL;
	if (!cp->sources)
		cp->sources = xcalloc(CPY_SOURCES, sizeof(*cp->sources));
	struct cpy_source *s = &cp->sources[cp->nsources++];
	struct strbuf text = STRBUF_INIT;
	s->file = xstrdup(file);
	if (!pysource_read(cp->pid, file, &text)) {
		s->len = text.len;
		s->text = strbuf_detach(&text);
		cp->source_bytes += s->len;
	}
	strbuf_release(&text);
	return s->text ? s : NULL;
}

/* Before 3.11 (no co_qualname): Class.method from the source, when it can
 * be read; else co_name as it is. */
static char *code_qualname(struct cpython_proc *cp, const char *func, const char *file,
			   int64_t firstlineno)
{
	const struct cpy_source *src = cp->lay.code_qualname < 0 && func[0] != '<'
					       ? source_get(cp, file)
					       : NULL;
	struct strbuf q = STRBUF_INIT;
	if (src && !pysource_qualname(src->text, src->len, (int)firstlineno, func, &q))
		return strbuf_detach(&q);
	strbuf_release(&q);
	return xstrdup(func);
}

/* Before 3.11, when the source named no class: 1 when the code's first
 * argument is self, 2 when cls (co_varnames[0]), else 0. */
static int code_first_arg(struct cpython_proc *cp, const uint8_t *code, const char *qualname)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t names, first;
	char arg[8];
	if (l->code_varnames < 0 || l->frame_localsplus < 0 || qualname[0] == '<' ||
	    strchr(qualname, '.') || !(names = get_u64(code, l->code_varnames)) ||
	    cpy_rd_u64(cp, names + (uint64_t)l->tuple_item, &first) ||
	    cpy_rd_unicode(cp, first, arg, sizeof(arg)))
		return 0;
	return !strcmp(arg, "self") ? 1 : !strcmp(arg, "cls") ? 2 : 0;
}

/* Class.method from a frame of it: the class of its self, or its cls, read
 * once per code object (a subclass's instance names the subclass). -1 when
 * the frame holds no class now: one read while it was being set up (its
 * locals still empty, from 3.8's free list) or torn; the walk reads it again,
 * until CPY_CLASS_TRIES such reads leave the method's name as it is. */
static int code_class_from_frame(struct cpython_proc *cp, const struct code_entry *c,
				 const uint8_t *frame)
{
	const struct cpython_layout *l = &cp->lay;
	struct code_entry *e = &cp->codes[c - cp->codes];
	int first = e->first_arg;
	uint64_t obj = get_u64(frame, l->frame_localsplus), type = obj, name;
	char tn[CPY_MAX_STRING + 1];
	if (!obj || (first == 1 && cpy_rd_u64(cp, obj + (uint64_t)l->object_type, &type)) ||
	    !type || cpy_rd_u64(cp, type + (uint64_t)l->type_name, &name) || !name ||
	    cpy_rd(cp, name, tn, 64))
		goto torn;
	tn[64] = '\0';
	size_t n = strcspn(tn, "");
	const char *base = tn;
	for (size_t i = 0; i < n; i++) {
		if (tn[i] == '.')
			base = tn + i + 1;
		else if (!isalnum((unsigned char)tn[i]) && tn[i] != '_')
			goto torn; /* not a class name: a frame changed under the read */
	}
	if (!*base || n == 64)
		goto torn;
	struct strbuf q = STRBUF_INIT;
	strbuf_addf(&q, "%s.%s", base, e->func_s);
	free(e->func_s); /* no frame holds it: none is pushed while first_arg is set */
	e->func_s = strbuf_detach(&q);
	e->first_arg = 0;
	return 0;
torn:
	if (++e->class_tries < CPY_CLASS_TRIES)
		return -1;
	e->first_arg = 0;
	return 0;
}

const struct code_entry *cpy_code_get(struct cpython_proc *cp, uint64_t addr)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t buf[512];
	/* A code object does not change where sonde reads it: its page may be
	 * read ahead with the thread states, for the next sample's walks. */
	int noting = cp->pages->noting;
	cp->pages->noting = cp->pages->sampling;
	int r = cp->code_read > sizeof(buf) ? -1 : cpy_rd(cp, addr, buf, cp->code_read);
	cp->pages->noting = noting;
	if (r)
		return NULL;
	struct code_key k = {
		.addr = addr,
		.name = get_u64(buf, l->code_qualname >= 0 ? l->code_qualname : l->code_name),
		.file = get_u64(buf, l->code_filename),
		.table = get_u64(buf, l->code_linetable),
		.firstlineno = get_i32(buf, l->code_firstlineno),
	};
	int64_t *idx = hashmap_get(&cp->code_index, &k, sizeof(k));
	if (idx)
		return &cp->codes[*idx];
	if (!is_code_type(cp, get_u64(buf, l->object_type)))
		return NULL;
	char func[CPY_MAX_STRING + 1], file[CPY_MAX_STRING + 1];
	if (cpy_rd_unicode(cp, k.name, func, sizeof(func)) ||
	    cpy_rd_unicode(cp, k.file, file, sizeof(file)))
		return NULL;
	struct code_entry e = { .addr = addr, .name = k.name, .file = k.file, .table = k.table,
				.firstlineno = k.firstlineno };
	if (cpy_rd_bytes(cp, k.table, &e.lt, &e.lt_len))
		return NULL;
	e.func_s = code_qualname(cp, func, file, k.firstlineno);
	e.first_arg = code_first_arg(cp, buf, e.func_s);
	e.file_s = xstrdup(file);
	cp->code_bytes += e.lt_len + strlen(func) + strlen(file) + sizeof(e);
	if (cp->ncodes == cp->acodes) {
		cp->acodes = cp->acodes ? cp->acodes * 2 : 256;
		cp->codes = xrealloc(cp->codes, cp->acodes * sizeof(*cp->codes));
	}
	cp->codes[cp->ncodes] = e;
	hashmap_put(&cp->code_index, &k, sizeof(k), (int64_t)cp->ncodes);
	return &cp->codes[cp->ncodes++];
}

int cpy_code_line(const struct cpython_proc *cp, const struct code_entry *c, int64_t addr)
{
	return cpython_code_line(cp->lay.minor, c->lt, c->lt_len, (int)c->firstlineno, addr);
}

/* The next free slot of cp->frames, which holds *nframes now. */
struct cpython_frame *cpy_frame_slot(struct cpython_proc *cp, size_t *nframes)
{
	if (*nframes == cp->aframes) {
		cp->aframes = cp->aframes ? cp->aframes * 2 : 1024;
		cp->frames = xrealloc(cp->frames, cp->aframes * sizeof(*cp->frames));
	}
	return &cp->frames[(*nframes)++];
}

static void push_frame(struct cpython_proc *cp, size_t *nframes, const struct code_entry *c, int line)
{
	*cpy_frame_slot(cp, nframes) = (struct cpython_frame){ .function = c->func_s,
							       .file = c->file_s,
							       .line = line,
							       .code_id = (uint32_t)(c - cp->codes) };
}

/* The position of a frame in its code object's line table: pos is f_lasti
 * (3.8-3.10, sign-extended) or the instruction pointer (3.11+). */
int64_t cpy_frame_addr(const struct cpython_proc *cp, uint64_t code, uint64_t pos)
{
	return cpython_code_addr(cp->lay.minor, cp->lay.code_adaptive, code, pos);
}

/* Sleeps before walk number CPY_WALK_QUICK + k of a stack that keeps
 * tearing: a deep stack unwinding (hundreds of frames freed in a tenth of a
 * millisecond) outruns every walk started during it, so walking again at
 * once fails again; a moment later the stack is still. */
static void walk_pause(int k)
{
	int64_t ns = (int64_t)CPY_WALK_PAUSE_NS << (k < 8 ? k : 8);
	struct timespec ts = { 0, ns < CPY_WALK_PAUSE_MAX_NS ? ns : CPY_WALK_PAUSE_MAX_NS };
	nanosleep(&ts, NULL);
}

/* The thread's innermost frame, read now (not from any cache). */
/* The thread's innermost frame; *cf: the C frame it was read through
 * (3.11-3.12), 0 when none. */
static int read_top_frame(const struct cpython_proc *cp, uint64_t tstate, uint64_t *top,
			  uint64_t *cf)
{
	const struct cpython_layout *l = &cp->lay;
	*cf = 0;
	if (l->tstate_cframe < 0)
		return cpy_rd_direct(cp->pid, tstate + (uint64_t)l->tstate_frame, top,
				     sizeof(*top));
	if (cpy_rd_direct(cp->pid, tstate + (uint64_t)l->tstate_cframe, cf, sizeof(*cf)))
		return -1;
	if (!*cf) {
		*top = 0;
		return 0;
	}
	return cpy_rd_direct(cp->pid, *cf + (uint64_t)l->cframe_current_frame, top, sizeof(*top));
}

/* The hint of the thread state at tstate: one of CPY_WALK_PROBE slots from
 * its hash, its own, else an empty one, else the first (emptied). */
static struct walk_hint *hint_get(struct cpython_proc *cp, uint64_t tstate)
{
	if (!cp->hints)
		cp->hints = xcalloc(CPY_WALK_HINTS, sizeof(*cp->hints));
	/* Fibonacci hashing: thread states often lie a multiple of a page apart. */
	size_t at = (size_t)(tstate * 0x9E3779B97F4A7C15ULL >> 32);
	struct walk_hint *empty = NULL;
	for (size_t i = 0; i < CPY_WALK_PROBE; i++) {
		struct walk_hint *h = &cp->hints[(at + i) % CPY_WALK_HINTS];
		if (h->tstate == tstate)
			return h;
		if (!h->tstate && !empty)
			empty = h;
	}
	struct walk_hint *h = empty ? empty : &cp->hints[at % CPY_WALK_HINTS];
	*h = (struct walk_hint){ .tstate = tstate };
	return h;
}

/* Forgets the pages of h read with a guess that proved wrong: they were read
 * before the innermost frame, and a walk reads its frames after it. */
static void hint_pages_forget(struct cpython_proc *cp, const struct walk_hint *h)
{
	for (size_t i = 0; i < h->npages; i++) {
		struct cached_page *cpg = &cp->pages->slot[(h->page[i] / CPY_PAGE) % CPY_PAGES];
		if (cpg->page == h->page[i])
			cpg->gen = 0;
	}
}

/* Puts x first in list (n of cap entries, latest first), the least recent
 * one left out when the list is full; the entries it moved by one: the
 * index x had, or the number of entries before it was put in. */
static size_t latest_first(uint64_t *list, size_t *n, size_t cap, uint64_t x)
{
	size_t k = 0;
	while (k < *n && list[k] != x)
		k++;
	if (k == *n && *n < cap)
		(*n)++;
	if (k == cap)
		k--; /* full: the least recent one goes */
	memmove(list + 1, list, k * sizeof(*list));
	list[0] = x;
	return k;
}

/* Puts page first among h's pages (walked now). */
static void hint_page_first(struct walk_hint *h, uint64_t page)
{
	size_t k = latest_first(h->page, &h->npages, CPY_WALK_PAGES, page);
	memmove(h->page_walk + 1, h->page_walk, k * sizeof(*h->page_walk));
	h->page_walk[0] = h->walks;
}

/* The pages the walk just made read (its frames'), for the thread's next
 * walk: these first, then those of its earlier walks, while they fit. */
static void hint_pages_note(struct cpython_proc *cp, struct walk_hint *h)
{
	h->walks++;
	while (h->npages && h->walks - h->page_walk[h->npages - 1] > CPY_WALK_PAGE_KEEP)
		h->npages--;
	size_t n = 0;
	uint64_t mine[CPY_WALK_PAGES];
	for (size_t i = 0; i < cp->nwalked && n < CPY_WALK_PAGES; i++) {
		uint64_t ends[2] = { cp->walked[i].addr, cp->walked[i].addr + cp->frame_read - 1 };
		for (int e = 0; e < 2; e++) {
			uint64_t page = ends[e] & ~(uint64_t)(CPY_PAGE - 1);
			size_t k = 0;
			while (k < n && mine[k] != page)
				k++;
			if (k == n && n < CPY_WALK_PAGES)
				mine[n++] = page;
		}
	}
	for (size_t i = n; i-- > 0;) /* the innermost frame's page ends first */
		hint_page_first(h, mine[i]);
}

/* The ranges that give the innermost frame of the thread whose hint is h:
 * 3.11-3.12, its C frame now (into *cf_now) and the innermost frame of each
 * C frame of its walks (into tops[i] for h->cf[i]); else the innermost frame
 * (into tops[0]). How many, 0 when there is no such C frame. */
static size_t hint_top_ranges(const struct cpython_proc *cp, const struct walk_hint *h,
			      uint64_t *cf_now, uint64_t *tops, struct iovec *local,
			      struct iovec *remote)
{
	const struct cpython_layout *l = &cp->lay;
	size_t n = 0;
	if (l->tstate_cframe >= 0) {
		if (!h->ncf)
			return 0;
		local[n] = (struct iovec){ cf_now, sizeof(*cf_now) };
		remote[n++] =
		    (struct iovec){ (void *)(uintptr_t)(h->tstate + (uint64_t)l->tstate_cframe),
				    sizeof(*cf_now) };
		for (size_t i = 0; i < h->ncf; i++) {
			local[n] = (struct iovec){ &tops[i], sizeof(tops[i]) };
			remote[n++] = (struct iovec){
				(void *)(uintptr_t)(h->cf[i] + (uint64_t)l->cframe_current_frame),
				sizeof(tops[i])
			};
		}
	} else {
		local[n] = (struct iovec){ &tops[0], sizeof(tops[0]) };
		remote[n++] =
		    (struct iovec){ (void *)(uintptr_t)(h->tstate + (uint64_t)l->tstate_frame),
				    sizeof(tops[0]) };
	}
	return n;
}

void cpy_walk_ahead_prepare(struct cpython_proc *cp, struct cpy_ahead_extra *x)
{
	x->n = x->npages = 0;
	x->pages = NULL;
	if (!cp->holder)
		return;
	struct walk_hint *h = hint_get(cp, cp->holder);
	h->ahead_gen = 0;
	x->n = hint_top_ranges(cp, h, &h->ahead_cf, h->ahead_top, x->local, x->remote);
	x->pages = h->page;
	x->npages = h->npages;
}

void cpy_walk_ahead_done(struct cpython_proc *cp, const struct cpy_ahead_extra *x)
{
	if (x->read && cp->holder)
		hint_get(cp, cp->holder)->ahead_gen = cp->pages->gen;
}

/* The thread's innermost frame as read_top_frame gives it, read in one
 * system call with the pages its last walks read (3.11-3.12: through the C
 * frame that it is in, when one of its last walks went through it), or
 * taken from the read-ahead of this sample, which read them so, after the
 * GIL as a walk does (cpy_walk_ahead_prepare). */
static int read_top_ahead(struct cpython_proc *cp, uint64_t tstate, uint64_t *top, uint64_t *cf)
{
	const struct cpython_layout *l = &cp->lay;
	struct walk_hint *h = hint_get(cp, tstate);
	struct iovec local[CPY_EXTRA_SMALL], remote[CPY_EXTRA_SMALL];
	uint64_t cf_now = 0, tops[CPY_WALK_CFS] = { 0 };
	size_t at = 0;
	if (h->ahead_gen && h->ahead_gen == cp->pages->gen) {
		cf_now = h->ahead_cf;
		memcpy(tops, h->ahead_top, sizeof(tops));
		h->ahead_gen = 0; /* once: a walk again reads afresh */
	} else {
		size_t n = hint_top_ranges(cp, h, &cf_now, tops, local, remote);
		if (!n || cpy_rd_then_pages(cp, local, remote, n, h->page, h->npages)) {
			h->ncf = 0; /* a C frame of a thread state reused by another thread */
			goto plain;
		}
	}
	if (l->tstate_cframe >= 0) {
		while (at < h->ncf && h->cf[at] != cf_now)
			at++;
		if (at == h->ncf) {
			hint_pages_forget(cp, h);
			/* Read ahead the next time (a key function sorted
			 * calls: in it a moment, back out before a read). */
			latest_first(h->cf, &h->ncf, CPY_WALK_CFS, cf_now);
			goto plain;
		}
		latest_first(h->cf, &h->ncf, CPY_WALK_CFS, cf_now);
	}
	*cf = l->tstate_cframe >= 0 ? cf_now : 0;
	*top = tops[at];
	return 0;
plain:
	if (read_top_frame(cp, tstate, top, cf))
		return -1;
	if (*cf)
		latest_first(h->cf, &h->ncf, CPY_WALK_CFS, *cf);
	return 0;
}

/* Is the frame in fb one a live chain can hold? <= 3.10: it is being
 * executed (a frame that returned and was freed, kept as its code's zombie or
 * in the free list chained through f_back, is not: the innermost one read
 * just as it returned would end the stack there, without <module>, even when
 * the same address is the innermost frame again after the walk). Only the
 * innermost frame is briefly not executing while it is pushed or popped: such
 * a walk is done again. 3.11+: its owner is a known one. */
static int frame_believable(const struct cpython_proc *cp, const uint8_t *fb)
{
	const struct cpython_layout *l = &cp->lay;
	if (l->frame_state >= 0 && fb[l->frame_state] != (uint8_t)l->frame_state_executing)
		return 0;
	if (l->frame_owner >= 0 && fb[l->frame_owner] > 3)
		return 0;
	return 1;
}

/* The index in cp->walked of the frame at addr; cp->nwalked when none. */
static size_t walked_index(const struct cpython_proc *cp, uint64_t addr)
{
	size_t i = 0;
	while (i < cp->nwalked && cp->walked[i].addr != addr)
		i++;
	return i;
}

/* 3.11+, after a walk: which of the frames walked is the thread's
 * innermost one now, and are those from there outward still what the walk
 * read? The innermost frame and every frame walked are read again, fresh,
 * in one system call. A data stack keeps a popped frame as it was, and a
 * frame pushed at the same address can hold other code (json.loads' frames
 * where json.dumps' were): a walk read while the thread returned and called
 * again can join frames of two moments, with the same innermost address
 * before and after it. So every frame of the stack given is checked, and
 * frames popped since the walk are left out (the stack is the one the
 * thread has now, outward from its innermost frame). A thread that went
 * deeper since is followed from its innermost frame up its callers to a
 * frame walked (CPY_RECHECK_CLIMB at most): a frame at an address the walk
 * did not see does not prove the walked ones live (json.encode's frame sits
 * past where json.decode's was, which stays as it was). Returns the index in
 * cp->walked of the outermost frame popped since plus one, 0 when none was
 * (the frames from there outward are the stack), or -1 when the frames kept
 * are not the thread's now (walk again). */
static int64_t walk_recheck(struct cpython_proc *cp, uint64_t tstate, uint64_t cf)
{
	const struct cpython_layout *l = &cp->lay;
	size_t n = cp->nwalked + 3, fr = cp->frame_read;
	if (cp->arecheck < cp->nwalked * fr) {
		cp->arecheck = cp->nwalked * fr * 2;
		cp->recheck = xrealloc(cp->recheck, cp->arecheck);
	}
	if (cp->arecheck_iov < n) { /* kept between walks: this runs at every tick */
		cp->arecheck_iov = n * 2;
		cp->recheck_iov = xrealloc(cp->recheck_iov, 2 * cp->arecheck_iov *
								 sizeof(*cp->recheck_iov));
	}
	struct iovec *local = cp->recheck_iov, *remote = cp->recheck_iov + cp->arecheck_iov;
	uint64_t top_cf = 0, top = 0;
	size_t k = 0;
	if (l->tstate_cframe < 0) {
		local[k] = (struct iovec){ &top, sizeof(top) };
		remote[k++] = (struct iovec){ (void *)(uintptr_t)(tstate + (uint64_t)l->tstate_frame),
					      sizeof(top) };
	} else {
		local[k] = (struct iovec){ &top_cf, sizeof(top_cf) };
		remote[k++] = (struct iovec){ (void *)(uintptr_t)(tstate + (uint64_t)l->tstate_cframe),
					      sizeof(top_cf) };
		local[k] = (struct iovec){ &top, sizeof(top) };
		remote[k++] = (struct iovec){
			(void *)(uintptr_t)(cf + (uint64_t)l->cframe_current_frame), sizeof(top)
		};
	}
	for (size_t i = 0; i < cp->nwalked; i++) {
		local[k] = (struct iovec){ cp->recheck + i * fr, fr };
		remote[k++] = (struct iovec){ (void *)(uintptr_t)cp->walked[i].addr, fr };
	}
	/* The innermost frame pointer again, last: a short stack read while
	 * the thread moved is read again (the frames of the read were not all
	 * of one moment: json.encode's frame still current, json.loads' frame
	 * already where json.dumps' was, in 0.1-1% of the stacks of a thread
	 * that calls them in turn). A deep stack is read longer than its
	 * innermost frame stays put: the frames that still hold the same code
	 * and caller are its stack then, as below. */
	uint64_t top_end = 0;
	int end_check = cp->nwalked <= CPY_RECHECK_END_MAX;
	if (end_check) {
		local[k] = (struct iovec){ &top_end, sizeof(top_end) };
		remote[k] = remote[k - 1 - cp->nwalked];
		k++;
	}
	int64_t live = -1;
	if ((l->tstate_cframe >= 0 && !cf) || cpy_rd_many(cp, local, remote, k))
		goto out;
	if (end_check && top_end != top)
		goto out;
	/* Entered or left C code since (another C frame): its innermost
	 * frame is read through the new one. */
	if (l->tstate_cframe >= 0 && top_cf != cf && read_top_frame(cp, tstate, &top, &top_cf))
		goto out;
	size_t from = walked_index(cp, top);
	/* Pushed since (or other frames at other places): its callers, read
	 * fresh, lead to a frame walked, else the walk is not the thread's. */
	uint8_t fb_up[512];
	uint64_t up = top;
	for (int climb = 0; from == cp->nwalked && up && climb < CPY_RECHECK_CLIMB; climb++) {
		if (cpy_rd_direct(cp->pid, up, fb_up, fr) || !frame_believable(cp, fb_up))
			goto out;
		up = get_u64(fb_up, l->frame_back);
		from = walked_index(cp, up);
	}
	if (from == cp->nwalked)
		goto out;
	for (size_t i = from; i < cp->nwalked; i++) {
		const uint8_t *fb = cp->recheck + i * fr;
		const struct walked_frame *w = &cp->walked[i];
		if (get_u64(fb, l->frame_back) != w->back || get_u64(fb, l->frame_code) != w->code ||
		    !frame_believable(cp, fb))
			goto out;
	}
	live = (int64_t)from;
out:
	return live;
}

/* Walks one thread's frames into cp->frames. 0; 1 when the stack changed
 * during the walk in a way that may mix two moments (read again); -1 on an
 * unreadable or inconsistent chain. */
static int walk_frames(struct cpython_proc *cp, uint64_t tstate, size_t *nframes)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t top, cf;
	if (read_top_ahead(cp, tstate, &top, &cf))
		return -1;
	uint64_t frame = top;
	uint8_t fb[512];
	if (cp->frame_read > sizeof(fb))
		return -1;
	cp->nwalked = 0;
	uint64_t last_code = 0; /* a recursion: the same code object frame after frame */
	const struct code_entry *last_c = NULL;
	int shim = 0; /* the frame just walked was a C-stack entry frame */
	for (int depth = 0; frame; depth++) {
		if (depth >= CPY_MAX_DEPTH || cpy_rd(cp, frame, fb, cp->frame_read) ||
		    !frame_believable(cp, fb))
			return -1;
		uint64_t next = get_u64(fb, l->frame_back);
		uint64_t code = get_u64(fb, l->frame_code);
		if (next == frame)
			return -1;
		if (cp->nwalked == cp->awalked) {
			cp->awalked = cp->awalked ? cp->awalked * 2 : 256;
			cp->walked = xrealloc(cp->walked, cp->awalked * sizeof(*cp->walked));
		}
		cp->walked[cp->nwalked++] = (struct walked_frame){ frame, next, code, *nframes };
		shim = l->frame_owner >= 0 && l->frame_owner_cstack >= 0 &&
		       fb[l->frame_owner] == (uint8_t)l->frame_owner_cstack;
		if (shim) {
			frame = next;
			continue; /* a C-stack shim frame, no code */
		}
		const struct code_entry *c = code && code == last_code ? last_c
					     : code ? cpy_code_get(cp, code) : NULL;
		last_code = code;
		last_c = c;
		if (!c) {
			if (l->minor >= 13) { /* f_executable need not be code */
				frame = next;
				continue;
			}
			return -1;
		}
		if (c->first_arg && code_class_from_frame(cp, c, fb))
			return -1;
		uint64_t pos = l->frame_lasti >= 0 ? (uint64_t)(int64_t)get_i32(fb, l->frame_lasti)
						   : get_u64(fb, l->frame_instr);
		push_frame(cp, nframes, c, cpy_code_line(cp, c, cpy_frame_addr(cp, code, pos)));
		frame = next;
	}
	hint_pages_note(cp, hint_get(cp, tstate));
	/* 3.12+: all Python code runs inside _PyEval_EvalFrameDefault, whose
	 * entry frame (owned by the C stack) is the outermost of every chain; a
	 * chain ending elsewhere ran into a frame rewritten while it was read. */
	if (l->frame_owner_cstack >= 0 && cp->nwalked && !shim)
		return -1;
	/* 3.11: likewise, the outermost frame was entered from C (is_entry); a
	 * chain ending at a frame called from Python ran into one being pushed. */
	if (l->frame_is_entry >= 0 && cp->nwalked && !fb[l->frame_is_entry])
		return -1;
	/* <= 3.10: each frame was executing when read, so its f_back was its
	 * live caller then, and a caller outlives its callees: the chain is one
	 * the thread had, top moved or not (a caller's address reused by a new
	 * frame within the walk gives the same-looking stack in a recursion). */
	if (l->frame_state >= 0 || !cp->nwalked)
		return 0;
	int64_t live = walk_recheck(cp, tstate, cf);
	if (live < 0)
		return 1;
	if (live > 0 && (size_t)live < cp->nwalked) {
		/* Popped since the walk: the stack from the innermost frame now. */
		size_t start = cp->walked[0].pushed, cut = cp->walked[live].pushed;
		memmove(cp->frames + start, cp->frames + cut,
			(*nframes - cut) * sizeof(*cp->frames));
		*nframes -= cut - start;
		cp->popped++;
	}
	return 0;
}

/* Reads the stack of the thread whose state (tstate_read bytes) is ts at t
 * into th, walking it again while it moves under the walk. */
void cpy_thread_walk(struct cpython_proc *cp, uint64_t t, struct cpython_thread *th,
		     size_t *nframes)
{
	int noting = cp->pages->noting;
	cp->pages->noting = 0; /* a stack's pages are read fresh, when walked */
	/* A stack that moved, or could not be read, while being read is read
	 * again at once, fresh (a few microseconds later). */
	int w = 1;
	for (int attempt = 0; attempt < CPY_WALK_TRIES && w; attempt++) {
		if (attempt) {
			cp->rereads++;
			if (++cp->pages->gen == 0)
				cp->pages->gen = 1;
		}
		if (attempt >= CPY_WALK_QUICK)
			walk_pause(attempt - CPY_WALK_QUICK);
		*nframes = th->first;
		w = walk_frames(cp, t, nframes);
	}
	if (w) {
		*nframes = th->first;
		cp->errors++;
	} else {
		th->ok = 1;
	}
	th->walked = 1;
	cp->pages->noting = noting;
}
