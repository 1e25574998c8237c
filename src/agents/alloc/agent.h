/* agent: what the files of the allocation agent (libsonde_alloc.so) share:
 * the image's state, the per-thread buffer, and the functions one part calls
 * in another (agent.c starts, forks and ends the image, hooks.c and maps.c
 * interpose the allocators, stacks.c captures stacks, buffers.c packs records,
 * channel.c writes them). Private: only the agent's own files include it;
 * sonde sees the agent through alloc_wire.h alone. Everything declared here has
 * hidden visibility: the library exports its hooks (AGENT_EXPORT) and nothing
 * else. Every file lives by the rules in agent.c's opening comment. */
#ifndef SONDE_ALLOC_AGENT_H
#define SONDE_ALLOC_AGENT_H

#include "alloc_wire.h"
#include "pystack.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_EXPORT __attribute__((visibility("default")))
#define AGENT_TLS __thread __attribute__((tls_model("initial-exec")))

/* Per-thread buffer: flushed when full, when its oldest record is older than
 * the flush age (20 ms; 2^26 counter ticks, 22 ms at 3 GHz), at thread exit
 * and at process exit. A crash loses at most what the buffers hold. */
#define AGENT_BUF_BYTES (64 * 1024)
#define AGENT_FLUSH_AGE_NS (20 * 1000000ULL)
#define AGENT_FLUSH_AGE_TICKS (1ULL << 26)
#define AGENT_MODULES_CHECK_NS (10 * 1000000ULL)
#define AGENT_MODULES_CHECK_TICKS (1ULL << 25)

/* Packing of events into ALLOC_REC_EVENTS records (alloc_wire.h): the open
 * record's place in the buffer and the values the next event is a delta of. */
#define PACK_NONE SIZE_MAX

struct packer {
	size_t batch; /* offset of the open EVENTS record, or PACK_NONE */
	uint64_t last_t, last_ptr;
};

/* The thread's stack caches, one for native stacks and one for Python
 * stacks: stacks already sent, by hash, with their words (return addresses,
 * or Python frames of three words) kept to compare (a hash alone could merge
 * two sites). When the table is three quarters full or the words fill their
 * arena, it starts over; ids keep counting, so a stack sent again gets a new
 * one. */
#define SCACHE_SLOTS 4096u
#define SCACHE_PROBES 16
#define SCACHE_WORDS (1u << 16)

struct scache_slot {
	uint64_t hash; /* 0: empty */
	uint32_t id;
	uint32_t at; /* arena index << 8 | number of words */
};

struct scache {
	uint32_t next_id, nstacks, arena_used;
	struct scache_slot slots[SCACHE_SLOTS];
	uint64_t arena[SCACHE_WORDS];
};

/* The code objects the thread described in PYCODE records since its caches
 * last started over, as hashes of (address, identity); 0: empty. Starts over
 * when three quarters full (the thread describes them again). */
#define CCACHE_SLOTS 4096u
#define CCACHE_PROBES 16

struct ccache {
	uint32_t n;
	uint64_t slots[CCACHE_SLOTS];
};

/* A thread's buffer (buffers.c), mapped on the thread's first record and
 * linked into agent_buffers; busy is its lock. */
struct tbuf {
	atomic_int busy; /* owner while appending, or the exit flusher */
	uint32_t tid;
	size_t len;
	uint64_t first_t;
	struct tbuf *next;
	struct packer pk;
	/* The last native stack sent or found, checked before the table (a
	 * loop allocates from one place many times). last_id 0: none. */
	uint32_t last_id, last_n;
	uint64_t last_ips[ALLOC_WIRE_MAX_FRAMES];
	int py_new; /* a Python stack was sent for the first time since the last flush */
	_Alignas(8) unsigned char data[AGENT_BUF_BYTES];
	struct scache native, python;
	struct ccache codes;
};

struct dl_phdr_info;

#pragma GCC visibility push(hidden)

/* ---- agent.c: the image's state, and its clock ---- */

