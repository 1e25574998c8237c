/* stacks: an allocation's call stack, captured in the thread that made it,
 * the agent's own frames left out: the executable's frames by their frame
 * pointers when sonde found them kept, the rest by the cached DWARF unwinder
 * (cfi.c) or, where that one gives up, libgcc's; with the thread's Python
 * stack (pystack.c) when it runs Python code. The allocation then goes to the
 * thread's buffer. */
#include "agent.h"
#include "cfi.h"

#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

/* ---- the agent's own code ---- */

static uintptr_t self_start, self_end; /* our own code, skipped in stacks */

int agent_find_self(struct dl_phdr_info *info, size_t size, void *data)
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

void agent_fp_setup(void)
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

/* ---- stacks ---- */

/* The thread's last look for new modules, in the image's clock. */
static AGENT_TLS uint64_t modules_checked_t;

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

void agent_record_alloc(void *ptr, size_t size)
{
	uint64_t t = agent_stamp_after();
	union pystack_rec py; /* the thread's Python frames, sent just before the event */
	int has_py = pystack_capture(&py, agent_gettid_cached(), t);
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
	if ((int64_t)(t - modules_checked_t) > (int64_t)agent_modules_age) {
		modules_checked_t = t;
		agent_modules_refresh();
	}
	agent_emit_event(ALLOC_EV_ALLOC, t, (uintptr_t)ptr, size, ips, n, has_py ? &py : NULL);
	/* sonde resolves Python frames from the code objects' descriptions, but
	 * reads the process for what they lack (a code not described; before
	 * 3.11 a source file by a relative path): a sample (rare), or in full
	 * mode a Python stack sent for the first time, goes out now, not with a
	 * later flush, which may come only at exit. */
	if (has_py && agent_my_buf && (agent_interval_bytes || agent_my_buf->py_new)) {
		agent_my_buf->py_new = 0;
		agent_tbuf_lock(agent_my_buf);
		agent_tbuf_flush(agent_my_buf);
		agent_tbuf_unlock(agent_my_buf);
	}
}
