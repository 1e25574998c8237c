/* cpython_proc: what the parts of the CPython reader share: the state of one
 * reader (struct cpython_proc), its page and code caches, and the functions
 * one part calls in another (cpython.c samples, cpython_open.c finds the
 * interpreter, cpython_mem.c reads its memory, cpython_walk.c walks a stack,
 * cpython_names.c names the threads). Private: only cpython*.c include it;
 * everything else goes through cpython.h. */
#ifndef SONDE_CPYTHON_PROC_H
#define SONDE_CPYTHON_PROC_H

#include "cpython.h"
#include "cpython_gil.h"
#include "cpython_layout.h"
#include "cpython_tids.h"
#include "../util/hashmap.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#define CPY_MAX_INTERPS 16
#define CPY_MAX_THREADS 512
#define CPY_MAX_STRING 1024	     /* characters of a name or path */
#define CPY_TYPES 4		     /* builtin types recognised by tp_name */

#define CPY_SOURCES 256
#define CPY_SOURCE_BYTES (64u << 20)

struct cpy_source {
	char *file;
	char *text;
	size_t len;
};

struct code_entry {
	uint64_t addr, name, file, table;
	int64_t firstlineno;
	char *func_s, *file_s;
	uint8_t *lt;
	size_t lt_len;
	/* <= 3.10, no class in func_s (the source unread): the first argument
	 * is self (1) or cls (2), whose class the next frame of it names (then 0) */
	int first_arg;
	int class_tries; /* frames of it read with no class in them */
};

#define CPY_CLASS_TRIES 8  /* torn reads of a method's frame before its class is let go */

#define CPY_PAGE 4096
#define CPY_PAGES 256 /* pages cached per process: 1 MiB (touched ones only) */

struct cached_page {
	uint64_t page;
	uint32_t gen;	 /* 0: empty */
	uint32_t note;	 /* its index in page_cache.noted, when noted (check the page) */
	uint16_t lo, hi; /* the bytes of data read in generation gen */
	uint8_t data[CPY_PAGE];
};

#define CPY_PREFETCH 64 /* pages read ahead in one system call per sample */

/* The bytes of a page a sample used, which the next ones read ahead. */
struct page_span {
	uint64_t page;
	uint16_t lo, hi;
	uint32_t used; /* page_cache.samples when last used */
};
/* A span is read ahead for this many samples after its last use: a code
 * object's page is used only by samples that walk a stack, and a walk that
 * finds it not read ahead reads it alone. */
#define CPY_NOTE_KEEP 64

struct page_cache {
	uint32_t gen;
	struct cached_page slot[CPY_PAGES];
	/* The pages a sample read outside its stack walks (the runtime, the
	 * interpreters, the GIL, the thread states): the next sample reads them
	 * all at its start, in one process_vm_readv, the bytes of each that were
	 * used only (a thread state is a few hundred bytes of its page). */
	int noting;
	int sampling;	  /* inside cpython_sample: code objects' pages are noted, walks or not */
	uint32_t samples; /* counts samples, for page_span.used */
	struct page_span noted[CPY_PREFETCH];
	size_t nnoted;
};

/* threading's name of the thread whose ident (pthread_self) is ident; an
 * empty name: not known to threading, looked for `tries` times. An ident is
 * reused by the next thread (glibc reuses a finished thread's stack), so a
 * name holds for the OS thread tid it was read for (0: not bound yet). */
struct thread_name {
	uint64_t ident;
	pid_t tid;
	int tries;
	char name[128];
};

#define CPY_WALK_HINTS 128
#define CPY_WALK_PROBE 4
#define CPY_WALK_PAGES 6
#define CPY_WALK_CFS 4	     /* C frames remembered per thread (3.11-3.12) */
#define CPY_WALK_PAGE_KEEP 64 /* walks a page of an earlier walk is read ahead for */

/* What a thread's next walk reads in one system call with its innermost
 * frame. A thread that goes in and out of C code (a generator resumed by
 * str.join, a key function called by sorted) moves between C frames, each
 * with its own innermost frame, and its stacks between pages: each is
 * remembered, so that the walk of every such stack is read at once, not
 * one more system call later (a walk that takes longer in some stacks than
 * in others gives the time between to the code that runs next: 2 points of
 * a 10% function at 1 kHz). */
