/* perf_layer: the event sets of a run, their rings, pump and time-ordered
 * reading, and the handlers, stacks and users registered with it. */
#define LOG_DOMAIN "perf"
#include "perf_layer.h"
#include "perf_events.h"
#include "perf_record.h"
#include "perf_ring.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/nice.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define LAYER_MAX_HANDLERS 16
#define LAYER_MAX_USERS 4
#define LAYER_PUMP_NS (5 * NS_PER_MS)
/* A record is written within this long of its time stamp. */
#define LAYER_IN_FLIGHT_NS NS_PER_MS
#define LAYER_PUMP_NICE (-10) /* it only copies, and copying late loses records */
#define LAYER_DWARF_RINGS_BYTES (64u << 20)
#define LAYER_FP_RINGS_BYTES (32u << 20) /* frame-pointer rings, all CPUs together */

struct layer_handler {
	uint32_t type;
	perf_layer_fn fn;
	void *arg;
};

struct layer_set {
	int on; /* registered; read by the pump (atomic) */
	struct perf_event_attr attr;
	struct perf_ring_filter filter;
	int filtered;
	struct perf_ring *rings; /* ncpus */
	struct layer_handler handlers[LAYER_MAX_HANDLERS];
	size_t nhandlers;
};

struct perf_layer {
	size_t ncpus;
	struct layer_set sets[PERF_LAYER_NSETS];
	int *fds;
	size_t nfds, allocfds;
	struct perf_stacks stacks;
	int have_stacks;
	struct perf_user users[LAYER_MAX_USERS];
	size_t nusers;
	pthread_t pump;
	int pump_running, pump_stop;
};

struct perf_layer *perf_layer_new(void)
{
	struct perf_layer *l = xcalloc(1, sizeof(*l));
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	l->ncpus = ncpus > 0 ? (size_t)ncpus : 1;
	return l;
}

void perf_layer_reset(struct perf_layer *l)
{
	if (!l)
		return;
	perf_layer_pump_stop(l);
	for (size_t s = 0; s < PERF_LAYER_NSETS; s++) {
		struct layer_set *set = &l->sets[s];
		for (size_t i = 0; set->rings && i < l->ncpus; i++)
			perf_ring_release(&set->rings[i]);
		free(set->rings);
		memset(set, 0, sizeof(*set));
	}
	for (size_t i = 0; i < l->nfds; i++)
		close(l->fds[i]);
	free(l->fds);
	l->fds = NULL;
	l->nfds = l->allocfds = 0;
	memset(&l->stacks, 0, sizeof(l->stacks));
	l->have_stacks = 0;
	l->nusers = 0;
	l->pump_stop = 0;
}

void perf_layer_free(struct perf_layer *l)
{
	if (!l)
		return;
	perf_layer_reset(l);
	free(l);
}

size_t perf_layer_ncpus(const struct perf_layer *l)
{
	return l->ncpus;
}

int perf_layer_set_add(struct perf_layer *l, enum perf_layer_set set,
		       const struct perf_event_attr *attr, const struct perf_ring_filter *filter)
{
	struct layer_set *s = &l->sets[set];
	if (s->on)
		return -1;
	s->attr = *attr;
	s->filtered = filter != NULL;
	if (filter)
		s->filter = *filter;
	s->rings = xcalloc(l->ncpus, sizeof(*s->rings));
	for (size_t i = 0; i < l->ncpus; i++)
		s->rings[i] = (struct perf_ring)PERF_RING_INIT;
	__atomic_store_n(&s->on, 1, __ATOMIC_RELEASE); /* the pump may look now */
	return 0;
}

const struct perf_event_attr *perf_layer_set_attr(const struct perf_layer *l,
						  enum perf_layer_set set)
{
	return l->sets[set].on ? &l->sets[set].attr : NULL;
}

struct perf_ring *perf_layer_rings(struct perf_layer *l, enum perf_layer_set set)
{
	return l->sets[set].on ? l->sets[set].rings : NULL;
}

/* Dwarf samples carry the stack copy: 8 MiB per CPU, 64 MiB in all at most;
 * with frame pointers, room for a second or two of a busy machine's samples
 * while the pump waits for a CPU (per-CPU events see every process: 2 MiB
 * per CPU, 32 MiB in all at most; never under 512 KiB). */
size_t perf_layer_ring_pages(const struct perf_layer *l, enum perf_layer_set set)
{
	long page = sysconf(_SC_PAGESIZE);
	/* Stack copies, and a record for every system call, need the big rings. */
	int dwarf = (l->sets[set].attr.sample_type & PERF_SAMPLE_STACK_USER) != 0 ||
		    set == PERF_LAYER_SYS_ENTER;
	size_t pages = dwarf ? 2048 : 512;
	size_t cap = dwarf ? LAYER_DWARF_RINGS_BYTES : LAYER_FP_RINGS_BYTES;
	while (pages > 128 && pages * (size_t)page * l->ncpus > cap)
		pages /= 2;
	return pages;
}