extern int agent_out_fd;		/* the channel's descriptor; -1: none */
extern int agent_enabled;		/* the hooks record: the channel opened at start-up */
extern int agent_exiting;		/* the exit handler runs: records are written through */
extern uint64_t agent_interval_bytes;	/* mean bytes between two samples; 0: full */
extern pthread_mutex_t agent_list_lock; /* guards agent_buffers */
extern struct tbuf *agent_buffers;	/* every live thread's buffer, linked by next */
extern pthread_key_t agent_buf_key;	/* the thread's buffer, for agent_thread_gone */
extern int agent_use_tsc;		/* the image's clock is the time-stamp counter */
extern uint64_t agent_flush_age, agent_modules_age; /* in the image's clock */
extern int agent_py_hooked; /* CPython's object allocators are wrapped (hooks.c) */
/* The re-entrancy guard: while it is nonzero, the thread's hooks pass through. */
extern AGENT_TLS int agent_in_hook;
extern AGENT_TLS struct tbuf *agent_my_buf; /* the thread's buffer; NULL: none (yet) */

uint64_t agent_now_ns(void); /* CLOCK_MONOTONIC */
/* Stamps in the image's clock: agent_stamp_before before the work the time
 * must precede (a free), agent_stamp_after after the work it must follow (an
 * alloc). */
uint64_t agent_stamp_before(void);
uint64_t agent_stamp_after(void);
uint32_t agent_gettid_cached(void); /* the calling thread's id, read once */

/* ---- hooks.c: the allocator entry points ---- */

/* Looks the real allocator up (dlsym(RTLD_NEXT)); calls made meanwhile are
 * served from the bootstrap buffer. */
void agent_resolve(void);
/* Whether an allocation of size bytes is sampled (Poisson sampling by bytes;
 * always in full mode), counted against the thread's sampling distance. */
int agent_should_sample(size_t size);
/* Wraps the image's CPython object allocators; 1 when they are now wrapped. */
int agent_py_hook_install(void);

/* ---- stacks.c: an allocation's stacks ---- */

/* dl_iterate_phdr callback: finds the agent's own code (data: an address in
 * it), whose frames stacks leave out. */
int agent_find_self(struct dl_phdr_info *info, size_t size, void *data);
/* Turns the frame-pointer walk on when SONDE_ALLOC_FP_EXE names this image's
 * executable. */
void agent_fp_setup(void);
/* Records an allocation (guard held): its time, stacks and the event, into the
 * thread's buffer. size may carry ALLOC_SIZE_MMAP. */
void agent_record_alloc(void *ptr, size_t size);

/* ---- buffers.c: the thread's record buffer ---- */

/* Writes the buffer to the channel and empties it (b locked by the caller). */
void agent_tbuf_flush(struct tbuf *b);
void agent_tbuf_lock(struct tbuf *b);
void agent_tbuf_unlock(struct tbuf *b);
/* Makes the thread send every stack again (records may have been lost). */
void agent_tbuf_forget(struct tbuf *b);
/* The buffer key's destructor: flushes and unmaps the exiting thread's buffer. */
void agent_thread_gone(void *arg);
/* Appends one record other than EVENTS (rec->h.len set), or writes it through. */
void agent_emit(void *rec);
/* Appends one allocation (tag ALLOC_EV_ALLOC, stack ips, Python stack py or
 * NULL) or free (ALLOC_EV_FREE) at time t, with the stacks' records it needs. */
void agent_emit_event(int tag, uint64_t t, uint64_t ptr, uint64_t size, const uint64_t *ips,
		      int n, union pystack_rec *py);

/* ---- channel.c: the image's file in sonde's directory ---- */

/* -1 when sonde is gone (the file is then removed and the agent disabled);
 * checked at most once a second unless always. */
int agent_host_check(int always);
/* 0 when agent_out_fd is (again) the agent's file. */
int agent_chan_check(void);
/* Writes len bytes to the channel, never blocking; 0 when all went out. */
int agent_write_all(const void *data, size_t len);
/* Sends the module list again when a library was loaded since it was sent. */
void agent_modules_refresh(void);
/* Opens the image's file and sends its header (forked: 1 in a fork child) and
 * its modules. */
void agent_channel_open(int forked);

#pragma GCC visibility pop

#endif
