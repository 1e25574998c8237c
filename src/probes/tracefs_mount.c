/* tracefs_mount: tracefs mounted for a probe, and unmounted after (tracefs_mount.h). */
#include "tracefs_mount.h"
#include "../util/fileio.h"
#include "../util/log.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRACEFS_DIR "/sys/kernel/tracing"

int tracefs_mount_if_absent(void)
{
	struct stat st;
	if (geteuid() != 0 || stat(TRACEFS_DIR, &st) || !S_ISDIR(st.st_mode) ||
	    !dir_is_empty(TRACEFS_DIR))
		return 0;
	if (mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL)) {
		log_debug("mount tracefs: %s", strerror(errno));
		return 0;
	}
	return 1;
}

int tracefs_unmount(void)
{
	return umount2(TRACEFS_DIR, MNT_DETACH) == 0;
}
