/* syscalls probe: every system call of the target's threads, as `strace -c`
 * counts them, without ptrace: the raw_syscalls:sys_enter and sys_exit
 * tracepoints, opened for every task the cpu probe follows through the run's
 * perf layer (perf_layer.h), paired per thread (syscall_track.h). Each exit
 * carries the user call chain, so every call is charged to its call site;
 * the byte-moving calls (read, write and kin) to their file as well.
 *
 * Off by default: each call costs two trips through perf (about a
 * microsecond), which a program making a million calls a second would
 * feel. `--focus io` or `--probes ...,syscalls` turns it on. */
#define LOG_DOMAIN "syscalls"
#include "perf_choose.h"
#include "perf_events.h"
#include "perf_layer.h"
#include "perf_record.h"
#include "perf_ring.h"
#include "probe.h"
#include "syscall_track.h"
#include "../record/recorder.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYS_NR_TABLE 1024 /* call numbers whose byte direction is tabled */
#define SYS_COUNT_SLACK 2 /* the kernel's count may hold the exec itself */

struct sys_state {
	struct perf_layer *perf;
	const struct perf_stacks *stacks; /* the layer's */
	struct perf_event_attr enter, exit;
	struct perf_syscall_fields fields;
	int64_t start_ns;
	struct syscall_tracker *trk;
	uint64_t enters, malformed, lost;
	/* A counting sys_exit event on the launched process, inherited by
	 * everything it starts: the kernel's own count of the calls, against
	 * which what the rings delivered is checked (a ring that overflows
	 * until the end reports no loss). -1 when none (attached). */
	int count_fd;
	int first_seen;
	/* syscall_moves_bytes() by call number; 3: close, 4: a flush of a file */
	uint8_t moves[SYS_NR_TABLE];
	/* (pid, fd) -> index in paths: the files of the byte-moving calls, named
	 * by the pump as their entries arrive (the fd is still open then; the
	 * process may be gone by the time the records are read). */
	pthread_mutex_t lock;
	struct hashmap fd_gens;	 /* (pid, fd) -> closes seen (syscall_track.h) */
	struct hashmap fd_paths; /* (pid, fd, generation) -> index in paths */
	char **paths;
	size_t npaths, allocpaths;
};

static int64_t raw_long(const struct perf_sample *ps, int offset, int *ok)
{
	int64_t v = 0;
	if (!ps->raw || offset < 0 || (uint64_t)offset + 8 > ps->raw_size) {
		*ok = 0;
		return 0;
	}
	memcpy(&v, ps->raw + offset, 8);
	return v;
}

static void on_enter(void *arg, const uint8_t *rec, size_t size)
{
	struct sys_state *ss = arg;
	struct perf_sample ps;
	int ok = 1;
	if (perf_decode_sample(rec, size, ss->enter.sample_type, 0, &ps)) {
		ss->malformed++;
		return;
	}
	int64_t nr = raw_long(&ps, ss->fields.id, &ok);
	int64_t arg0 = ss->fields.args >= 0 ? raw_long(&ps, ss->fields.args, &ok) : -1;
	if (!ok) {
		ss->malformed++;
		return;
	}
	ss->enters++;
	syscall_tracker_enter(ss->trk, (pid_t)ps.pid, (pid_t)ps.tid,
			      (int64_t)ps.time - ss->start_ns, (long)nr, arg0);
}

static void on_exit_sample(void *arg, const uint8_t *rec, size_t size)
{
	struct sys_state *ss = arg;
	struct perf_sample ps;
	int ok = 1;
	if (perf_decode_sample(rec, size, ss->exit.sample_type, ss->exit.sample_regs_user, &ps)) {
		ss->malformed++;
		return;
	}
	int64_t nr = raw_long(&ps, ss->fields.id, &ok);
	int64_t ret = raw_long(&ps, ss->fields.ret, &ok);
	if (!ok) {
		ss->malformed++;
		return;
	}
	uint32_t stack =
	    ps.nr || ps.stack_len ? ss->stacks->stack_of(ss->stacks->owner, &ps) : UINT32_MAX;
	syscall_tracker_exit(ss->trk, (pid_t)ps.pid, (pid_t)ps.tid, (int64_t)ps.time - ss->start_ns,
			     (long)nr, ret, stack);
}

/* A thread's exit (a record of the sampling set): its open call never returns. */
static void on_thread_exit(void *arg, const uint8_t *rec, size_t size)
{
	struct sys_state *ss = arg;
	struct perf_fork f;
	if (!perf_decode_fork(rec, size, &f))
		syscall_tracker_thread_exit(ss->trk, (pid_t)f.tid);
}

