/* nvml_topo: the GPUs NVML opens and how each pair is connected, named as
 * `nvidia-smi topo -m` names it. Shared by the nvml probe (nvml_topology)
 * and `sonde doctor`.
 *
 * Contract: a link is "X" (a GPU with itself), "NV<k>" (k active NVLinks
 * between the two, or through an NVSwitch when the driver says the pair
 * talks over NVLink), the closest common PCIe ancestor ("PIX", "PXB", "PHB",
 * "NODE", "SYS"), or "" when the driver does not say. Nothing here starts
 * or stops NVML. */
#ifndef SONDE_NVML_TOPO_H
#define SONDE_NVML_TOPO_H

#include "nvml_api.h"

struct nvml_gpu {
	unsigned int index; /* NVML's (PCI bus order, not CUDA's) */
	nvmlDevice_t h;
	int have_pci;
	nvmlPciInfo_t pci;
};

#define NVML_LINK_NAME_MAX 16

/* The GPUs of the count the driver lists that it opens (a GPU lost or
 * forbidden is left out): a malloc'd array in *out and how many. */
unsigned int nvml_gpus_open(const struct nvml_api *api, unsigned int count, struct nvml_gpu **out);

/* link[a * n + b]: how g[a] reaches g[b], for every ordered pair. */
void nvml_topology(const struct nvml_api *api, const struct nvml_gpu *g, unsigned int n,
		   char (*link)[NVML_LINK_NAME_MAX]);

#endif
