/* alloc agent: libsonde_alloc.so, preloaded into the target by `sonde run
 * --memory`. It interposes the malloc family, stamps each (sampled) allocation
 * with its time, thread and return addresses, and streams records to sonde
 * through the file named by SONDE_ALLOC_DIR (see alloc_wire.h).
 *
 * Rules this file lives by: it never allocates from the heap (buffers come
 * from mmap), a thread-local guard makes every hook re-entrant (the unwinder or
 * the loader may call malloc), and calls made while the real allocator is
 * still being looked up are served from a static bump buffer. */
#include "alloc_wire.h"
#include "cfi.h"
#include "pystack.h"
#include "../../util/tsc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

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

/* ---- the real allocator, and the bootstrap buffer ---- */

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

/* dlsym itself may call calloc: those calls, and any before resolution ends,
 * get memory from here; it is never given back. */
static _Alignas(64) unsigned char boot_buf[64 * 1024];
static size_t boot_used;
static int resolving;

static int is_boot(const void *p)
{
	return (const unsigned char *)p >= boot_buf && (const unsigned char *)p < boot_buf + sizeof(boot_buf);
}

static void *boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	/* A 16-byte header before the block keeps its size for realloc. */
	size_t start = (boot_used + 16 + align - 1) & ~(align - 1);
	if (start + size > sizeof(boot_buf) || start + size < start)
		return NULL;
	((size_t *)(boot_buf + start))[-1] = size;
	boot_used = start + size;
	return boot_buf + start; /* static storage: already zero */
}

static void resolve(void)
{
	if (real_malloc || resolving)
		return;
	resolving = 1;
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	real_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
	void *m = dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
	real_malloc = (void *(*)(size_t))m; /* last: it tells the others are ready */
}

/* ---- state ---- */

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
};

static int out_fd = -1;
static int enabled;
static int exiting;
static uint64_t interval_bytes; /* 0: full */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tbuf *buffers;
static pthread_key_t buf_key;
static uintptr_t self_start, self_end; /* our own code, skipped in stacks */
static atomic_int all_frees;		/* the sampled-pointer set overflowed */
/* The clock of this image (alloc_wire.h) and its ages in its own units. */
static int use_tsc;
static uint64_t flush_age = AGENT_FLUSH_AGE_NS, modules_age = AGENT_MODULES_CHECK_NS;