static int fd_readlink(pid_t pid, int fd, char *buf, size_t cap)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, fd);
	ssize_t n = readlink(link, buf, cap - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* The pump's look at each entry: a byte-moving call or a flush on an fd not
 * named yet gets its file named now. */
static void pump_see(const uint8_t *rec, size_t size, void *arg)
{
	struct sys_state *ss = arg;
	struct perf_sample ps;
	int ok = 1;
	if (perf_decode_sample(rec, size, ss->enter.sample_type, 0, &ps))
		return;
	int64_t nr = raw_long(&ps, ss->fields.id, &ok);
	int64_t fd = ss->fields.args >= 0 ? raw_long(&ps, ss->fields.args, &ok) : -1;
	if (!ok || nr < 0 || nr >= SYS_NR_TABLE || !ss->moves[nr] || fd < 0 || fd >= (1 << 30))
		return;
	int32_t fdkey[2] = {(int32_t)ps.pid, (int32_t)fd};
	pthread_mutex_lock(&ss->lock);
	int64_t *gen = hashmap_get(&ss->fd_gens, fdkey, sizeof(fdkey));
	if (ss->moves[nr] == 3) { /* a close: the number's next file is another */
		hashmap_put(&ss->fd_gens, fdkey, sizeof(fdkey), gen ? *gen + 1 : 1);
		pthread_mutex_unlock(&ss->lock);
		return;
	}
	int64_t key[3] = {ps.pid, fd, gen ? *gen : 0};
	int known = hashmap_get(&ss->fd_paths, key, sizeof(key)) != NULL;
	pthread_mutex_unlock(&ss->lock);
	char path[512];
	if (known || fd_readlink((pid_t)ps.pid, (int)fd, path, sizeof(path)))
		return;
	pthread_mutex_lock(&ss->lock);
	if (ss->npaths == ss->allocpaths) {
		ss->allocpaths = ss->allocpaths ? 2 * ss->allocpaths : 64;
		ss->paths = xrealloc(ss->paths, ss->allocpaths * sizeof(*ss->paths));
	}
	ss->paths[ss->npaths] = xstrdup(path);
	hashmap_put(&ss->fd_paths, key, sizeof(key), (int64_t)ss->npaths++);
	pthread_mutex_unlock(&ss->lock);
}

/* The file behind a descriptor in a generation, as the pump named it (not
 * as it is now: the number may name a later file by then). */
static int file_of(void *arg, pid_t pid, int fd, int64_t gen, char *buf, size_t cap)
{
	struct sys_state *ss = arg;
	int64_t key[3] = {pid, fd, gen};
	pthread_mutex_lock(&ss->lock);
	int64_t *at = hashmap_get(&ss->fd_paths, key, sizeof(key));
	if (at)
		snprintf(buf, cap, "%s", ss->paths[*at]);
	pthread_mutex_unlock(&ss->lock);
	return at ? 0 : -1;
}

static int64_t node_of(void *arg, uint32_t stack)
{
	struct sys_state *ss = arg;
	return ss->stacks->node_of ? ss->stacks->node_of(ss->stacks->owner, stack) : 0;
}

static void calls_done(void *arg, struct recorder *rec)
{
	struct sys_state *ss = arg;
	syscall_tracker_write(ss->trk, rec, node_of, ss);
	record_meta_int(rec, "syscalls_calls", (int64_t)syscall_tracker_calls(ss->trk));
	record_meta_int(rec, "syscalls_malformed_records", (int64_t)ss->malformed);
	record_meta_int(rec, "syscalls_lost_records", (int64_t)ss->lost);
	if (ss->lost)
		record_note(rec, 0, "syscalls", "warning",
			    "the kernel lost some system-call records (its rings filled): the "
			    "counts are lower bounds");
}

static void layer_join(struct sys_state *ss)
{
	struct perf_layer *l = ss->perf;
	struct perf_ring_filter name_files = {pump_see, NULL, ss};
	perf_layer_set_add(l, PERF_LAYER_SYS_ENTER, &ss->enter, &name_files);
	perf_layer_set_add(l, PERF_LAYER_SYS_EXIT, &ss->exit, NULL);
	perf_layer_on(l, PERF_LAYER_SYS_ENTER, PERF_RECORD_SAMPLE, on_enter, ss);
	perf_layer_on(l, PERF_LAYER_SYS_EXIT, PERF_RECORD_SAMPLE, on_exit_sample, ss);
	perf_layer_on_lost(l, PERF_LAYER_SYS_ENTER, &ss->lost);
	perf_layer_on_lost(l, PERF_LAYER_SYS_EXIT, &ss->lost);
	perf_layer_on(l, PERF_LAYER_SAMPLES, PERF_RECORD_EXIT, on_thread_exit, ss);
	struct perf_user u = {NULL, NULL, calls_done, ss};
	perf_layer_user_add(l, &u);
}

static int sys_wanted(const struct probe_config *cfg)
{
	return cfg->syscalls;
}

static int sys_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	struct perf_event_attr enter, exit, like;
	struct perf_syscall_fields fields;
	(void)ctx;
	memset(&like, 0, sizeof(like));
	like.sample_type = PERF_SAMPLE_CALLCHAIN;
	return perf_choose_syscalls(&enter, &exit, &like, &fields, NULL, why);
}

