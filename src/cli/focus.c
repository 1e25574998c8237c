/* focus: parse --focus and turn it into the probes and settings it means. */
#include "focus.h"
#include "cli.h"
#include "suggest.h"
#include "../probes/probe.h"
#include "../util/parse.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	unsigned mask;
	const char *probes; /* what measures the dimension */
} focus_table[] = {
	{ "cpu", FOCUS_CPU, "cpu,python,counters" },
	{ "memory", FOCUS_MEMORY, "proc,alloc" },
	{ "gpu", FOCUS_GPU, "nvml,cuda" },
	{ "io", FOCUS_IO, "offcpu,proc,syscalls" },
	{ "async", FOCUS_ASYNC, "asyncio" },
	{ "interconnect", FOCUS_GPU, "nvml,cuda" }, /* transfers: the GPU probes measure them */
};
#define FOCUS_N	    (sizeof(focus_table) / sizeof(focus_table[0]))
#define FOCUS_VALID "cpu, memory, gpu, io, async (interconnect counts as gpu)"

int focus_parse(const char *list, unsigned *mask)
{
	unsigned m = 0;
	for (const char *p = list;; p++) {
		size_t n = strcspn(p, ",");
		struct suggest near;
		suggest_init(&near, p, n);
		size_t i = 0;
		for (; i < FOCUS_N; i++) {
			if (strlen(focus_table[i].name) == n && !strncmp(focus_table[i].name, p, n))
				break;
			suggest_try(&near, focus_table[i].name);
		}
		if (i == FOCUS_N) {
			if (!n)
				cli_error("--focus '%s': a name is empty (valid: %s)", list,
					  FOCUS_VALID);
			else if (suggest_result(&near))
				cli_error("--focus: '%.*s' is not a dimension (did you mean '%s'? "
					  "valid: %s)",
					  (int)n, p, suggest_result(&near), FOCUS_VALID);
			else
				cli_error("--focus: '%.*s' is not a dimension (valid: %s)", (int)n,
					  p, FOCUS_VALID);
			return -1;
		}
		m |= focus_table[i].mask;
		p += n;
		if (!*p)
			break;
	}
	*mask = m;
	return 0;
}

void focus_names(unsigned mask, struct strbuf *out)
{
	int first = 1;
	for (size_t i = 0; i < FOCUS_N; i++) {
		/* interconnect shares gpu's bit: named once, as gpu */
		if (!(mask & focus_table[i].mask))
			continue;
		mask &= ~focus_table[i].mask;
		strbuf_addf(out, "%s%s", first ? "" : ",", focus_table[i].name);
		first = 0;
	}
}

int focus_apply(unsigned mask, int attach, int rate_given, struct probe_config *cfg,
		const char **only_probes, char *probes_buf, size_t cap)
{
	if ((mask & FOCUS_MEMORY) && !attach && !cfg->memory_mode)
		cfg->memory_mode = PROBE_MEMORY_SAMPLED;
	if (mask & FOCUS_IO)
		cfg->syscalls = 1;
	if ((mask & FOCUS_CPU) && !rate_given)
		cfg->rate_hz = FOCUS_CPU_RATE_HZ;
	if (!*only_probes)
		return 0;
	struct strbuf list = STRBUF_INIT;
	strbuf_addstr(&list, *only_probes);
	for (size_t i = 0; i < FOCUS_N; i++) {
		if (!(mask & focus_table[i].mask))
			continue;
		for (const char *p = focus_table[i].probes; *p;) {
			size_t n = strcspn(p, ",");
			/* attaching cannot preload the allocation tracker */
			int skip = attach && n == 5 && !strncmp(p, "alloc", 5);
			if (!skip && !parse_list_has(list.buf, p, n))
				strbuf_addf(&list, ",%.*s", (int)n, p);
			p += n;
			p += *p == ',';
		}
	}
	int rc = 0;
	if (list.len >= cap) {
		cli_error("--probes with --focus: the list of probes is too long (%zu characters)",
			  list.len);
		rc = -1;
	} else {
		memcpy(probes_buf, list.buf, list.len + 1);
		*only_probes = probes_buf;
	}
	strbuf_release(&list);
	return rc;
}
