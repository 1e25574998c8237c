/* alloc agent: libsonde_alloc.so, preloaded into the target by `sonde run
 * --memory`. It interposes the malloc family, stamps each (sampled) allocation
 * with its time, thread and return addresses, and streams records to sonde
 * through the file named by SONDE_ALLOC_DIR (see alloc_wire.h).
 *
 * Rules its files live by: they never allocate from the heap (buffers come
 * from mmap), a thread-local guard makes every hook re-entrant (the unwinder or
 * the loader may call malloc), and calls made while the real allocator is
 * still being looked up are served from a static bump buffer.
 *
 * This file holds the image's state, its clock and its life: start-up, fork
 * and exit. The parts share agent.h: hooks.c interposes the malloc family and
 * CPython's object allocators and decides what is sampled, maps.c does the
 * same for anonymous mappings, stacks.c captures an allocation's stacks,
 * buffers.c packs the records into the thread's buffer and channel.c writes
 * them to sonde's file. */
#include "agent.h"
#include "../../util/tsc.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- state ---- */

int agent_out_fd = -1;
int agent_enabled;
int agent_exiting;
uint64_t agent_interval_bytes; /* 0: full */
pthread_mutex_t agent_list_lock = PTHREAD_MUTEX_INITIALIZER;
struct tbuf *agent_buffers;
pthread_key_t agent_buf_key;
/* The clock of this image (alloc_wire.h) and its ages in its own units. */
int agent_use_tsc;
uint64_t agent_flush_age = AGENT_FLUSH_AGE_NS, agent_modules_age = AGENT_MODULES_CHECK_NS;

AGENT_TLS int agent_in_hook;
AGENT_TLS struct tbuf *agent_my_buf;

uint64_t agent_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Stamps in the image's clock: before the work the time must precede (a
 * free), and after the work it must follow (an alloc: the counter read waits
 * for the allocator's loads). */
uint64_t agent_stamp_before(void)
{
	return agent_use_tsc ? tsc_read() : agent_now_ns();
}

uint64_t agent_stamp_after(void)
{
	return agent_use_tsc ? tsc_read_ordered() : agent_now_ns();
}

static void clock_setup(void)
{
	const char *c = getenv(ALLOC_ENV_CLOCK);
	agent_use_tsc = TSC_SUPPORTED && c && !strcmp(c, "tsc");
	if (agent_use_tsc) {
		agent_flush_age = AGENT_FLUSH_AGE_TICKS;
		agent_modules_age = AGENT_MODULES_CHECK_TICKS;
	}
}

static AGENT_TLS uint32_t my_tid;
int agent_py_hooked; /* CPython's object allocators are wrapped (hooks.c) */

uint32_t agent_gettid_cached(void)
{
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	return my_tid;
}

/* ---- start-up, fork and exit ---- */

static void at_fork_prepare(void)
{
	agent_in_hook++;
	if (agent_my_buf) {
		agent_tbuf_lock(agent_my_buf);
		agent_tbuf_flush(agent_my_buf);
		agent_tbuf_unlock(agent_my_buf);
	}
}

static void at_fork_parent(void)
{
	agent_in_hook--;
}

static void at_fork_child(void)
{
	/* Only the forking thread survives; the other buffers belong to the parent. */
	my_tid = 0;
	if (agent_my_buf) {
		/* The child's file is new: its stacks have not been sent there. */
		agent_my_buf->len = 0;
		agent_my_buf->pk.batch = PACK_NONE;
		agent_tbuf_forget(agent_my_buf);
		agent_my_buf->tid = agent_gettid_cached();
		agent_my_buf->next = NULL;
		atomic_store(&agent_my_buf->busy, 0);
	}
	agent_buffers = agent_my_buf;
	pthread_mutex_init(&agent_list_lock, NULL);
	if (agent_out_fd >= 0 && !agent_chan_check())
		close(agent_out_fd); /* the parent's file, still ours to close */
	agent_out_fd = -1;
	agent_channel_open(1);
	agent_in_hook--;
}

/* Before maps_init (maps.c): the two used to share a file, which fixed
 * their order; priorities keep it whatever the link order. */
__attribute__((constructor(101))) static void agent_init(void)
{
	agent_in_hook++;
	agent_resolve();
	const char *iv = getenv(ALLOC_ENV_INTERVAL);
	agent_interval_bytes = iv ? strtoull(iv, NULL, 10) : 0;
	clock_setup();
	pthread_key_create(&agent_buf_key, agent_thread_gone);
	dl_iterate_phdr(agent_find_self, (void *)(uintptr_t)&agent_init);
	agent_fp_setup();
	pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
	const char *pymem = getenv(ALLOC_ENV_PYMEM);
	if (getenv(ALLOC_ENV_DIR) && !(pymem && !strcmp(pymem, "0")))
		agent_py_hooked = agent_py_hook_install();
	agent_channel_open(0);
	agent_enabled = agent_out_fd >= 0;
	agent_in_hook--;
}

__attribute__((destructor)) static void agent_fini(void)
{
	if (agent_out_fd < 0 || agent_host_check(1))
		return;
	agent_in_hook++;
	agent_modules_refresh(); /* libraries loaded since the last check */
	agent_exiting = 1;
	pthread_mutex_lock(&agent_list_lock);
	for (struct tbuf *b = agent_buffers; b; b = b->next) {
		/* A thread still appending keeps its buffer: never wait on it here. */
		if (atomic_exchange(&b->busy, 1))
			continue;
		agent_tbuf_flush(b);
		agent_tbuf_unlock(b);
	}
	pthread_mutex_unlock(&agent_list_lock);
	struct alloc_rec_head ex = { ALLOC_REC_EXIT, sizeof(ex), agent_gettid_cached(),
				      agent_stamp_after() };
	agent_write_all(&ex, sizeof(ex));
	agent_in_hook--;
}
