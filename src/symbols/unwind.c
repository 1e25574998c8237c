/* unwind: libdwfl unwinding over a perf user-stack copy. */
#define LOG_DOMAIN "unwind"
#include "unwind.h"
#include "maps.h"
#include "vdso.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct unwinder {
	pid_t pid;
	struct maps maps; /* our copy */
	int stale;	  /* maps changed since dwfl was built */
	Dwfl *dwfl;
	Elf *arch_elf; /* tells libdwfl the machine; kept while dwfl lives */
	int arch_fd;
	/* The sample being unwound, and what it produced. */
	const struct unwind_input *in;
	uint64_t *pcs;
	size_t n, max;
};

static char *debuginfo_path;
static const Dwfl_Callbacks unwind_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

struct unwinder *unwinder_new(pid_t pid)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));
	u->pid = pid;
	u->stale = 1;
	u->arch_fd = -1;
	return u;
}

static void drop_dwfl(struct unwinder *u)
{
	if (u->dwfl)
		dwfl_end(u->dwfl);
	u->dwfl = NULL;
	if (u->arch_elf)
		elf_end(u->arch_elf);
	u->arch_elf = NULL;
	if (u->arch_fd >= 0)
		close(u->arch_fd);
	u->arch_fd = -1;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	drop_dwfl(u);
	maps_release(&u->maps);
	free(u);
}

void unwinder_set_maps(struct unwinder *u, const struct maps *m)
{
	maps_clear(&u->maps);
	for (size_t i = 0; i < m->n; i++)
		maps_insert(&u->maps, m->v[i].start, m->v[i].end, m->v[i].pgoff, m->v[i].path);
	u->stale = 1;
}

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct unwinder *u = arg;
	if (*thread_argp || !u->in)
		return 0;
	*thread_argp = u;
	return u->in->tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	struct unwinder *u = arg;
	if (!u->in || u->in->tid != tid)
		return false;
	*thread_argp = u;
	return true;
}

static int stack_read(const struct unwind_input *in, uint64_t addr, uint64_t *v);

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct unwinder *u = arg;
	uint64_t v;
	if (stack_read(u->in, addr, &v))
		return false;
	*result = v;
	return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Word regs[UNWIND_NREGS];
	for (int i = 0; i < UNWIND_NREGS; i++)
		regs[i] = u->in->regs[i];
	return dwfl_thread_state_registers(thread, 0, UNWIND_NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

static int open_in_root(pid_t pid, const char *path)
{
	char buf[4200];
	snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)pid, path);
	int fd = file_open_regular(buf, 0);
	if (fd == -EFTYPE_SONDE)
		return -1; /* a FIFO or device now at the mapped name: never opened blocking */
	fd = fd >= 0 ? fd : file_open_regular(path, 0);
	return fd >= 0 ? fd : -1;
}

/* Load bias of the file mapped by e: where its p_vaddr 0 lands in the process. */
static int mapping_bias(int fd, const struct map_entry *e, uint64_t *bias)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t phnum = 0;
	int ret = -1;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (e->pgoff >= ph.p_offset && e->pgoff < ph.p_offset + (ph.p_filesz ? ph.p_filesz : 1)) {
			*bias = e->start - e->pgoff + ph.p_offset - ph.p_vaddr;
			ret = 0;
			break;
		}
	}
out:
	if (elf)
		elf_end(elf);
	return ret;
}

static int rebuild(struct unwinder *u)
{
	drop_dwfl(u);
	u->stale = 0;
	u->dwfl = dwfl_begin(&unwind_callbacks);
	if (!u->dwfl)
		return -1;
	dwfl_report_begin(u->dwfl);
	for (size_t i = 0; i < u->maps.n; i++) {
		const struct map_entry *e = &u->maps.v[i];
		int is_vdso = !strcmp(e->path, "[vdso]");
		if (e->path[0] != '/' && !is_vdso)
			continue;
		int fd = is_vdso ? vdso_open() : open_in_root(u->pid, e->path);
		uint64_t bias;
		if (fd < 0)
			continue;
		if (mapping_bias(fd, e, &bias)) {
			close(fd);
			continue;
		}
		/* dwfl keeps fd on success; on failure (an overlap) it is ours. */
		if (!dwfl_report_elf(u->dwfl, e->path, e->path, fd, bias, true))
			close(fd);
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
	u->arch_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	u->arch_elf = u->arch_fd >= 0 ? elf_begin(u->arch_fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (!dwfl_attach_state(u->dwfl, u->arch_elf, u->pid, &thread_callbacks, u)) {
		log_debug("cannot unwind pid %d: %s", (int)u->pid, dwfl_errmsg(-1));
		drop_dwfl(u);
		return -1;
	}
	return 0;
}

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation = false;
	if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	if (!activation)
		pc--;
	u->pcs[u->n++] = pc;
	return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* Reads the u64 at addr from the stack copy. */
static int stack_read(const struct unwind_input *in, uint64_t addr, uint64_t *v)
{
	uint64_t sp = in->regs[7];
	if (addr < sp || addr - sp > in->stack_len || in->stack_len - (addr - sp) < 8)
		return -1;
	memcpy(v, in->stack + (addr - sp), sizeof(*v));
	return 0;
}

/* Frame-pointer walk over the stack copy, for code without CFI (JIT code
 * usually keeps %rbp chains). Frame pointers must climb the stack. */
static size_t fp_walk(const struct unwind_input *in, uint64_t *pcs, size_t n, size_t max)
{
	uint64_t fp = in->regs[6];
	while (n < max) {
		uint64_t next, ret;
		if (stack_read(in, fp, &next) || stack_read(in, fp + 8, &ret) || ret == 0)
			break;
		pcs[n++] = ret - 1;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

size_t unwinder_unwind(struct unwinder *u, const struct unwind_input *in, uint64_t *pcs,
		       size_t max)
{
	if (!max)
		return 0;
	if (u->stale)
		rebuild(u);
	u->in = in;
	u->pcs = pcs;
	u->n = 0;
	u->max = max;
	if (u->dwfl)
		dwfl_getthread_frames(u->dwfl, in->tid, frame_cb, u);
	if (u->n == 0 && in->regs[16])
		pcs[u->n++] = in->regs[16];
	const struct map_entry *leaf = maps_find(&u->maps, in->regs[16]);
	if (u->n == 1 && (!leaf || !leaf->path[0]))
		u->n = fp_walk(in, pcs, u->n, max); /* no CFI in anonymous code: try %rbp */
	u->in = NULL;
	return u->n;
}