struct walk_hint {
	uint64_t tstate;
	uint64_t cf[CPY_WALK_CFS]; /* the C frames of its walks, latest first */
	size_t ncf;
	uint64_t page[CPY_WALK_PAGES]; /* the pages of its walks, latest first */
	uint32_t page_walk[CPY_WALK_PAGES]; /* walks when that page was last walked */
	size_t npages;
	uint32_t walks;
	/* Read with the read-ahead of generation ahead_gen (0: none): the C
	 * frame then, and the innermost frame of each of cf[] then. */
	uint32_t ahead_gen;
	uint64_t ahead_cf, ahead_top[CPY_WALK_CFS];
};

/* What tells a thread state of one sample from another: the same object,
 * OS thread and innermost frame (or C frame, 3.11-3.12). */
struct thread_key {
	uint64_t tstate, pthread, native, top;
};

struct cpython_proc {
	pid_t pid;
	struct page_cache *pages;
	struct cpython_layout lay; /* the version's rows, 3.13 filled from _Py_DebugOffsets */
	uint64_t runtime;	   /* remote address of _PyRuntime */
	char version[16];
	char where[512];
	size_t tstate_read, frame_read, code_read;
	uint64_t code_type;	   /* remote PyCode_Type, once seen */
	int64_t pthread_tid_off;   /* <= 3.10: offset of the tid in struct pthread; -1 unknown */
	struct cpython_tids tids;  /* the process's own thread ids -> sonde's */
	int tids_fresh;		   /* listed during this sample */
	uint64_t tid_tries;
	struct hashmap code_index; /* key: struct code_key -> index in codes */
	struct code_entry *codes;
	size_t ncodes, acodes;
	struct cpython_thread *threads;
	struct cpython_frame *frames;
	size_t aframes;
	/* The previous sample (threads, frames and keys swap with the current
	 * ones at each sample): a thread that cannot have run Python since
	 * (cpython_gil.h) keeps its stack from there instead of being walked. */
	struct cpython_thread *threads_prev;
	struct cpython_frame *frames_prev;
	size_t aframes_prev, nprev;
	struct thread_key *keys, *keys_prev;
	struct cpython_gil_seen gils[CPY_MAX_INTERPS], gils_prev[CPY_MAX_INTERPS];
	uint64_t prev_code_gen; /* code_gen then: kept frames point into that cache */
	uint64_t kept;		/* stacks kept, not walked, since open */
	size_t nlast;		/* threads of the last sample (0: it failed) */
	/* Per thread state (by address, CPY_WALK_HINTS slots): the C frame its
	 * last walk read the innermost frame through and the pages that walk
	 * read, read with the innermost frame at the next walk, in one system
	 * call instead of one a page and two for the frame (cpython_walk.c). */
	struct walk_hint *hints;
	uint64_t holder; /* the thread state that held the GIL at the last sample, 0 unknown */
	struct walked_frame *walked; /* the last walk's frames, innermost first */
	size_t nwalked, awalked;
	uint8_t *recheck;	     /* the walked frames read again, frame_read bytes each */
	size_t arecheck;
	struct iovec *recheck_iov;   /* its ranges, local then remote (2 * arecheck_iov) */
	size_t arecheck_iov;
	uint64_t errors;
	uint64_t rereads; /* stacks walked again within one sample */
	uint64_t popped;  /* stacks given from a frame outer than the walk's innermost */
	uint64_t code_gen;
	size_t code_bytes; /* held by the cache, bounded by CPY_MAX_CODE_BYTES */
	/* <= 3.10: source files read for qualified names (pysource.h), text
	 * NULL when unreadable; at most CPY_SOURCES files, CPY_SOURCE_BYTES. */
	struct cpy_source *sources;
	size_t nsources, source_bytes;
	uint64_t types[CPY_TYPES]; /* remote dict, str, int, module types, once seen */
	uint64_t key_threading, key_active, key_name, key_native_id; /* interned str keys, once found */
	struct thread_name *names, *names_next; /* nnames used; at most 2 * CPY_MAX_THREADS */
	size_t nnames;
	struct hashmap name_index; /* ident -> index in names */
	int64_t names_at_ns;	   /* when names were last read, 0 never */
};

