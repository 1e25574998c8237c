/* cpython_mem: reads the target's memory for the CPython reader, with
 * process_vm_readv, through a page cache that holds each page once per
 * sample and reads ahead, in one system call, the pages the last sample read
 * outside its stack walks; and the Python str and bytes objects a code object
 * names. Tests serve the memory instead (cpython_test.h). */
#include "cpython_proc.h"
#include "cpython_test.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define CPY_MAX_LINETABLE (1 << 20)  /* bytes */
#define CPY_IOV_MAX 1024	     /* ranges of one process_vm_readv (the kernel's UIO_MAXIOV) */

static cpython_test_read_fn read_hook; /* tests only: cpython_test.h */
static void *read_hook_ctx;

void cpython_test_set_reader(cpython_test_read_fn fn, void *ctx)
{
	read_hook = fn;
	read_hook_ctx = ctx;
}

/* Spans are read in whole cache lines. */
#define CPY_SPAN_ALIGN 64

/* Notes bytes [lo, hi) of the page of cpg for the next samples' read-ahead:
 * one span a page, grown to every range used, kept while it is used. */
static void page_note(struct page_cache *pc, struct cached_page *cpg, size_t lo, size_t hi)
{
	if (!pc->noting)
		return;
	lo &= ~(size_t)(CPY_SPAN_ALIGN - 1);
	hi = (hi + CPY_SPAN_ALIGN - 1) & ~(size_t)(CPY_SPAN_ALIGN - 1);
	if (cpg->note < pc->nnoted && pc->noted[cpg->note].page == cpg->page) {
		struct page_span *sp = &pc->noted[cpg->note];
		sp->lo = lo < sp->lo ? (uint16_t)lo : sp->lo;
		sp->hi = hi > sp->hi ? (uint16_t)hi : sp->hi;
		sp->used = pc->samples;
		return;
	}
	if (pc->nnoted == CPY_PREFETCH)
		return;
	cpg->note = (uint32_t)pc->nnoted;
	pc->noted[pc->nnoted++] =
	    (struct page_span){ cpg->page, (uint16_t)lo, (uint16_t)hi, pc->samples };
}

