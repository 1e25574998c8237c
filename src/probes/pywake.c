/* pywake: task-clock perf events on still Python threads, one epoll fd
 * (see pywake.h). */
#include "pywake.h"
#include "perf_events.h"
#include "../util/strbuf.h"

#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#define PYWAKE_PAGES 2 /* the ring's header and one page: only its wake-up is used */

struct pywake_watch {
	pid_t tid;
	int fd;
	void *ring;
};

struct pywake {
	int epfd;
	int fired;
	struct pywake_watch v[PYWAKE_MAX];
	size_t n;
};

struct pywake *pywake_open(void)
{
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return NULL;
	struct pywake *w = xcalloc(1, sizeof(*w));
	w->epfd = epfd;
	return w;
}

void pywake_close(struct pywake *w)
{
	if (!w)
		return;
	pywake_clear(w);
	close(w->epfd);
	free(w);
}

int pywake_fd(const struct pywake *w)
{
	return w->epfd;
}

size_t pywake_count(const struct pywake *w)
{
	return w->n;
}

int pywake_watch(struct pywake *w, pid_t pid, pid_t tid)
{
	(void)pid;
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].tid == tid)
			return 0;
	if (w->n == PYWAKE_MAX)
		return -1;
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.sample_period = PYWAKE_CPU_NS;
	attr.wakeup_events = 1;
	attr.exclude_kernel = 1; /* what a user may watch of their own processes */
	attr.exclude_hv = 1;
	int fd = perf_event_open_cloexec(&attr, tid, -1, -1);
	if (fd < 0)
		return -1;
	size_t len = (size_t)PYWAKE_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	void *ring = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ring == MAP_FAILED || epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		if (ring != MAP_FAILED)
			munmap(ring, len);
		close(fd);
		return -1;
	}
	w->v[w->n++] = (struct pywake_watch){ .tid = tid, .fd = fd, .ring = ring };
	return 0;
}

void pywake_clear(struct pywake *w)
{
	size_t len = (size_t)PYWAKE_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < w->n; i++) {
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->v[i].fd, NULL);
		munmap(w->v[i].ring, len);
		close(w->v[i].fd);
	}
	w->n = 0;
	w->fired = 0;
}

int pywake_fired(struct pywake *w)
{
	/* A ring that holds a record: read from its header page, no system call
	 * (the session's poll of the epoll fd has consumed the readiness). */
	for (size_t i = 0; i < w->n && !w->fired; i++) {
		const struct perf_event_mmap_page *pg = w->v[i].ring;
		w->fired = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) != 0;
	}
	return w->fired;
}