static inline uint64_t get_u64(const uint8_t *b, int64_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline int32_t get_i32(const uint8_t *b, int64_t off)
{
	int32_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* Remote memory (cpython_mem.c). */
int cpy_rd_direct(pid_t pid, uint64_t addr, void *buf, size_t len);
/* Begins a sample: forgets the spans not used for CPY_NOTE_KEEP samples and
 * reads the others, at once, into the cache of this generation; then, in
 * the same system call, x's small ranges and (when those fit) its pages,
 * whole, into the cache. x->read: its small ranges were read whole (never
 * with tests' readers). */
#define CPY_EXTRA_SMALL (1 + CPY_WALK_CFS)
#define CPY_EXTRA_MAX (CPY_EXTRA_SMALL + CPY_WALK_PAGES)
struct cpy_ahead_extra {
	struct iovec local[CPY_EXTRA_SMALL], remote[CPY_EXTRA_SMALL];
	size_t n;
	const uint64_t *pages;
	size_t npages;
	int read;
};
void cpy_pages_read_ahead(struct page_cache *pc, pid_t pid, struct cpy_ahead_extra *x);
/* The innermost frame and the pages of the walk of the thread that held the
 * GIL at the last sample, read with the read-ahead (cpython_walk.c): set
 * up x before it, and keep what it read after it. */
void cpy_walk_ahead_prepare(struct cpython_proc *cp, struct cpy_ahead_extra *x);
void cpy_walk_ahead_done(struct cpython_proc *cp, const struct cpy_ahead_extra *x);
/* Reads n small ranges (in order, every byte of them, or -EFAULT), then, in
 * the same system call, whole pages into the page cache of this generation
 * (those that fit in CPY_RD_THEN_MAX ranges; a page not read, or whose slot
 * another page of this generation holds, is left for cpy_rd). Tests'
 * readers get the ranges only. */
#define CPY_RD_THEN_MAX 16
int cpy_rd_then_pages(const struct cpython_proc *cp, struct iovec *local, struct iovec *remote,
		      size_t n, const uint64_t *pages, size_t npages);
int cpy_rd(const struct cpython_proc *cp, uint64_t addr, void *buf, size_t len);
int cpy_rd_u64(const struct cpython_proc *cp, uint64_t addr, uint64_t *out);
int cpy_rd_unicode(const struct cpython_proc *cp, uint64_t addr, char *out, size_t cap);
int cpy_rd_bytes(const struct cpython_proc *cp, uint64_t addr, uint8_t **out, size_t *out_len);
int cpy_rd_many(const struct cpython_proc *cp, struct iovec *local, struct iovec *remote, size_t n);

/* Code objects and stacks (cpython_walk.c). */
void cpy_codes_drop(struct cpython_proc *cp);
const struct code_entry *cpy_code_get(struct cpython_proc *cp, uint64_t addr);
int cpy_code_line(const struct cpython_proc *cp, const struct code_entry *c, int64_t addr);
struct cpython_frame *cpy_frame_slot(struct cpython_proc *cp, size_t *nframes);
int64_t cpy_frame_addr(const struct cpython_proc *cp, uint64_t code, uint64_t pos);
void cpy_thread_walk(struct cpython_proc *cp, uint64_t t, struct cpython_thread *th,
		     size_t *nframes);

/* Thread names and ids (cpython_names.c). */
const struct thread_name *cpy_name_of_thread(const struct cpython_proc *cp, uint64_t ident,
					     pid_t tid);
void cpy_names_update(struct cpython_proc *cp, const uint64_t *idents, const pid_t *tids, size_t n);
pid_t cpy_host_tid(struct cpython_proc *cp, pid_t tid);
void cpy_learn_pthread_tid_offset(struct cpython_proc *cp, const uint64_t *pthreads, size_t n);
void cpy_check_pthread_tid_offset(struct cpython_proc *cp, const uint64_t *pthreads,
				  const pid_t *tids, size_t n);

#endif