static AGENT_TLS int in_hook;
static AGENT_TLS struct tbuf *my_buf;
static AGENT_TLS int thread_done;
static AGENT_TLS int64_t until_sample;
static AGENT_TLS uint64_t rng_state;
static AGENT_TLS uint64_t modules_checked_t;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Stamps in the image's clock: before the work the time must precede (a
 * free), and after the work it must follow (an alloc: the counter read waits
 * for the allocator's loads). */
static uint64_t stamp_before(void)
{
	return use_tsc ? tsc_read() : now_ns();
}

static uint64_t stamp_after(void)
{
	return use_tsc ? tsc_read_ordered() : now_ns();
}

static void clock_setup(void)
{
	const char *c = getenv(ALLOC_ENV_CLOCK);
	use_tsc = TSC_SUPPORTED && c && !strcmp(c, "tsc");
	if (use_tsc) {
		flush_age = AGENT_FLUSH_AGE_TICKS;
		modules_age = AGENT_MODULES_CHECK_TICKS;
	}
}

static AGENT_TLS uint32_t my_tid;
static int py_hooked; /* CPython's object allocators are wrapped (see below) */
static int py_hook_install(void);

static uint32_t gettid_cached(void)
{
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	return my_tid;
}

/* The channel's identity: a program may close every descriptor it did not
 * open (daemons, shells) and get our number back for a file of its own. Every
 * write first checks that the descriptor is still our file, and reopens it by
 * name when it is not; the program's descriptor is left alone. */
static char chan_path[ALLOC_WIRE_MAX_PATH + 32];
static char chan_dir[ALLOC_WIRE_MAX_PATH + 1];
static dev_t chan_dev;
static ino_t chan_ino;
static atomic_int chan_reopening;

/* sonde holds an exclusive flock on the directory while it reads it. When
 * sonde is gone (killed), the images that outlive it remove their files and
 * stop writing, so /tmp never fills with records nobody reads. Checked at most
 * once a second, from the write path only. */
#define HOST_CHECK_NS 1000000000LL
static atomic_int host_lost;
static _Atomic int64_t host_checked_ns;

static int host_gone(void)
{
	int fd = open(chan_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT; /* sonde removed the directory: it is done */
	int gone = flock(fd, LOCK_SH | LOCK_NB) == 0;
	close(fd); /* drops our shared lock at once */
	return gone;
}

/* Our file goes, and the directory with the last one (rmdir fails while
 * another image's file is still there). */
static void chan_remove(void)
{
	if (atomic_exchange(&host_lost, 1))
		return;
	enabled = 0;
	int fd = out_fd;
	out_fd = -1;
	if (fd >= 0)
		close(fd);
	if (chan_path[0])
		unlink(chan_path);
	chan_path[0] = '\0';
	rmdir(chan_dir);
}

static int host_check(int always)
{
	if (atomic_load(&host_lost))
		return -1;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	int64_t t = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	int64_t last = atomic_load(&host_checked_ns);
	if (!always && t - last < HOST_CHECK_NS)
		return 0;
	if (!always && !atomic_compare_exchange_strong(&host_checked_ns, &last, t))
		return 0; /* another thread checks */
	if (!chan_dir[0] || !host_gone())
		return 0;
	chan_remove();
	return -1;
}

static int chan_open_fd(void)
{
	int fd = open(chan_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	/* Out of the way of programs that expect their next descriptor to be 3. */
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 512);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	chan_dev = st.st_dev;
	chan_ino = st.st_ino;
	return fd;
}

static int chan_check(void)
{
	struct stat st;
	int fd = out_fd;
	if (fd >= 0 && !fstat(fd, &st) && st.st_dev == chan_dev && st.st_ino == chan_ino)
		return 0;
	if (atomic_exchange(&chan_reopening, 1))
		return -1; /* another thread is at it: drop this chunk */
	out_fd = chan_path[0] ? chan_open_fd() : -1;
	atomic_store(&chan_reopening, 0);
	return out_fd >= 0 ? 0 : -1;
}

/* Returns 0 when every byte went out. */
static int write_all(const void *data, size_t len)
{
	const unsigned char *p = data;
	if (host_check(0) || chan_check())
		return -1;
	while (len && out_fd >= 0) {
		ssize_t n = write(out_fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1; /* sonde went away or the disk is full: drop, never block */
		p += n;
		len -= (size_t)n;
	}
	return len ? -1 : 0;
}

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

/* Records of the thread may have been lost: it sends every stack again. */
static void tbuf_forget(struct tbuf *b)
{
	scache_reset(&b->native);
	scache_reset(&b->python);
	b->last_id = 0;
}

/* ---- per-thread buffers ---- */

static void tbuf_flush(struct tbuf *b)
{
	pack_close(b->data, &b->len, &b->pk);
	/* Lost bytes may hold stack records: the thread sends its stacks again. */
	if (b->len && write_all(b->data, b->len))
		tbuf_forget(b);
	b->len = 0;
}

static void tbuf_lock(struct tbuf *b)
{
	while (atomic_exchange_explicit(&b->busy, 1, memory_order_acquire))
		;
}

static void tbuf_unlock(struct tbuf *b)
{
	atomic_store_explicit(&b->busy, 0, memory_order_release);
}

/* Flushes when the oldest record is older than the flush age (the counter
 * of another CPU may read a little behind: only a positive age counts). */
static void tbuf_aged(struct tbuf *b, uint64_t t)
{
	if ((int64_t)(t - b->first_t) > (int64_t)flush_age)
		tbuf_flush(b);
}

static void thread_gone(void *arg)
{
	struct tbuf *b = arg;
	thread_done = 1;
	pthread_mutex_lock(&list_lock);
	for (struct tbuf **pp = &buffers; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	pthread_mutex_unlock(&list_lock);
	tbuf_lock(b);
	tbuf_flush(b);
	munmap(b, sizeof(*b));
	my_buf = NULL;
}

static struct tbuf *thread_buf(void)
{
	if (my_buf || thread_done)
		return my_buf;
	/* The stack cache's pages are touched only as they fill. */
	void *m = mmap(NULL, sizeof(struct tbuf), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	struct tbuf *b = m;
	b->tid = gettid_cached();
	b->pk.batch = PACK_NONE;
	pthread_mutex_lock(&list_lock);
	b->next = buffers;
	buffers = b;
	pthread_mutex_unlock(&list_lock);
	my_buf = b;
	pthread_setspecific(buf_key, b);
	return b;
}

/* Appends one record (ALLOC_REC_* other than EVENTS); rec->h.len must be set.
 * Writes through when the thread has no buffer (after its exit handlers) or
 * the process is exiting. */
static void emit(void *rec)
{
	struct alloc_rec_head *h = rec;
	if (out_fd < 0)
		return;
	struct tbuf *b = exiting ? NULL : thread_buf();
	if (!b) {
		write_all(rec, h->len);
		return;
	}
	tbuf_lock(b);
	pack_close(b->data, &b->len, &b->pk);
	if (b->len + h->len > sizeof(b->data))
		tbuf_flush(b);
	if (!b->len)
		b->first_t = h->t;
	memcpy(b->data + b->len, rec, h->len);
	b->len += h->len;
	tbuf_aged(b, h->t);
	tbuf_unlock(b);
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

/* The id of the thread's Python stack py, sent first (under that id) when
 * the thread has not sent it since its cache last started over. */
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
static void emit_event(int tag, uint64_t t, uint64_t ptr, uint64_t size, const uint64_t *ips,
		       int n, union pystack_rec *py)
{
	if (out_fd < 0)
		return;
	if (py)
		tag = ALLOC_EV_ALLOC_PY;
	struct tbuf *b = exiting ? NULL : thread_buf();
	if (!b) {
		_Alignas(8) unsigned char raw[EVENT_ROOM];
		struct packer pk = { PACK_NONE, 0, 0 };
		size_t len = 0;
		if (py) {
			py->p.id = 0;
			memcpy(raw, py, py->p.h.len);
			len = py->p.h.len;
		}
		if (tag != ALLOC_EV_FREE)
			len += pack_stack(raw + len, gettid_cached(), t, 0, ips, n);
		pack_event(raw, &len, &pk, gettid_cached(), tag, t, ptr, size, 0, 0);
		pack_close(raw, &len, &pk);
		write_all(raw, len);
		return;
	}
	tbuf_lock(b);
	if (b->len + EVENT_ROOM > sizeof(b->data))
		tbuf_flush(b);
	if (!b->len)
		b->first_t = t;
	uint32_t id = tag != ALLOC_EV_FREE ? stack_id_put(b, t, ips, n) : 0;
	uint32_t pyid = py ? pystack_id_put(b, py) : 0;
	pack_event(b->data, &b->len, &b->pk, b->tid, tag, t, ptr, size, id, pyid);
	tbuf_aged(b, t);
	tbuf_unlock(b);
}

/* ---- module list, for the reader's symbolizer ---- */

static int put_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	char path[ALLOC_WIRE_MAX_PATH];
	const char *name = info->dlpi_name;
	if (!name || !name[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		if (n <= 0)
			return 0;
		path[n] = '\0';
		name = path;
	}
	if (name[0] != '/')
		return 0; /* the vDSO and other objects without a file */
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		lo = s < lo ? s : lo;
		hi = e > hi ? e : hi;
	}
	if (lo >= hi)
		return 0;
	size_t plen = strlen(name);
	if (plen >= ALLOC_WIRE_MAX_PATH)
		return 0;
	union {
		struct alloc_rec_module m;
		unsigned char raw[sizeof(struct alloc_rec_module) + ALLOC_WIRE_MAX_PATH + 8];
	} r;
	memset(&r.m, 0, sizeof(r.m));
	size_t len = (sizeof(r.m) + plen + 1 + 7) & ~(size_t)7;
	memset(r.raw + sizeof(r.m), 0, len - sizeof(r.m));
	memcpy(r.raw + sizeof(r.m), name, plen);
	r.m.h = (struct alloc_rec_head){ ALLOC_REC_MODULE, (uint16_t)len, gettid_cached(),
					  stamp_before() };
	r.m.bias = info->dlpi_addr;
	r.m.start = lo;
	r.m.end = hi;
	emit(&r);
	return 0;
}

/* Loads counter of the loader: when it moves, a library was loaded since the
 * modules were last sent. Cheaper and safer than wrapping dlopen, which would
 * make the agent the caller whose RUNPATH the loader searches. */
static _Atomic unsigned long long modules_sent_adds;

static int read_adds(struct dl_phdr_info *info, size_t size, void *data)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
		*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

static void modules_refresh(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(read_adds, &adds);
	/* One thread sends the news; a duplicate would be harmless anyway. */
	if (atomic_exchange(&modules_sent_adds, adds) == adds)
		return;
	/* New code may sit where unloaded code was: its unwind rules go. */
	cfi_cache_flush();
	dl_iterate_phdr(put_module, NULL);
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t me = (uintptr_t)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= s && me < s + ph->p_memsz) {
			self_start = s;
			self_end = s + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* ---- frame-pointer walk ----
 *
 * When sonde found that the program keeps frame pointers (SONDE_ALLOC_FP_EXE
 * names it, and it is this image's executable), the frames inside the
 * executable are walked by their saved frame pointers: a few loads each,
 * against 1-2 us for libgcc's DWARF unwinder. A frame pointer is followed only
 * when the return address read beside it lies in the executable's code (so the
 * function that saved it keeps frame pointers) and it stays inside the thread's
 * stack, above the previous one. The walk ends at the first return address
 * outside the executable: if that frame (address and frame position) is the
 * thread's start (main's caller in libc, start_thread), learnt from an earlier
 * DWARF unwind of the same thread, its outer frames are appended from that
 * cache; anything else (a callback from qsort, an allocation made inside a
 * library) is unwound with DWARF as before. */
static int fp_walk;
static uintptr_t exe_start, exe_end;
#define TAIL_MAX 8
static AGENT_TLS uintptr_t stack_lo, stack_hi; /* 0: not known yet */
static AGENT_TLS uintptr_t tail_ip, tail_cfa;
static AGENT_TLS int tail_n;
static AGENT_TLS uint64_t tail_ips[TAIL_MAX];

static int find_exe(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0; /* the executable comes first, with an empty name */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			exe_start = info->dlpi_addr + ph->p_vaddr;
			exe_end = exe_start + ph->p_memsz;
			return 1;
		}
	}
	return 1;
}

static void fp_setup(void)
{
	const char *want = getenv(ALLOC_ENV_FP_EXE);
	char exe[ALLOC_WIRE_MAX_PATH];
	if (!want || !*want)
		return;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	if (strcmp(exe, want))
		return; /* an exec'd program that was not checked */
	dl_iterate_phdr(find_exe, NULL);
	fp_walk = exe_end > exe_start;
}

static int in_exe(uintptr_t ip)
{
	return ip >= exe_start && ip < exe_end;
}

static int thread_stack(void)
{
	if (stack_hi)
		return 1;
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a))
		return 0;
	int ok = !pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	if (!ok)
		return 0;
	stack_lo = (uintptr_t)addr;
	stack_hi = stack_lo + size;
	return 1;
}

/* Fills ips (innermost first, the agent's frames left out); returns the count,
 * or -1 when this stack needs the DWARF unwinder. */
__attribute__((noinline)) static int fp_backtrace(uint64_t *ips, int max)
{
	if (!thread_stack())
		return -1;
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t lo = fp;
	int n = 0, outside_self = 0;
	while (n < max) {
		if (fp < lo || fp & 7 || fp < stack_lo || fp + 16 > stack_hi)
			return -1;
		uintptr_t next = ((const uintptr_t *)fp)[0];
		uintptr_t ip = ((const uintptr_t *)fp)[1];
		uintptr_t cfa = fp + 16;
		if (!outside_self && ip >= self_start && ip < self_end) {
			lo = cfa;
			fp = next;
			continue;
		}
		outside_self = 1;
		if (in_exe(ip)) {
			ips[n++] = ip;
			lo = cfa;
			fp = next;
			continue;
		}
		if (n && tail_n && ip == tail_ip && cfa == tail_cfa) {
			for (int k = 0; k < tail_n && n < max; k++)
				ips[n++] = tail_ips[k];
			return n;
		}
		return -1;
	}
	return n;
}

/* After a DWARF unwind: remember the thread's start frames, the part that the
 * frame-pointer walk cannot do (see above). cfas[k] is the CFA of the frame
 * that returns to ips[k] (its return address sits at cfas[k] - 8). */
static void fp_learn(const uint64_t *ips, const uint64_t *cfas, int n)
{
	int j = 0;
	if (!n || !in_exe(ips[0]))
		return; /* allocated inside a library: the walk never starts there */
	while (j < n && in_exe(ips[j]))
		j++;
	if (j == n || n - j > TAIL_MAX)
		return;
	for (int k = j; k < n - 1; k++)
		if (in_exe(ips[k]))
			return; /* the program again further out: not a start */
	tail_ip = ips[j];
	tail_cfa = cfas[j];
	tail_n = n - j;
	for (int k = 0; k < tail_n; k++)
		tail_ips[k] = ips[j + k];
}

/* ---- the channel ---- */

static char *fmt_uint(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = tmp[--n];
	*p = '\0';
	return p;
}

static void channel_open(int forked)
{
	const char *dir = getenv(ALLOC_ENV_DIR);
	char path[sizeof(chan_path)];
	if (!dir || strlen(dir) >= ALLOC_WIRE_MAX_PATH || atomic_load(&host_lost))
		return;
	size_t dl = strlen(dir);
	memcpy(chan_dir, dir, dl + 1);
	memcpy(path, dir, dl);
	path[dl] = '/';
	fmt_uint(path + dl + 1, (uint64_t)getpid());
	memcpy(chan_path, path, sizeof(chan_path));
	out_fd = chan_open_fd();
	if (out_fd < 0)
		return;
	struct alloc_rec_header hd;
	memset(&hd, 0, sizeof(hd));
	hd.h = (struct alloc_rec_head){ ALLOC_REC_HEADER, sizeof(hd), gettid_cached(), stamp_before() };
	hd.magic = ALLOC_WIRE_MAGIC;
	hd.version = ALLOC_WIRE_VERSION;
	hd.pid = (uint32_t)getpid();
	hd.ppid = (uint32_t)getppid();
	hd.forked = (uint32_t)forked;
	hd.interval_bytes = interval_bytes;
	hd.clock = use_tsc ? ALLOC_CLOCK_TSC : ALLOC_CLOCK_MONOTONIC;
	hd.flags = py_hooked ? ALLOC_HDR_PYMEM : 0;
	/* Header and modules go out at once: a short-lived image is still readable. */
	write_all(&hd, sizeof(hd));
	atomic_store(&modules_sent_adds, 0);
	modules_refresh();
	if (my_buf) {
		tbuf_lock(my_buf);
		tbuf_flush(my_buf);
		tbuf_unlock(my_buf);
	}
}

static void at_fork_prepare(void)
{
	in_hook++;
	if (my_buf) {
		tbuf_lock(my_buf);
		tbuf_flush(my_buf);
		tbuf_unlock(my_buf);
	}
}

static void at_fork_parent(void)
{
	in_hook--;
}

static void at_fork_child(void)
{
	/* Only the forking thread survives; the other buffers belong to the parent. */
	my_tid = 0;
	if (my_buf) {
		/* The child's file is new: its stacks have not been sent there. */
		my_buf->len = 0;
		my_buf->pk.batch = PACK_NONE;
		tbuf_forget(my_buf);
		my_buf->tid = gettid_cached();
		my_buf->next = NULL;
		atomic_store(&my_buf->busy, 0);
	}
	buffers = my_buf;
	pthread_mutex_init(&list_lock, NULL);
	if (out_fd >= 0 && !chan_check())
		close(out_fd); /* the parent's file, still ours to close */
	out_fd = -1;
	channel_open(1);
	in_hook--;
}

__attribute__((constructor)) static void agent_init(void)
{
	in_hook++;
	resolve();
	const char *iv = getenv(ALLOC_ENV_INTERVAL);
	interval_bytes = iv ? strtoull(iv, NULL, 10) : 0;
	clock_setup();
	pthread_key_create(&buf_key, thread_gone);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&agent_init);
	fp_setup();
	pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
	const char *pymem = getenv(ALLOC_ENV_PYMEM);
	if (getenv(ALLOC_ENV_DIR) && !(pymem && !strcmp(pymem, "0")))
		py_hooked = py_hook_install();
	channel_open(0);
	enabled = out_fd >= 0;
	in_hook--;
}

