/* probes: the table of every probe sonde knows. */
#include "probe.h"

#include <string.h>

extern const struct probe_ops probe_proc;
extern const struct probe_ops probe_cpu;
extern const struct probe_ops probe_offcpu;
extern const struct probe_ops probe_counters;
extern const struct probe_ops probe_python;

const struct probe_ops *const probe_table[] = {
	&probe_proc,
	&probe_cpu,
	&probe_offcpu, /* after cpu: its events live in the cpu probe */
	&probe_counters,
	&probe_python,
	NULL,
};

const struct probe_ops *probe_find(const char *name)
{
	for (size_t i = 0; probe_table[i]; i++)
		if (!strcmp(probe_table[i]->name, name))
			return probe_table[i];
	return NULL;
}