int perf_layer_on(struct perf_layer *l, enum perf_layer_set set, uint32_t type, perf_layer_fn fn,
		  void *arg)
{
	struct layer_set *s = &l->sets[set];
	if (s->nhandlers == LAYER_MAX_HANDLERS)
		return -1;
	s->handlers[s->nhandlers++] = (struct layer_handler){ type, fn, arg };
	return 0;
}

int perf_layer_on_each(struct perf_layer *l, enum perf_layer_set set,
		       const struct perf_layer_handler *h, size_t n, void *arg)
{
	for (size_t i = 0; i < n; i++)
		if (perf_layer_on(l, set, h[i].type, h[i].fn, arg))
			return -1;
	return 0;
}

static void lost_count(void *count, const uint8_t *rec, size_t size)
{
	uint64_t lost;
	if (!perf_decode_lost(rec, size, &lost))
		*(uint64_t *)count += lost;
}

int perf_layer_on_lost(struct perf_layer *l, enum perf_layer_set set, uint64_t *count)
{
	if (perf_layer_on(l, set, PERF_RECORD_LOST, lost_count, count))
		return -1;
	return perf_layer_on(l, set, PERF_RECORD_LOST_SAMPLES, lost_count, count);
}

int perf_layer_fd_keep(struct perf_layer *l, int fd)
{
	if (l->nfds >= PERF_LAYER_MAX_FDS)
		return -1;
	if (l->nfds == l->allocfds) {
		l->allocfds = l->allocfds ? 2 * l->allocfds : 64;
		l->fds = xrealloc(l->fds, l->allocfds * sizeof(*l->fds));
	}
	l->fds[l->nfds++] = fd;
	return 0;
}

int perf_layer_open_task(struct perf_layer *l, enum perf_layer_set set, pid_t tid,
			 int before_exec, perf_layer_opened_fn opened, void *arg)
{
	struct layer_set *s = &l->sets[set];
	if (!s->on)
		return -ENODEV;
	struct perf_event_attr a = s->attr;
	a.disabled = before_exec;
	a.enable_on_exec = before_exec;
	int n = 0, err = ENODEV;
	for (size_t c = 0; c < l->ncpus; c++) {
		long fd = perf_event_open_cloexec(&a, tid, (int)c, -1);
		if (fd < 0) {
			err = errno;
			log_debug("perf_event_open(tid %d, cpu %zu): %s", (int)tid, c,
				  strerror(err));
			continue; /* an offline CPU, or the task is gone */
		}
		if (opened)
			opened(arg, (int)fd, tid, (int)c);
		struct perf_ring *r = &s->rings[c];
		if (r->fd < 0) {
			int rc = perf_ring_map(r, (int)fd, perf_layer_ring_pages(l, set), 8);
			if (rc) {
				log_debug("mmap of the ring buffer: %s", strerror(-rc));
				close((int)fd);
				err = -rc;
				continue;
			}
		} else if (l->nfds >= PERF_LAYER_MAX_FDS ||
			   ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
			err = l->nfds >= PERF_LAYER_MAX_FDS ? EMFILE : errno;
			close((int)fd);
			continue;
		} else {
			perf_layer_fd_keep(l, (int)fd);
		}
		n++;
	}
	return n ? n : -err;
}