__attribute__((destructor)) static void agent_fini(void)
{
	if (out_fd < 0 || host_check(1))
		return;
	in_hook++;
	modules_refresh(); /* libraries loaded since the last check */
	exiting = 1;
	pthread_mutex_lock(&list_lock);
	for (struct tbuf *b = buffers; b; b = b->next) {
		/* A thread still appending keeps its buffer: never wait on it here. */
		if (atomic_exchange(&b->busy, 1))
			continue;
		tbuf_flush(b);
		tbuf_unlock(b);
	}
	pthread_mutex_unlock(&list_lock);
	struct alloc_rec_head ex = { ALLOC_REC_EXIT, sizeof(ex), gettid_cached(), stamp_after() };
	write_all(&ex, sizeof(ex));
	in_hook--;
}

/* ---- sampling ---- */

/* The set of live sampled pointers, so a free is only sent for those.
 * Open addressing over atomics; 1 marks a deleted slot. The table (512 KiB)
 * is too big for the cache, so every free first asks a counting filter of
 * 16 KiB, which stays in L1: zero means no sampled pointer hashes there (the
 * common case; a table probe on every free doubled the cost of free). A
 * counter that reaches 255 sticks there. */
#define SAMPLED_SLOTS (1u << 16)
#define SAMPLED_PROBES 64
#define FILTER_SLOTS (1u << 14)
static _Atomic uintptr_t sampled[SAMPLED_SLOTS];
static _Atomic unsigned char sampled_filter[FILTER_SLOTS];
static atomic_long sampled_live; /* sampled pointers in the table (0: skip it all) */

