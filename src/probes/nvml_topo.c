/* nvml_topo: the GPUs NVML opens and the links between them (see
 * nvml_topo.h). */
#include "nvml_topo.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>

unsigned int nvml_gpus_open(const struct nvml_api *api, unsigned int count, struct nvml_gpu **out)
{
	struct nvml_gpu *g = xcalloc(count ? count : 1, sizeof(*g));
	unsigned int n = 0;
	for (unsigned int i = 0; i < count; i++) {
		struct nvml_gpu *d = &g[n];
		if (api->handle(i, &d->h) != NVML_SUCCESS)
			continue; /* a GPU the driver lists but cannot open (lost, no permission) */
		d->index = i;
		d->have_pci = api->pci_info && api->pci_info(d->h, &d->pci) == NVML_SUCCESS;
		if (d->have_pci)
			d->pci.busId[sizeof(d->pci.busId) - 1] = '\0';
		n++;
	}
	*out = g;
	return n;
}

static int pci_same(const nvmlPciInfo_t *x, const nvmlPciInfo_t *y)
{
	return x->domain == y->domain && x->bus == y->bus && x->device == y->device;
}

/* links[a * n + b]: a's active NVLinks whose far end is b; to_switch[a]: those
 * whose far end is no GPU of ours (an NVSwitch). */
static void nvlinks_count(const struct nvml_api *api, const struct nvml_gpu *g, unsigned int n,
			  unsigned int *links, unsigned int *to_switch)
{
	if (!api->nvlink_state || !api->nvlink_remote_pci)
		return;
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
			int active = NVML_FEATURE_DISABLED;
			nvmlPciInfo_t far;
			if (api->nvlink_state(g[a].h, l, &active) != NVML_SUCCESS ||
			    active != NVML_FEATURE_ENABLED ||
			    api->nvlink_remote_pci(g[a].h, l, &far) != NVML_SUCCESS)
				continue;
			unsigned int b;
			for (b = 0; b < n; b++)
				if (g[b].have_pci && pci_same(&g[b].pci, &far))
					break;
			if (b < n)
				links[a * n + b]++;
			else
				to_switch[a]++;
		}
}

/* nvidia-smi topo -m's names of the closest common ancestor; "": unknown. */
static const char *ancestor_name(int level)
{
	switch (level) {
	case NVML_TOPOLOGY_SINGLE:
		return "PIX";
	case NVML_TOPOLOGY_MULTIPLE:
		return "PXB";
	case NVML_TOPOLOGY_HOSTBRIDGE:
		return "PHB";
	case NVML_TOPOLOGY_NODE:
		return "NODE";
	case NVML_TOPOLOGY_SYSTEM:
		return "SYS";
	default:
		return "";
	}
}

void nvml_topology(const struct nvml_api *api, const struct nvml_gpu *g, unsigned int n,
		   char (*link)[NVML_LINK_NAME_MAX])
{
	unsigned int *links = xcalloc((size_t)n * n + 1, sizeof(*links));
	unsigned int *to_switch = xcalloc(n + 1, sizeof(*to_switch));
	nvlinks_count(api, g, n, links, to_switch);
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int b = 0; b < n; b++) {
			char *out = link[a * n + b];
			unsigned int k = links[a * n + b];
			int status = -1, level = -1;
			/* Through an NVSwitch, a's switch links count toward b when
			 * the driver says the two talk over NVLink. */
			if (!k && a != b && to_switch[a] && api->p2p_status &&
			    api->p2p_status(g[a].h, g[b].h, NVML_P2P_CAPS_INDEX_NVLINK, &status) ==
				NVML_SUCCESS &&
			    status == NVML_P2P_STATUS_OK)
				k = to_switch[a];
			if (a == b)
				snprintf(out, NVML_LINK_NAME_MAX, "X");
			else if (k)
				snprintf(out, NVML_LINK_NAME_MAX, "NV%u", k);
			else if (api->common_ancestor &&
				 api->common_ancestor(g[a].h, g[b].h, &level) == NVML_SUCCESS)
				snprintf(out, NVML_LINK_NAME_MAX, "%s", ancestor_name(level));
			else
				out[0] = '\0';
		}
	free(links);
	free(to_switch);
}
