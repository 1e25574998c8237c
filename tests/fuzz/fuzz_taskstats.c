/* fuzz_taskstats: the netlink decoder must hold any bytes: lengths that lie,
 * nests that overrun, structs shorter or longer than ours.
 * sources: src/target/taskstats.c src/util/fileio.c src/util/strbuf.c src/util/log.c src/util/utf8.c */
#include "target/taskstats.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void on_exit_record(void *data, const struct task_exit *e)
{
	(void)data;
	if (e->comm[sizeof(e->comm) - 1] != '\0')
		abort(); /* comm must always be terminated */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	/* Netlink buffers are 4-byte aligned in real life: copy to aligned memory. */
	uint32_t *buf = malloc(n + 4);
	memcpy(buf, data, n);
	taskstats_parse(buf, n, on_exit_record, NULL);
	free(buf);
	return 0;
}