static size_t slot_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ULL >> 48) & (SAMPLED_SLOTS - 1);
}

static size_t filter_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0xC2B2AE3D27D4EB4FULL >> 50) & (FILTER_SLOTS - 1);
}

static void filter_add(uintptr_t p, int delta)
{
	_Atomic unsigned char *c = &sampled_filter[filter_of(p)];
	unsigned char cur = atomic_load_explicit(c, memory_order_relaxed);
	while (cur != 255 && !(delta < 0 && cur == 0) &&
	       !atomic_compare_exchange_weak(c, &cur, (unsigned char)(cur + delta)))
		;
}

static void sampled_add(uintptr_t p)
{
	atomic_fetch_add_explicit(&sampled_live, 1, memory_order_relaxed);
	filter_add(p, 1); /* before the table: a free never misses it */
	size_t i = slot_of(p);
	for (int k = 0; k < SAMPLED_PROBES; k++, i = (i + 1) & (SAMPLED_SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&sampled[i], memory_order_relaxed);
		if ((cur == 0 || cur == 1) &&
		    atomic_compare_exchange_strong(&sampled[i], &cur, p))
			return;
	}
	atomic_store(&all_frees, 1);
}

static int sampled_take(uintptr_t p)
{
	if (!atomic_load_explicit(&sampled_filter[filter_of(p)], memory_order_relaxed))
		return 0;
	size_t i = slot_of(p);
	for (int k = 0; k < SAMPLED_PROBES; k++, i = (i + 1) & (SAMPLED_SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&sampled[i], memory_order_relaxed);
		if (cur == 0)
			return 0;
		if (cur == p && atomic_compare_exchange_strong(&sampled[i], &cur, 1)) {
			filter_add(p, -1);
			atomic_fetch_sub_explicit(&sampled_live, 1, memory_order_relaxed);
			return 1;
		}
	}
	return 0;
}

