/* vdso: sonde's vDSO image copied into a memfd. */
#include "vdso.h"
#include "maps.h"

#include <errno.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

int vdso_open(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return -ENOENT;
	struct maps m = MAPS_INIT;
	maps_read_pid(&m, getpid());
	const struct map_entry *e = maps_find(&m, base);
	int ret = -ENOENT;
	if (!e || strcmp(e->path, "[vdso]"))
		goto out;
	int fd = memfd_create("sonde-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	const char *p = (const char *)(uintptr_t)e->start;
	size_t len = (size_t)(e->end - e->start), done = 0;
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			close(fd);
			goto out;
		}
		done += (size_t)n;
	}
	ret = fd;
out:
	maps_release(&m);
	return ret;
}
