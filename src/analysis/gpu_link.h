/* gpu_link: the peak speed of the link a GPU copy crosses, for the
 * interconnect's achieved-bandwidth table and the low-bandwidth finding
 * (docs/gpu.md, *Links*).
 *
 * A host-device copy crosses the device's PCIe link: its generation and
 * width from NVML (nvml_devices: the most the device and the slot allow),
 * else, without an NVML reading, the generation the device's architecture
 * came with (its compute capability in gpu_devices: 9.0 and later PCIe 5.0,
 * 8.x 4.0, older 3.0) at x16. A copy between two devices crosses their
 * NVLinks when nvml_topology says NV<n> (n links at the architecture's
 * per-link speed), else PCIe. NVML numbers devices in bus order and CUDA
 * by speed unless CUDA_DEVICE_ORDER=PCI_BUS_ID: the same index is taken
 * for the same device, which holds on machines whose GPUs are alike (and
 * then their links are too). Speeds are one direction, in GB/s (1e9
 * bytes/s), after the line encoding, before protocol overhead (large
 * pinned copies reach about 80% of them). */
#ifndef SONDE_GPU_LINK_H
#define SONDE_GPU_LINK_H

#include <sqlite3.h>
#include <stdint.h>

#define GPU_LINK_ACHIEVABLE 0.8 /* of the peak, for large pinned copies */

struct gpu_link {
	char name[32];	      /* "PCIe 4.0 x16", "NVLink x4" */
	double peak_gb_per_s; /* one direction */
	const char *source;   /* "nvml" or "compute capability" (a static string) */
};

/* PCIe's speed per lane and direction of generation gen (1 to 6) in GB/s;
 * 0 for another. */
double gpu_link_pcie_lane_gb_per_s(int64_t gen);

/* The link device's copies to and from the host cross (peer < 0), or the
 * one between device and peer. 0, or -1 when nothing in the recording says
 * (no NVML reading and no compute capability): *l untouched. */
int gpu_link_of(sqlite3 *db, int64_t device, int64_t peer, struct gpu_link *l);

#endif