static int sys_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct sys_state *ss = xcalloc(1, sizeof(*ss));
	p->state = ss;
	ss->count_fd = -1;
	const struct perf_event_attr *samples =
	    ctx->perf ? perf_layer_set_attr(ctx->perf, PERF_LAYER_SAMPLES) : NULL;
	ss->stacks = ctx->perf ? perf_layer_stacks(ctx->perf) : NULL;
	if (!samples || !ss->stacks) {
		strbuf_addstr(why, "needs the cpu probe, whose events and symbols it shares "
				   "(it is off or unavailable)");
		return -1;
	}
	int mounted = 0;
	if (perf_choose_syscalls(&ss->enter, &ss->exit, samples, &ss->fields, &mounted, why))
		return -1;
	if (mounted)
		record_note(
		    ctx->rec, 0, "syscalls", "event",
		    "mounted tracefs at /sys/kernel/tracing to find the raw_syscalls "
		    "tracepoints (it stays mounted; `umount /sys/kernel/tracing` undoes it)");
	ss->perf = ctx->perf;
	ss->start_ns = ctx->start_ns;
	char buf[32];
	for (long nr = 0; nr < SYS_NR_TABLE; nr++) {
		const char *name = syscall_name(nr, buf, sizeof(buf));
		ss->moves[nr] = !strcmp(name, "close")	 ? 3
				: syscall_syncs_fd(name) ? 4
							 : (uint8_t)syscall_moves_bytes(name);
	}
	pthread_mutex_init(&ss->lock, NULL);
	ss->trk = syscall_tracker_new(file_of, ss);
	layer_join(ss);
	return 0;
}

/* The launched process, before its exec: the kernel counts every call of
 * the tree from the exec on, as the sampling events do. */
static void sys_process_added(struct probe *p, struct probe_ctx *ctx, pid_t pid)
{
	struct sys_state *ss = p->state;
	if (ss->first_seen++ || !ctx->env)
		return;
	struct perf_event_attr a;
	perf_event_attr_init(&a, PERF_TYPE_TRACEPOINT, ss->exit.config);
	a.inherit = 1;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.exclude_hv = 1;
	ss->count_fd = perf_event_open_cloexec(&a, pid, -1, -1);
	if (ss->count_fd < 0)
		log_debug("no count of the calls: %s", strerror(errno));
}

/* The tables were written in the cpu probe's stop, through the layer's end;
 * what the kernel counted is set against them here. */
static void sys_stop(struct probe *p, struct probe_ctx *ctx)
{
	struct sys_state *ss = p->state;
	uint64_t counted = 0;
	if (ss->count_fd < 0 || read(ss->count_fd, &counted, sizeof(counted)) != sizeof(counted))
		return;
	uint64_t seen = syscall_tracker_calls(ss->trk);
	record_meta_int(ctx->rec, "syscalls_kernel_calls", (int64_t)counted);
	if (counted <= seen + SYS_COUNT_SLACK)
		return;
	char msg[256];
	snprintf(msg, sizeof(msg),
		 "the kernel counted %llu system calls and sonde read %llu: the records of %llu "
		 "were lost (sonde could not read its rings in time), so the counts are lower "
		 "bounds",
		 (unsigned long long)counted, (unsigned long long)seen,
		 (unsigned long long)(counted - seen));
	record_note(ctx->rec, 0, "syscalls", "warning", msg);
}

static void sys_free(struct probe *p)
{
	struct sys_state *ss = p->state;
	if (!ss)
		return;
	syscall_tracker_free(ss->trk);
	if (ss->count_fd >= 0)
		close(ss->count_fd);
	if (ss->trk || ss->perf) {
		pthread_mutex_destroy(&ss->lock);
		hashmap_release(&ss->fd_paths);
		hashmap_release(&ss->fd_gens);
		for (size_t i = 0; i < ss->npaths; i++)
			free(ss->paths[i]);
		free(ss->paths);
	}
	free(ss);
	p->state = NULL;
}

static const char *const probe_syscalls_needs[] = { "perf.samples", NULL };

static const char *const syscalls_writes[] = {
	"syscalls",
	"syscall_errors",
	"syscall_files",
	"syscall_timeline",
	NULL,
};

const struct probe_ops probe_syscalls = {
    .name = "syscalls",
    .writes = syscalls_writes,
    .needs = probe_syscalls_needs,
    .summary = "system calls: count, errors, time and call site of each (raw_syscalls)",
    .enabled_by_default = 0,
    .wanted = sys_wanted,
    .available = sys_available,
    .start = sys_start,
    .process_added = sys_process_added,
    .stop = sys_stop,
    .free = sys_free,
};
