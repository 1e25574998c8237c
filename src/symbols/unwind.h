/* unwind: DWARF CFI unwinding of a copied user stack (perf's REGS_USER +
 * STACK_USER), with libdwfl, for code built without frame pointers.
 *
 * Contract:
 * - One unwinder per process: it knows that process's executable mappings and
 *   opens each object file (through /proc/PID/root while it lives) to read its
 *   .eh_frame / .debug_frame.
 * - unwinder_set_maps() may be called at every change; the (costly) rebuild is
 *   done once, on the next unwind.
 * - Memory reads outside the copied stack fail: a frame whose return address
 *   lies beyond the copy ends the stack (the caller keeps what was found).
 * - Code in anonymous memory (JIT) has no CFI: from there the %rbp chain in
 *   the copy is followed instead, as JITs usually keep frame pointers. */
#ifndef SONDE_UNWIND_H
#define SONDE_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct maps;
struct unwinder;

/* x86_64 DWARF register numbers 0..16 (rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip). */
#define UNWIND_NREGS 17

struct unwind_input {
	pid_t tid;
	uint64_t regs[UNWIND_NREGS]; /* DWARF numbering */
	const uint8_t *stack;	     /* bytes copied from regs[7] (rsp) upwards */
	size_t stack_len;
};

struct unwinder *unwinder_new(pid_t pid);
void unwinder_free(struct unwinder *u);

/* The process's executable mappings changed (or are first known): a copy is taken. */
void unwinder_set_maps(struct unwinder *u, const struct maps *m);

/* Unwinds: writes up to max program counters, innermost first. Every pc but
 * the first is a return address minus one (it points into the call), so it
 * symbolizes to the calling line. Returns the number written (>= 1 when
 * in->regs holds a pc). */
size_t unwinder_unwind(struct unwinder *u, const struct unwind_input *in, uint64_t *pcs,
		       size_t max);

#endif