int cpy_rd_direct(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (read_hook)
		return read_hook(read_hook_ctx, addr, buf, len);
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* The page holding bytes [lo, hi) of page, read once per generation (one
 * sample), whole unless the read-ahead read those bytes. */
static const uint8_t *page_get(struct page_cache *pc, pid_t pid, uint64_t page, size_t lo,
			       size_t hi)
{
	struct cached_page *cpg = &pc->slot[(page / CPY_PAGE) % CPY_PAGES];
	if (cpg->gen == pc->gen && cpg->page == page && lo >= cpg->lo && hi <= cpg->hi) {
		page_note(pc, cpg, lo, hi);
		return cpg->data;
	}
	if (cpy_rd_direct(pid, page, cpg->data, CPY_PAGE)) {
		cpg->gen = 0;
		return NULL;
	}
	cpg->gen = pc->gen;
	cpg->page = page;
	cpg->lo = 0;
	cpg->hi = CPY_PAGE;
	page_note(pc, cpg, lo, hi);
	return cpg->data;
}

/* A span that cannot be read now, or bytes outside it, are left for page_get. */
void cpy_pages_read_ahead(struct page_cache *pc, pid_t pid, struct cpy_ahead_extra *x)
{
	struct iovec local[CPY_PREFETCH + CPY_EXTRA_MAX], remote[CPY_PREFETCH + CPY_EXTRA_MAX];
	struct cached_page *slots[CPY_PREFETCH + CPY_EXTRA_MAX];
	size_t n = 0, kept = 0;
	for (size_t i = 0; i < pc->nnoted; i++)
		if (pc->samples - pc->noted[i].used < CPY_NOTE_KEEP)
			pc->noted[kept++] = pc->noted[i];
	pc->nnoted = kept;
	if (++pc->samples == 0)
		pc->samples = 1;
	for (size_t i = 0; i < pc->nnoted; i++) {
		const struct page_span *sp = &pc->noted[i];
		struct cached_page *cpg = &pc->slot[(sp->page / CPY_PAGE) % CPY_PAGES];
		if (cpg->page == sp->page)
			cpg->note = (uint32_t)i; /* where the compaction moved it */
		if (cpg->gen == pc->gen || sp->hi <= sp->lo)
			continue; /* two pages for one slot: the first only */
		cpg->gen = pc->gen;
		cpg->page = sp->page;
		cpg->lo = sp->lo;
		cpg->hi = sp->hi;
		slots[n] = cpg;
		local[n] = (struct iovec){ cpg->data + sp->lo, (size_t)(sp->hi - sp->lo) };
		remote[n] = (struct iovec){ (void *)(uintptr_t)(sp->page + sp->lo),
					    (size_t)(sp->hi - sp->lo) };
		n++;
	}
	size_t spans = n, small = 0;
	x->read = 0;
	for (size_t i = 0; !read_hook && i < x->n && n < CPY_PREFETCH + CPY_EXTRA_MAX; i++) {
		slots[n] = NULL;
		local[n] = x->local[i];
		remote[n++] = x->remote[i];
		small++;
	}
	for (size_t i = 0; small == x->n && i < x->npages && n < CPY_PREFETCH + CPY_EXTRA_MAX;
	     i++) {
		struct cached_page *cpg = &pc->slot[(x->pages[i] / CPY_PAGE) % CPY_PAGES];
		if (cpg->gen == pc->gen)
			continue; /* read already, or its slot taken by another page */
		cpg->gen = pc->gen;
		cpg->page = x->pages[i];
		cpg->lo = 0;
		cpg->hi = CPY_PAGE;
		slots[n] = cpg;
		local[n] = (struct iovec){ cpg->data, CPY_PAGE };
		remote[n++] = (struct iovec){ (void *)(uintptr_t)x->pages[i], CPY_PAGE };
	}
	ssize_t got = n && !read_hook ? process_vm_readv(pid, local, n, remote, n, 0) : 0;
	size_t i = 0, done = 0;
	while (i < n && got > 0 && done + local[i].iov_len <= (size_t)got)
		done += local[i++].iov_len;
	x->read = small && i >= spans + small;
	for (; i < n; i++)
		if (slots[i])
			slots[i]->gen = 0; /* not read: page_get reads it if it is needed */
}

int cpy_rd_then_pages(const struct cpython_proc *cp, struct iovec *local, struct iovec *remote,
		      size_t n, const uint64_t *pages, size_t npages)
{
	struct page_cache *pc = cp->pages;
	struct iovec l[CPY_RD_THEN_MAX], r[CPY_RD_THEN_MAX];
	struct cached_page *slots[CPY_RD_THEN_MAX];
	size_t want = 0, k = 0;
	if (read_hook || n > CPY_RD_THEN_MAX)
		return cpy_rd_many(cp, local, remote, n);
	for (size_t i = 0; i < n; i++) {
		l[k] = local[i];
		r[k++] = remote[i];
		want += local[i].iov_len;
	}
	size_t first_page = k;
	for (size_t i = 0; i < npages && k < CPY_RD_THEN_MAX; i++) {
		struct cached_page *cpg = &pc->slot[(pages[i] / CPY_PAGE) % CPY_PAGES];
		if (cpg->gen == pc->gen && cpg->page != pages[i])
			continue; /* the slot holds another page of this sample */
		cpg->gen = 0;	  /* until read whole */
		slots[k] = cpg;
		l[k] = (struct iovec){ cpg->data, CPY_PAGE };
		r[k++] = (struct iovec){ (void *)(uintptr_t)pages[i], CPY_PAGE };
	}
	ssize_t got = process_vm_readv(cp->pid, l, k, r, k, 0);
	if (got < 0 || (size_t)got < want)
		return -EFAULT;
	size_t whole = ((size_t)got - want) / CPY_PAGE;
	for (size_t i = first_page; i < first_page + whole; i++) {
		slots[i]->gen = pc->gen;
		slots[i]->page = (uint64_t)(uintptr_t)r[i].iov_base;
		slots[i]->lo = 0;
		slots[i]->hi = CPY_PAGE;
	}
	return 0;
}

/* Reads through the page cache: the frames of a stack sit in a few pages
 * (3.11+ keep them in one data stack), so a deep stack costs a few system
 * calls, not two per frame. Within one sample the pages are read once; the
 * cache is forgotten at the next sample. */
int cpy_rd(const struct cpython_proc *cp, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return -EFAULT;
	uint64_t first = addr & ~(uint64_t)(CPY_PAGE - 1);
	uint64_t last = (addr + len - 1) & ~(uint64_t)(CPY_PAGE - 1);
	if (!len || last - first > CPY_PAGE || addr + len < addr)
		return cpy_rd_direct(cp->pid, addr, buf, len);
	uint8_t *out = buf;
	for (uint64_t page = first; page <= last; page += CPY_PAGE) {
		uint64_t from = page > addr ? page : addr;
		uint64_t to = page + CPY_PAGE < addr + len ? page + CPY_PAGE : addr + len;
		const uint8_t *data = page_get(cp->pages, cp->pid, page, from - page, to - page);
		if (!data) /* a page that cannot be read whole: read just the range */
			return cpy_rd_direct(cp->pid, addr, buf, len);
		memcpy(out + (from - addr), data + (from - page), to - from);
	}
	return 0;
}

int cpy_rd_u64(const struct cpython_proc *cp, uint64_t addr, uint64_t *out)
{
	return cpy_rd(cp, addr, out, sizeof(*out));
}

/* A Python str as UTF-8 into out (cap bytes); compact strings only, which
 * every name and file of a code object is. */
int cpy_rd_unicode(const struct cpython_proc *cp, uint64_t addr, char *out, size_t cap)
{
	const struct cpython_layout *l = &cp->lay;
	uint8_t hdr[64];
	if ((size_t)l->unicode_state + 4 > sizeof(hdr) ||
	    cpy_rd(cp, addr, hdr, (size_t)l->unicode_state + 4))
		return -1;
	uint64_t len = get_u64(hdr, l->unicode_length);
	uint32_t state = (uint32_t)get_i32(hdr, l->unicode_state);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4))
		return -1;
	if (len > CPY_MAX_STRING) /* a huge name is kept cut, not a reason to drop the stack */
		len = CPY_MAX_STRING;
	uint64_t data = addr + (uint64_t)(ascii ? l->unicode_ascii_size : l->unicode_compact_size);
	uint8_t raw[CPY_MAX_STRING * 4];
	if (len && cpy_rd(cp, data, raw, len * kind))
		return -1;
	return cpython_chars_utf8(raw, len * kind, kind, out, cap);
}

