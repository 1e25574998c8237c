/* passes: the table of every derive pass (derive.h), from pass_list.h; the
 * order they run in follows what they read and write. */
#include "derive.h"

#include <stddef.h>

#define DERIVE_PASS(name) extern const struct derive_pass derive_##name;
#include "pass_list.h"
#undef DERIVE_PASS

const struct derive_pass *const derive_table[] = {
#define DERIVE_PASS(name) &derive_##name,
#include "pass_list.h"
#undef DERIVE_PASS
	NULL,
};