void perf_layer_disable(struct perf_layer *l)
{
	for (size_t s = 0; s < PERF_LAYER_NSETS; s++)
		for (size_t i = 0; l->sets[s].on && i < l->ncpus; i++)
			if (l->sets[s].rings[i].fd >= 0)
				ioctl(l->sets[s].rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; i < l->nfds; i++)
		ioctl(l->fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

static void dispatch(struct layer_set *s, const uint8_t *rec, size_t size)
{
	uint32_t type;
	uint16_t misc;
	if (perf_record_header(rec, size, &type, &misc))
		return;
	for (size_t i = 0; i < s->nhandlers; i++)
		if (s->handlers[i].type == type)
			s->handlers[i].fn(s->handlers[i].arg, rec, size);
}

void perf_layer_ring_read(struct perf_ring *r, const struct perf_layer_handler *h, size_t n,
			  void *arg)
{
	const uint8_t *rec;
	size_t size;
	uint32_t type;
	uint16_t misc;
	perf_ring_take(r);
	for (; (rec = perf_ring_peek(r, &size)); perf_ring_next(r)) {
		if (perf_record_header(rec, size, &type, &misc))
			break;
		for (size_t i = 0; i < n; i++)
			if (h[i].type == type)
				h[i].fn(arg, rec, size);
	}
}

/* Takes what every ring of every set holds. Returns the time before which
 * no record can still arrive: the take's start, less a margin for a record
 * stamped but not yet written. */
static int64_t layer_take(struct perf_layer *l)
{
	int64_t t = clock_mono_ns();
	for (size_t s = 0; s < PERF_LAYER_NSETS; s++) {
		struct layer_set *set = &l->sets[s];
		if (!set->on)
			continue;
		/* A set with a filter has every record pass it, taken or pumped. */
		if (set->filtered) {
			perf_ring_take_filtered(set->rings, l->ncpus, &set->filter);
			continue;
		}
		for (size_t c = 0; c < l->ncpus; c++)
			perf_ring_take(&set->rings[c]);
	}
	return t - LAYER_IN_FLIGHT_NS;
}

void perf_layer_drain(struct perf_layer *l, int64_t budget_ns)
{
	int64_t now = clock_mono_ns();
	int64_t deadline = budget_ns < 0 ? INT64_MAX : now + budget_ns;
	int64_t until = budget_ns < 0 ? now : INT64_MAX;
	/* Records are handled in time order only up to the last take: a ring
	 * whose stage ran dry may hold older records in the kernel than another
	 * ring's next one (a system call's entry on one CPU, its exit on
	 * another). */
	int64_t cutoff = INT64_MIN;
	size_t nrings = PERF_LAYER_NSETS * l->ncpus;
	for (size_t handled = 0;; handled++) {
		if (handled % PERF_LAYER_RETAKE == 0) {
			if (handled && clock_mono_ns() > deadline)
				break;
			int64_t t = layer_take(l);
			cutoff = t < until ? t : until;
		}
		struct perf_ring *best = NULL;
		struct layer_set *best_set = NULL;
		const uint8_t *best_rec = NULL;
		size_t best_size = 0;
		int64_t best_t = INT64_MAX;
		for (size_t i = 0; i < nrings; i++) {
			struct layer_set *s = &l->sets[i / l->ncpus];
			size_t size;
			const uint8_t *rec;
			if (!s->on || !(rec = perf_ring_peek(&s->rings[i % l->ncpus], &size)))
				continue;
			int64_t t = perf_record_time(rec, size, s->attr.sample_type);
			if (!best || t < best_t) { /* no time (-1): handle it first */
				best_t = t;
				best = &s->rings[i % l->ncpus];
				best_set = s;
				best_rec = rec;
				best_size = size;
			}
		}
		if (!best)
			break;
		if (best_t > cutoff && best_t != INT64_MAX) {
			/* Draining everything before now: one more take holds all
			 * of it. Else the rest waits for the next drain. */
			if (budget_ns >= 0 || cutoff >= until)
				break;
			layer_take(l);
			cutoff = until;
			continue;
		}
		dispatch(best_set, best_rec, best_size);
		perf_ring_next(best);
	}
}

static void *pump_rings(void *arg)
{
	struct perf_layer *l = arg;
	struct timespec nap = { 0, LAYER_PUMP_NS };
	int rc = nice_raise(LAYER_PUMP_NICE, NULL);
	if (rc < 0)
		log_debug("pump at nice %d not permitted: %s", LAYER_PUMP_NICE, strerror(-rc));
	while (!__atomic_load_n(&l->pump_stop, __ATOMIC_ACQUIRE)) {
		for (size_t s = 0; s < PERF_LAYER_NSETS; s++) {
			struct layer_set *set = &l->sets[s];
			if (__atomic_load_n(&set->on, __ATOMIC_ACQUIRE))
				perf_ring_pump_all(set->rings, l->ncpus,
						   set->filtered ? &set->filter : NULL);
		}
		nanosleep(&nap, NULL);
	}
	return NULL;
}

void perf_layer_pump_start(struct perf_layer *l)
{
	if (l->pump_running)
		return;
	l->pump_stop = 0;
	l->pump_running = !pthread_create(&l->pump, NULL, pump_rings, l);
	if (!l->pump_running)
		log_debug("no thread to read the rings: they are read by the poll only");
}

void perf_layer_pump_stop(struct perf_layer *l)
{
	if (!l->pump_running)
		return;
	__atomic_store_n(&l->pump_stop, 1, __ATOMIC_RELEASE);
	pthread_join(l->pump, NULL);
	l->pump_running = 0;
}

int perf_layer_stacks_set(struct perf_layer *l, const struct perf_stacks *s)
{
	if (l->have_stacks)
		return -1;
	l->stacks = *s;
	l->have_stacks = 1;
	return 0;
}

const struct perf_stacks *perf_layer_stacks(const struct perf_layer *l)
{
	return l->have_stacks ? &l->stacks : NULL;
}

int perf_layer_user_add(struct perf_layer *l, const struct perf_user *u)
{
	if (l->nusers == LAYER_MAX_USERS)
		return -1;
	l->users[l->nusers++] = *u;
	return 0;
}

void perf_layer_records_end(struct perf_layer *l, int64_t end_ns)
{
	for (size_t i = 0; i < l->nusers; i++)
		if (l->users[i].records_end)
			l->users[i].records_end(l->users[i].arg, end_ns);
}

void perf_layer_written(struct perf_layer *l, const struct perf_weighted *w, int64_t node)
{
	for (size_t i = 0; i < l->nusers; i++)
		if (l->users[i].written)
			l->users[i].written(l->users[i].arg, w, node);
}

void perf_layer_done(struct perf_layer *l, struct recorder *rec)
{
	for (size_t i = 0; i < l->nusers; i++)
		if (l->users[i].done)
			l->users[i].done(l->users[i].arg, rec);
}