int cpy_rd_bytes(const struct cpython_proc *cp, uint64_t addr, uint8_t **out, size_t *out_len)
{
	uint64_t size;
	if (cpy_rd_u64(cp, addr + (uint64_t)cp->lay.bytes_size, &size) || size > CPY_MAX_LINETABLE)
		return -1;
	uint8_t *b = xmalloc(size ? size : 1);
	if (size && cpy_rd(cp, addr + (uint64_t)cp->lay.bytes_sval, b, size)) {
		free(b);
		return -1;
	}
	*out = b;
	*out_len = size;
	return 0;
}

/* Reads n remote ranges, in order, in as few system calls as the kernel
 * takes (tests: one read_hook call each). 0 when every byte was read. */
int cpy_rd_many(const struct cpython_proc *cp, struct iovec *local, struct iovec *remote, size_t n)
{
	if (read_hook) {
		for (size_t i = 0; i < n; i++)
			if (read_hook(read_hook_ctx, (uint64_t)(uintptr_t)remote[i].iov_base,
				      local[i].iov_base, local[i].iov_len))
				return -EFAULT;
		return 0;
	}
	for (size_t at = 0; at < n;) {
		size_t k = n - at < CPY_IOV_MAX ? n - at : CPY_IOV_MAX;
		size_t want = 0;
		for (size_t i = at; i < at + k; i++)
			want += local[i].iov_len;
		ssize_t got = process_vm_readv(cp->pid, local + at, k, remote + at, k, 0);
		if (got < 0 || (size_t)got != want)
			return -EFAULT;
		at += k;
	}
	return 0;
}