static double rng_uniform(void)
{
	if (!rng_state)
		rng_state = now_ns() ^ ((uint64_t)gettid_cached() << 32) ^ 0x2545F4914F6CDD1DULL;
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	uint64_t r = rng_state * 0x2545F4914F6CDD1DULL;
	return ((double)(r >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

static int64_t next_distance(void)
{
	return (int64_t)(-log(rng_uniform()) * (double)interval_bytes) + 1;
}

/* Poisson sampling by bytes: every byte is a sample point with probability
 * 1/interval, so an allocation of n bytes is recorded with probability
 * 1 - exp(-n/interval); the reader weights it by the inverse. */
static int should_sample(size_t size)
{
	if (!interval_bytes)
		return 1;
	if (until_sample <= 0)
		until_sample = next_distance();
	until_sample -= (int64_t)size;
	if (until_sample > 0)
		return 0;
	until_sample = next_distance();
	return 1;
}

/* ---- stacks ---- */

struct unwind_state {
	uint64_t *ips;
	uint64_t cfas[ALLOC_WIRE_MAX_FRAMES]; /* for fp_learn */
	int n, max;
	uintptr_t stop_start, stop_end; /* the walk ends at a frame in there */
};

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_state *u = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);
	if (!ip)
		return _URC_END_OF_STACK;
	if (ip >= self_start && ip < self_end)
		return _URC_NO_REASON; /* the agent's own frames */
	/* libgcc hands over a frame's IP with its callee's CFA (the context is
	 * updated after the callback), which is the key fp_backtrace sees. */
	u->cfas[u->n] = _Unwind_GetCFA(ctx);
	u->ips[u->n++] = ip;
	if (ip >= u->stop_start && ip < u->stop_end)
		return _URC_END_OF_STACK;
	return u->n < u->max ? _URC_NO_REASON : _URC_END_OF_STACK;
}

static void record_alloc(void *ptr, size_t size)
{
	uint64_t t = stamp_after();
	union pystack_rec py; /* the thread's Python frames, sent just before the event */
	int has_py = pystack_capture(&py, gettid_cached(), t);
	uint64_t ips[ALLOC_WIRE_MAX_FRAMES];
	int n = fp_walk ? fp_backtrace(ips, ALLOC_WIRE_MAX_FRAMES) : -1;
	if (n < 0) {
		struct unwind_state u = { .ips = ips, .max = ALLOC_WIRE_MAX_FRAMES };
		/* With Python frames, the native ones above the innermost bytecode
		 * loop are the interpreter's own (the reader drops them): stop there.
		 * In libpython, built without frame pointers, each frame is a DWARF
		 * step, so this saves most of the walk. */
		if (has_py)
			pystack_eval_range(&u.stop_start, &u.stop_end);
		/* The cached unwinder first; libgcc's for what it cannot do. */
		if (thread_stack()) {
			struct cfi_limits lim = { stack_lo, stack_hi, self_start, self_end,
						  u.stop_start, u.stop_end };
			n = cfi_backtrace(ips, u.cfas, u.max, &lim);
		}
		if (n < 0) {
			_Unwind_Backtrace(unwind_step, &u);
			n = u.n;
		}
		if (fp_walk)
			fp_learn(ips, u.cfas, n);
	}
	/* The reader symbolizes after the run with every module it was told of,
	 * so late news of a library is fine: look at most every 10 ms (the check
	 * takes the loader's lock). */
	if ((int64_t)(t - modules_checked_t) > (int64_t)modules_age) {
		modules_checked_t = t;
		modules_refresh();
	}
	emit_event(ALLOC_EV_ALLOC, t, (uintptr_t)ptr, size, ips, n, has_py ? &py : NULL);
	/* sonde resolves Python frames while the process lives: a sample (rare),
	 * or in full mode a Python stack sent for the first time, goes out now,
	 * not with a later flush, which may come only at exit. */
	if (has_py && my_buf && (interval_bytes || my_buf->py_new)) {
		my_buf->py_new = 0;
		tbuf_lock(my_buf);
		tbuf_flush(my_buf);
		tbuf_unlock(my_buf);
	}
}

/* The hooks' work is split: an inline fast path that most calls of sampled
 * mode leave at once, and an out-of-line rest, so the fast path saves no
 * registers (the prologue of the whole thing cost more than the checks). */
__attribute__((noinline)) static void alloc_slow(void *ptr, size_t size)
{
	if (!ptr || !enabled || in_hook)
		return;
	in_hook++;
	if (should_sample(size)) {
		if (interval_bytes)
			sampled_add((uintptr_t)ptr);
		record_alloc(ptr, size);
	}
	in_hook--;
}

static inline void on_alloc(void *ptr, size_t size)
{
	/* Sampled mode, not this time: what should_sample would do, minus the draw. */
	if (interval_bytes && until_sample > 0 && (int64_t)size < until_sample) {
		until_sample -= (int64_t)size;
		return;
	}
	alloc_slow(ptr, size);
}

__attribute__((noinline)) static void free_slow(void *ptr, int filtered)
{
	if (!ptr || !enabled || in_hook)
		return;
	if (filtered && !sampled_take((uintptr_t)ptr))
		return;
	in_hook++;
	emit_event(ALLOC_EV_FREE, stamp_before(), (uintptr_t)ptr, 0, NULL, 0, NULL);
	in_hook--;
}

/* A free in sampled mode while the sampled set holds: sent only for a
 * sampled pointer. Most leave at the live count, then at the filter, which
 * stays in the cache: no call for most frees. */
static inline void on_free_sampled(void *ptr)
{
	if (!atomic_load_explicit(&sampled_live, memory_order_relaxed))
		return;
	if (!atomic_load_explicit(&sampled_filter[filter_of((uintptr_t)ptr)],
				  memory_order_relaxed))
		return;
	free_slow(ptr, 1);
}

/* Every free is sent: full mode, or the sampled set overflowed. */
static inline int frees_all(void)
{
	return !interval_bytes || atomic_load_explicit(&all_frees, memory_order_relaxed);
}

static inline void on_free(void *ptr)
{
	if (frees_all())
		free_slow(ptr, 0);
	else
		on_free_sampled(ptr);
}

/* ---- the hooks ---- */

AGENT_EXPORT void *malloc(size_t size)
{
	if (!real_malloc) {
		resolve();
		if (!real_malloc)
			return boot_alloc(size, 16);
	}
	void *p = real_malloc(size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void free(void *ptr)
{
	if (!ptr || is_boot(ptr) || !real_free)
		return;
	on_free(ptr);
	real_free(ptr);
}

AGENT_EXPORT void *calloc(size_t n, size_t size)
{
	if (!real_malloc) {
		resolve();
		if (!real_malloc) {
			size_t total;
			if (__builtin_mul_overflow(n, size, &total))
				return NULL;
			return boot_alloc(total, 16);
		}
	}
	void *p = real_calloc(n, size);
	on_alloc(p, n * size);
	return p;
}

AGENT_EXPORT void *realloc(void *ptr, size_t size)
{
	if (!real_malloc)
		resolve();
	if (ptr && is_boot(ptr)) {
		void *p = malloc(size);
		size_t old = ((size_t *)ptr)[-1];
		if (p)
			memcpy(p, ptr, old < size ? old : size);
		return p;
	}
	if (!real_malloc)
		return boot_alloc(size, 16);
	/* The old block may be released inside realloc: its free goes first. */
	if (ptr)
		on_free(ptr);
	void *p = real_realloc(ptr, size);
	if (p)
		on_alloc(p, size);
	else if (ptr && size)
		on_alloc(ptr, malloc_usable_size(ptr)); /* failed: the old block lives on */
	return p;
}

AGENT_EXPORT void *reallocarray(void *ptr, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, total);
}

AGENT_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (!real_malloc) {
		resolve();
		if (!real_malloc) {
			void *p = boot_alloc(size, align);
			if (!p)
				return ENOMEM;
			*out = p;
			return 0;
		}
	}
	int rc = real_posix_memalign(out, align, size);
	if (!rc)
		on_alloc(*out, size);
	return rc;
}

AGENT_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (!real_malloc) {
		resolve();
		if (!real_malloc)
			return boot_alloc(size, align);
	}
	void *p = real_aligned_alloc ? real_aligned_alloc(align, size) : real_memalign(align, size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void *memalign(size_t align, size_t size)
{
	if (!real_malloc) {
		resolve();
		if (!real_malloc)
			return boot_alloc(size, align);
	}
	void *p = real_memalign(align, size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void *valloc(size_t size)
{
	if (!real_malloc) {
		resolve();
		if (!real_malloc)
			return boot_alloc(size, 4096);
	}
	void *p = real_valloc(size);
	on_alloc(p, size);
	return p;
}

AGENT_EXPORT void *pvalloc(size_t size)
{
	if (!real_malloc) {
		resolve();
		if (!real_malloc)
			return boot_alloc(size, 4096);
	}
	void *p = real_pvalloc(size);
	on_alloc(p, size);
	return p;
}

/* ---- CPython's object allocators ----
 *
 * CPython serves its small objects from pymalloc's arenas (256 KiB, 1 MiB
 * from 3.10), which the hooks above see only as arenas. In an image with a
 * CPython 3.8 or later (its API exported by the executable or a library it
 * was linked with), the agent wraps the allocators of the MEM and OBJ
 * domains before the interpreter starts, with PyMem_SetAllocator (the hook
 * tracemalloc uses): every small object is sampled like a malloc, and
 * pymalloc keeps serving it (PYTHONMALLOC=malloc, the other way to see
 * objects, costs the program up to a fifth of its time). Both domains are
 * called with the GIL held.
 *
 * Nothing is counted twice: pymalloc hands a request above its small-object
 * limit to malloc, so the wrappers pass those through untouched and the
 * malloc hooks record them; the arenas' own mappings are made under the
 * re-entrancy guard (the arena allocator is wrapped too), so they are not
 * allocations. A realloc may move a block between pymalloc and malloc: it
 * runs under the guard, with the sampling distance put back afterwards (a
 * byte is not drawn twice), and is recorded here. In full mode a free also
 * runs under the guard: the malloc hooks would send a large block's free a
 * second time (and in sampled mode once every free is sent).
 *
 * Only 3.8 and later are wrapped (3.6 and 3.7 reset their allocators after
 * the agent's constructor, 3.5 serves PyMem_Malloc with malloc). When
 * PYTHONMALLOC or PYTHONDEVMODE is set, or CPython was built without pymalloc
 * or free-threaded, the agent leaves the allocators alone (with
 * PYTHONMALLOC=malloc the objects are malloc'd, and seen anyway). Should
 * CPython still replace the wrappers at start (-X dev, an embedder's
 * PyPreConfig), the next arena the agent sees says so: from then on arenas
 * are not guarded (they count as mappings, as without the wrappers) and an
 * ALLOC_REC_PYMEM_LOST record tells the reader. */
struct py_allocator { /* PyMemAllocatorEx */
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t size);
	void (*free)(void *ctx, void *ptr);
};

struct py_arena_allocator { /* PyObjectArenaAllocator */
	void *ctx;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
};

enum { PY_DOMAIN_RAW = 0, PY_DOMAIN_MEM = 1, PY_DOMAIN_OBJ = 2 }; /* PyMemAllocatorDomain */

/* pymalloc's SMALL_REQUEST_THRESHOLD: larger requests (and empty ones) go to
 * PyMem_RawMalloc, so to the malloc hooks. */
#define PY_SMALL_BYTES 512

/* The wrapped allocators (each wrapper's context). */
static struct py_allocator py_wrapped[3];
static struct py_arena_allocator py_arena;
static void (*py_get_allocator)(int, struct py_allocator *);
static atomic_int py_lost; /* CPython replaced the wrappers */

/* A small object, sampled or in full mode: allocated, then recorded. */
__attribute__((noinline)) static void *py_malloc_record(const struct py_allocator *o, size_t size)
{
	void *p = o->malloc(o->ctx, size);
	alloc_slow(p, size);
	return p;
}

/* The common case is one countdown and a tail call. */
static void *py_malloc(void *ctx, size_t size)
{
	const struct py_allocator *o = ctx;
	if (size - 1 >= PY_SMALL_BYTES) /* 0 or above the limit */
		return o->malloc(o->ctx, size);
	if (interval_bytes && until_sample > (int64_t)size) {
		until_sample -= (int64_t)size;
		return o->malloc(o->ctx, size);
	}
	return py_malloc_record(o, size);
}

__attribute__((noinline)) static void *py_calloc_record(const struct py_allocator *o,
							size_t nelem, size_t elsize, size_t size)
{
	void *p = o->calloc(o->ctx, nelem, elsize);
	alloc_slow(p, size);
	return p;
}

static void *py_calloc(void *ctx, size_t nelem, size_t elsize)
{
	const struct py_allocator *o = ctx;
	size_t size;
	if (__builtin_mul_overflow(nelem, elsize, &size) || size - 1 >= PY_SMALL_BYTES)
		return o->calloc(o->ctx, nelem, elsize);
	if (interval_bytes && until_sample > (int64_t)size) {
		until_sample -= (int64_t)size;
		return o->calloc(o->ctx, nelem, elsize);
	}
	return py_calloc_record(o, nelem, elsize, size);
}

/* The old block's free goes first, as for realloc; if the call fails the old
 * block stays with the program but not in the books (pymalloc cannot say its
 * size): a leak this rare is not worth a wrong size. */
static void *py_realloc(void *ctx, void *ptr, size_t size)
{
	const struct py_allocator *o = ctx;
	if (ptr)
		on_free(ptr);
	int64_t distance = until_sample;
	in_hook++;
	void *p = o->realloc(o->ctx, ptr, size);
	in_hook--;
	until_sample = distance;
	if (p)
		on_alloc(p, size ? size : 1);
	return p;
}

/* Every free is sent (full mode, or the sampled set overflowed): the one
 * underneath is not. */
__attribute__((noinline)) static void py_free_all(const struct py_allocator *o, void *ptr)
{
	free_slow(ptr, 0);
	in_hook++;
	o->free(o->ctx, ptr);
	in_hook--;
}

static void py_free(void *ctx, void *ptr)
{
	const struct py_allocator *o = ctx;
	if (ptr && frees_all())
		return py_free_all(o, ptr);
	/* A large block's free meets the malloc hooks again underneath: its
	 * sampled pointer is gone from the set by then, so nothing goes twice. */
	if (ptr)
		on_free_sampled(ptr);
	o->free(o->ctx, ptr);
}

/* Whether the object allocator is still the wrapper; once not, never again
 * (checked per arena, called with the GIL held). */
static int py_wrapped_still(void)
{
	if (atomic_load_explicit(&py_lost, memory_order_relaxed))
		return 0;
	struct py_allocator cur;
	py_get_allocator(PY_DOMAIN_OBJ, &cur);
	if (cur.malloc == py_malloc)
		return 1;
	if (!atomic_exchange(&py_lost, 1) && enabled) {
		struct alloc_rec_head r = { ALLOC_REC_PYMEM_LOST, sizeof(r), gettid_cached(),
					    stamp_before() };
		in_hook++; /* the thread's first buffer is a mapping of the agent's own */
		emit(&r);
		in_hook--;
	}
	return 0;
}

static void *py_arena_alloc(void *ctx, size_t size)
{
	(void)ctx;
	if (!py_wrapped_still())
		return py_arena.alloc(py_arena.ctx, size);
	in_hook++;
	void *p = py_arena.alloc(py_arena.ctx, size);
	in_hook--;
	return p;
}

/* Once the wrappers are gone, arenas are freed in the open: the mapping
 * table knows which of them were recorded. */
static void py_arena_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	if (atomic_load_explicit(&py_lost, memory_order_relaxed)) {
		py_arena.free(py_arena.ctx, ptr, size);
		return;
	}
	in_hook++;
	py_arena.free(py_arena.ctx, ptr, size);
	in_hook--;
}

/* 3.x from "3.11.7 (main, ...)"; -1 when it does not read so. */
static int py_minor(const char *(*get_version)(void))
{
	const char *v = get_version();
	int minor = 0, digits = 0;
	if (!v || v[0] != '3' || v[1] != '.')
		return -1;
	for (v += 2; *v >= '0' && *v <= '9' && digits < 3; v++, digits++)
		minor = minor * 10 + (*v - '0');
	return digits ? minor : -1;
}

/* Returns 1 when the image's CPython allocators are now wrapped. */
static int py_hook_install(void)
{
	const char *pm = getenv("PYTHONMALLOC"), *dev = getenv("PYTHONDEVMODE");
	if ((pm && *pm) || (dev && *dev))
		return 0;
	void (*get)(int, struct py_allocator *) =
		(void (*)(int, struct py_allocator *))dlsym(RTLD_DEFAULT, "PyMem_GetAllocator");
	void (*set)(int, struct py_allocator *) =
		(void (*)(int, struct py_allocator *))dlsym(RTLD_DEFAULT, "PyMem_SetAllocator");
	void (*get_arena)(struct py_arena_allocator *) = (void (*)(struct py_arena_allocator *))
		dlsym(RTLD_DEFAULT, "PyObject_GetArenaAllocator");
	void (*set_arena)(struct py_arena_allocator *) = (void (*)(struct py_arena_allocator *))
		dlsym(RTLD_DEFAULT, "PyObject_SetArenaAllocator");
	const char *(*version)(void) =
		(const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	if (!get || !set || !get_arena || !set_arena || !version)
		return 0;
	/* A free-threaded build serves every object, large ones too, from
	 * mimalloc: not wrapped. */
	int minor = py_minor(version);
	if (minor < 8 || strstr(version(), "free-threading"))
		return 0;
	py_get_allocator = get;
	get(PY_DOMAIN_RAW, &py_wrapped[PY_DOMAIN_RAW]);
	for (int d = PY_DOMAIN_MEM; d <= PY_DOMAIN_OBJ; d++) {
		get(d, &py_wrapped[d]);
		const struct py_allocator *o = &py_wrapped[d];
		if (!o->malloc || !o->calloc || !o->realloc || !o->free)
			return 0;
		/* Built without pymalloc: the objects are malloc'd, seen already. */
		if (o->malloc == py_wrapped[PY_DOMAIN_RAW].malloc)
			return 0;
	}
	get_arena(&py_arena);
	if (!py_arena.alloc || !py_arena.free)
		return 0;
	struct py_arena_allocator aw = { NULL, py_arena_alloc, py_arena_free };
	set_arena(&aw);
	for (int d = PY_DOMAIN_MEM; d <= PY_DOMAIN_OBJ; d++) {
		struct py_allocator w = { &py_wrapped[d], py_malloc, py_calloc, py_realloc, py_free };
		set(d, &w);
	}
	return 1;
}

/* ---- anonymous mappings: mmap, mmap64, mremap, munmap ----
 *
 * An anonymous mapping (private or shared) that is not PROT_NONE (a
 * reservation is not memory yet) is an allocation of its page-rounded length,
 * recorded, sampled and unwound like a malloc, with ALLOC_SIZE_MMAP in its
 * size. File mappings are not heap. glibc's own mappings (malloc's large blocks, thread
 * stacks) and the loader's go through libc's internal __mmap, not through
 * these symbols, so they are not seen twice.
 *
 * Every such mapping (sampled or not) goes into a fixed table of ranges
 * (sorted by address, searched by bisection), so a munmap, an mremap or a
 * MAP_FIXED mapping over one of them is told to the reader (ALLOC_REC_UNMAP,
 * by range: a partial munmap shrinks or splits it) when the range touches a
 * recorded mapping; an mremap of a tracked mapping
 * is an unmap of the old range and a new mapping, like realloc. When the table
 * is full, every unmap is sent. The real calls are libc's (dlsym(RTLD_NEXT)),
 * or the system calls themselves until those are looked up. */
#define MAP_SLOTS 8192

struct map_range {
	uintptr_t start, end;
	int recorded; /* sent to the reader: its unmaps must be too */
};

static struct map_range maps[MAP_SLOTS];
static size_t nmaps;
static atomic_int maps_lock;
static atomic_int maps_overflow;
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

static void maps_acquire(void)
{
	while (atomic_exchange_explicit(&maps_lock, 1, memory_order_acquire))
		;
}

static void maps_release(void)
{
	atomic_store_explicit(&maps_lock, 0, memory_order_release);
}

static size_t page_bytes = 4096; /* the system's, once maps_init ran */

static size_t page_round(size_t len)
{
	size_t page = page_bytes;
	return len + page - 1 < len ? len : (len + page - 1) & ~(page - 1);
}

static int map_tracked_kind(int prot, int flags)
{
	return (flags & MAP_ANONYMOUS) && prot != PROT_NONE;
}

/* The index of the first range that starts below addr. The ranges are
 * disjoint and sorted by start from the highest down (the kernel places new
 * mappings below the older ones, so most land at the end). Lock held. */
static size_t maps_search(uintptr_t addr)
{
	size_t lo = 0, hi = nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (maps[mid].start >= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Takes [start, end) out of the table; *recorded |= whether a range it cut
 * was sent to the reader. Lock held. */
static int maps_cut(uintptr_t start, uintptr_t end, int *recorded)
{
	int found = 0;
	for (size_t i = maps_search(end); i < nmaps && maps[i].end > start;) {
		struct map_range *m = &maps[i];
		found = 1;
		*recorded |= m->recorded;
		if (m->start < start && m->end > end) {
			/* A hole in the middle: the part above it becomes a range of its own. */
			if (nmaps < MAP_SLOTS) {
				memmove(m + 1, m, (nmaps - i) * sizeof(*m));
				m[0] = (struct map_range){ end, m[1].end, m[1].recorded };
				m[1].end = start;
				nmaps++;
			} else {
				atomic_store(&maps_overflow, 1);
				m->end = start;
			}
			break;
		}
		if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->start = end;
			i++;
		} else {
			memmove(m, m + 1, (nmaps - i - 1) * sizeof(*m));
			nmaps--;
		}
	}
	return found;
}

/* Takes [start, end) out of the table; returns 1 when it touched a tracked
 * mapping (*recorded: one that the reader knows). */
static int maps_forget(uintptr_t start, uintptr_t end, int *recorded)
{
	*recorded = 0;
	maps_acquire();
	int found = maps_cut(start, end, recorded);
	maps_release();
	return found;
}

/* Returns 1 when the table still had a recorded range there: unmapped behind
 * the agent's back (the kernel gave the range anew), the reader must drop it. */
static int maps_add(uintptr_t start, uintptr_t end, int recorded)
{
	int stale = 0;
	maps_acquire();
	maps_cut(start, end, &stale);
	if (nmaps < MAP_SLOTS) {
		size_t i = maps_search(start);
		memmove(&maps[i + 1], &maps[i], (nmaps - i) * sizeof(maps[0]));
		maps[i] = (struct map_range){ start, end, recorded };
		nmaps++;
	} else {
		atomic_store(&maps_overflow, 1);
	}
	maps_release();
	return stale;
}

static void map_unmap_emit(uintptr_t addr, uintptr_t end, uint64_t t)
{
	struct alloc_rec_unmap r = { { ALLOC_REC_UNMAP, sizeof(r), gettid_cached(), t },
				     addr, end - addr };
	emit(&r);
}

/* Before (or, stamped with the time before, after) the kernel releases
 * [addr, addr + len): the reader drops what it held there. Returns what
 * maps_forget() does: whether a tracked mapping was there. */
static int map_unmap_record(uintptr_t addr, size_t len, uint64_t t)
{
	int recorded;
	uintptr_t end = addr + page_round(len);
	int found = maps_forget(addr, end, &recorded);
	if (recorded || atomic_load(&maps_overflow))
		map_unmap_emit(addr, end, t);
	return found;
}

static void map_record(void *p, size_t len)
{
	size_t bytes = page_round(len);
	int rec = should_sample(bytes);
	if (maps_add((uintptr_t)p, (uintptr_t)p + bytes, rec))
		map_unmap_emit((uintptr_t)p, (uintptr_t)p + bytes, stamp_before());
	if (rec)
		record_alloc(p, bytes | ALLOC_SIZE_MMAP);
}

static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (real_mmap)
		return real_mmap(addr, len, prot, flags, fd, off);
	/* Integer arguments widened: a variadic int leaves the upper half undefined. */
	long r = syscall(SYS_mmap, addr, len, (long)prot, (long)flags, (long)fd, (long)off);
	return r == -1 ? MAP_FAILED : (void *)r;
}

static void *map_hook(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!enabled || in_hook || exiting)
		return sys_mmap(addr, len, prot, flags, fd, off);
	in_hook++;
	uint64_t t0 = stamp_before();
	void *p = sys_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED) {
		/* MAP_FIXED replaces whatever was mapped there. */
		if (flags & MAP_FIXED)
			map_unmap_record((uintptr_t)p, len, t0);
		if (map_tracked_kind(prot, flags))
			map_record(p, len);
	}
	in_hook--;
	return p;
}

AGENT_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map_hook(addr, len, prot, flags, fd, off);
}

