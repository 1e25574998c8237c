/* channel: the image's file in sonde's directory (alloc_wire.h). It is opened
 * with the image's header and the module list, checked before every write to
 * still be the agent's file (and sonde to still read it), and written whole
 * chunks at a time, never blocking; the module list goes out again whenever a
 * library was loaded, for the reader's symbolizer. */
#include "agent.h"
#include "cfi.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- writing to the file ---- */

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
	agent_enabled = 0;
	int fd = agent_out_fd;
	agent_out_fd = -1;
	if (fd >= 0)
		close(fd);
	if (chan_path[0])
		unlink(chan_path);
	chan_path[0] = '\0';
	rmdir(chan_dir);
}

int agent_host_check(int always)
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

int agent_chan_check(void)
{
	struct stat st;
	int fd = agent_out_fd;
	if (fd >= 0 && !fstat(fd, &st) && st.st_dev == chan_dev && st.st_ino == chan_ino)
		return 0;
	if (atomic_exchange(&chan_reopening, 1))
		return -1; /* another thread is at it: drop this chunk */
	agent_out_fd = chan_path[0] ? chan_open_fd() : -1;
	atomic_store(&chan_reopening, 0);
	return agent_out_fd >= 0 ? 0 : -1;
}

/* Returns 0 when every byte went out. */
int agent_write_all(const void *data, size_t len)
{
	const unsigned char *p = data;
	if (agent_host_check(0) || agent_chan_check())
		return -1;
	while (len && agent_out_fd >= 0) {
		ssize_t n = write(agent_out_fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1; /* sonde went away or the disk is full: drop, never block */
		p += n;
		len -= (size_t)n;
	}
	return len ? -1 : 0;
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
	r.m.h = (struct alloc_rec_head){ ALLOC_REC_MODULE, (uint16_t)len, agent_gettid_cached(),
					  agent_stamp_before() };
	r.m.bias = info->dlpi_addr;
	r.m.start = lo;
	r.m.end = hi;
	agent_emit(&r);
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

void agent_modules_refresh(void)
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

void agent_channel_open(int forked)
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
	agent_out_fd = chan_open_fd();
	if (agent_out_fd < 0)
		return;
	struct alloc_rec_header hd;
	memset(&hd, 0, sizeof(hd));
	hd.h = (struct alloc_rec_head){ ALLOC_REC_HEADER, sizeof(hd), agent_gettid_cached(),
					agent_stamp_before() };
	hd.magic = ALLOC_WIRE_MAGIC;
	hd.version = ALLOC_WIRE_VERSION;
	hd.pid = (uint32_t)getpid();
	hd.ppid = (uint32_t)getppid();
	hd.forked = (uint32_t)forked;
	hd.interval_bytes = agent_interval_bytes;
	hd.clock = agent_use_tsc ? ALLOC_CLOCK_TSC : ALLOC_CLOCK_MONOTONIC;
	hd.flags = agent_py_hooked ? ALLOC_HDR_PYMEM : 0;
	/* Header and modules go out at once: a short-lived image is still readable. */
	agent_write_all(&hd, sizeof(hd));
	atomic_store(&modules_sent_adds, 0);
	agent_modules_refresh();
	if (agent_my_buf) {
		agent_tbuf_lock(agent_my_buf);
		agent_tbuf_flush(agent_my_buf);
		agent_tbuf_unlock(agent_my_buf);
	}
}
