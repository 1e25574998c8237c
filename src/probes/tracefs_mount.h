/* tracefs_mount: tracefs at /sys/kernel/tracing where nothing mounted it.
 * Some systems leave it unmounted until a tracer (perf, trace-cmd) mounts it;
 * a probe that needs it (a tracepoint's id, uprobe events) mounts it as root
 * for as long as it needs it and unmounts it after, so the system is left as
 * it was found. A mount sonde did not make is never unmounted by sonde. */
#ifndef SONDE_PROBES_TRACEFS_MOUNT_H
#define SONDE_PROBES_TRACEFS_MOUNT_H

/* Mounts tracefs when the kernel's mount point is there and empty, and sonde
 * runs as root: 1 when it did, 0 otherwise (already mounted, or not
 * possible). */
int tracefs_mount_if_absent(void);
/* Unmounts what tracefs_mount_if_absent() mounted (lazily: an open file of it
 * stays valid): 1 when done. */
int tracefs_unmount(void);

#endif