AGENT_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return map_hook(addr, len, prot, flags, fd, (off_t)off);
}

AGENT_EXPORT int munmap(void *addr, size_t len)
{
	if (enabled && !in_hook && !exiting && len) {
		in_hook++;
		/* Not the agent's own buffer, which a thread's exit unmaps. */
		if (!my_buf || (uintptr_t)addr + len <= (uintptr_t)my_buf ||
		    (uintptr_t)addr >= (uintptr_t)my_buf + sizeof(*my_buf))
			map_unmap_record((uintptr_t)addr, len, stamp_before());
		in_hook--;
	}
	if (real_munmap)
		return real_munmap(addr, len);
	return (int)syscall(SYS_munmap, addr, len);
}

AGENT_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	int track = enabled && !in_hook && !exiting;
	if (track)
		in_hook++;
	uint64_t t0 = track ? stamp_before() : 0;
	void *p;
	if (real_mremap) {
		p = real_mremap(old, old_len, new_len, flags, want);
	} else {
		long r = syscall(SYS_mremap, old, old_len, new_len, (long)flags, want);
		p = r == -1 ? MAP_FAILED : (void *)r;
	}
	if (track) {
		if (p != MAP_FAILED && old_len) {
			/* A tracked mapping moves or resizes: unmapped, then mapped anew by
			 * this caller (as realloc); the target of MREMAP_FIXED is replaced. */
			int was = map_unmap_record((uintptr_t)old, old_len, t0);
			if (flags & MREMAP_FIXED)
				map_unmap_record((uintptr_t)p, new_len, t0);
			if (was)
				map_record(p, new_len);
		}
		in_hook--;
	}
	return p;
}

static void maps_at_fork_child(void)
{
	/* The child's mappings are copies of its parent's: not its allocations. */
	nmaps = 0;
	atomic_store(&maps_lock, 0);
	atomic_store(&maps_overflow, 0);
}

__attribute__((constructor)) static void maps_init(void)
{
	in_hook++;
	long page = sysconf(_SC_PAGESIZE);
	if (page > 0 && !(page & (page - 1)))
		page_bytes = (size_t)page;
	real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	real_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
	real_mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
	pthread_atfork(NULL, NULL, maps_at_fork_child);
	in_hook--;
}
