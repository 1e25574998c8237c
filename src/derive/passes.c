/* passes: the table of every derive pass (derive.h); order follows needs. */
#include "derive.h"

#include <stddef.h>

extern const struct derive_pass derive_process_keys;
extern const struct derive_pass derive_pystitch;
extern const struct derive_pass derive_syscall_python;

const struct derive_pass *const derive_table[] = {
	&derive_process_keys,
	&derive_pystitch,
	&derive_syscall_python,
	NULL,
};
