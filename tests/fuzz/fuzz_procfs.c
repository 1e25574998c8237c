/* fuzz_procfs: the /proc parsers must survive any text a process can make
 * /proc show (comm is chosen by the process itself).
 * sources: src/target/procfs.c src/util/fileio.c src/util/hashmap.c src/util/strbuf.c */
#include "target/procfs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *buf = malloc(n + 1);
	memcpy(buf, data, n);
	buf[n] = '\0';
	struct procfs_stat st;
	struct procfs_status status;
	struct procfs_io io;
	struct procfs_schedstat ss;
	procfs_parse_stat(buf, &st);
	procfs_parse_status(buf, &status);
	procfs_parse_io(buf, &io);
	procfs_parse_schedstat(buf, &ss);
	free(buf);
	return 0;
}
