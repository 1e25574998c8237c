/* vdso: a readable file holding the kernel's vDSO image, so "[vdso]" frames
 * (clock_gettime, gettimeofday) can be symbolized and unwound like any ELF.
 * Every 64-bit process of a kernel maps the same image, so sonde's own copy
 * stands for the target's. */
#ifndef SONDE_VDSO_H
#define SONDE_VDSO_H

/* A new memfd with sonde's vDSO (caller closes it), or -errno. */
int vdso_open(void);

#endif
