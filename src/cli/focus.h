/* focus: --focus, the dimensions a run measures deeper and its report leads
 * with (cpu, memory, gpu, io, async). */
#ifndef SONDE_CLI_FOCUS_H
#define SONDE_CLI_FOCUS_H

struct probe_config;
struct strbuf;

#include <stddef.h>

/* Stack sampling rate of --focus cpu when -r is not given. */
#define FOCUS_CPU_RATE_HZ 499

enum focus_dimension {
	FOCUS_CPU = 1 << 0,
	FOCUS_MEMORY = 1 << 1,
	FOCUS_GPU = 1 << 2,
	FOCUS_IO = 1 << 3,
	FOCUS_ASYNC = 1 << 4,
};

/* Parses a comma list ("memory,gpu"; "interconnect" stands for gpu) into
 * *mask. 0, or -1 with a one-line error printed that names the nearest
 * valid name. *mask is written only on success. */
int focus_parse(const char *list, unsigned *mask);

/* The dimensions of mask, comma separated in the fixed order above, appended
 * to out (what the recording's meta "focus" holds). */
void focus_names(unsigned mask, struct strbuf *out);

/* The deeper settings of mask, where the user set nothing else: memory turns
 * the allocation tracker on (sampled; not when attaching, which cannot
 * preload it), cpu raises the default rate to FOCUS_CPU_RATE_HZ (rate_given:
 * -r was given, it stays). The probes of each dimension (cpu: cpu, python,
 * counters; memory: proc, alloc; gpu: nvml, cuda; io: offcpu, proc; async:
 * asyncio) are on by default; under --probes (only_probes not NULL) they are
 * added to the list, written to probes_buf, and *only_probes points at it.
 * 0, or -1 with the error printed when the list does not fit in cap. */
int focus_apply(unsigned mask, int attach, int rate_given, struct probe_config *cfg,
		const char **only_probes, char *probes_buf, size_t cap);

#endif
