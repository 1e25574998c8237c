/* vdso: a readable file holding the kernel's vDSO image, so "[vdso]" frames
 * (clock_gettime, gettimeofday) can be symbolized and unwound like any ELF,
 * and names for the vDSO's functions that no symbol table names.
 * Every 64-bit process of a kernel maps the same image, so sonde's own copy
 * stands for the target's. */
#ifndef SONDE_VDSO_H
#define SONDE_VDSO_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* A file with the running kernel's vDSO (caller closes it), or -errno: the
 * kernel's unstripped image when one with the same build-id is installed
 * (/lib/modules/RELEASE/vdso/, `make vdso_install`; its symbol table names
 * the local functions too), else a memfd with sonde's mapped copy (exported
 * functions only, in its dynamic symbol table). */
int vdso_open(void);

/* The start of the function holding vaddr in an ELF image, from its unwind
 * table (.eh_frame_hdr found through PT_GNU_EH_FRAME: section headers are not
 * needed): 0 and *start_vaddr, or -1 when no FDE covers vaddr. The vDSO's
 * own static functions (6.18's out-of-line clock read) have an FDE but no
 * symbol. */
int vdso_function_start(Elf *elf, uint64_t vaddr, uint64_t *start_vaddr);

/* The name given to an unnamed vDSO function starting at start_vaddr:
 * "vdso_fn_0x780". */
void vdso_function_name(uint64_t start_vaddr, char *buf, size_t cap);

#endif
