/* nvml_api: libnvidia-ml loaded with dlopen, its functions found by name
 * (see nvml_api.h). */
#include "nvml_api.h"
#include "../util/strbuf.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The first of names (NULL-terminated) the library has. */
static void *sym_first(void *lib, const char *const *names)
{
	for (; *names; names++) {
		void *f = dlsym(lib, *names);
		if (f)
			return f;
	}
	return NULL;
}

#define SYM(field, ...) \
	(api->field = sym_first(lib, (const char *const[]){ __VA_ARGS__, NULL }))

int nvml_api_load(struct nvml_api *api, const char *path, struct strbuf *why)
{
	memset(api, 0, sizeof(*api));
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *err = dlerror();
		if (!err || strstr(err, "No such file"))
			strbuf_addf(why, "no NVIDIA driver here: %s not found", path);
		else
			strbuf_addf(why, "no usable NVIDIA driver here: %s", err);
		return -1;
	}
	/* Required: without these nothing can be read. */
	if (!SYM(init, "nvmlInit_v2") || !SYM(shutdown, "nvmlShutdown") ||
	    !SYM(count, "nvmlDeviceGetCount_v2") || !SYM(handle, "nvmlDeviceGetHandleByIndex_v2")) {
		strbuf_addf(why, "no usable NVIDIA driver here (%s lacks nvmlInit_v2, "
				 "nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2: too old)",
			    path);
		memset(api, 0, sizeof(*api));
		return -1;
	}
	SYM(error_string, "nvmlErrorString");
	SYM(name, "nvmlDeviceGetName");
	SYM(uuid, "nvmlDeviceGetUUID");
	SYM(pci_info, "nvmlDeviceGetPciInfo_v3");
	SYM(memory, "nvmlDeviceGetMemoryInfo");
	SYM(numa_node, "nvmlDeviceGetNumaNodeId");
	SYM(power_limit_mw, "nvmlDeviceGetEnforcedPowerLimit");
	SYM(pcie_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
	SYM(pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
	SYM(max_clock_mhz, "nvmlDeviceGetMaxClockInfo");
	SYM(clock_mhz, "nvmlDeviceGetClockInfo");
	SYM(utilization, "nvmlDeviceGetUtilizationRates");
	SYM(pcie_kbps, "nvmlDeviceGetPcieThroughput");
	SYM(power_mw, "nvmlDeviceGetPowerUsage");
	SYM(throttle, "nvmlDeviceGetCurrentClocksEventReasons",
	    "nvmlDeviceGetCurrentClocksThrottleReasons");
	SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3",
	    "nvmlDeviceGetComputeRunningProcesses_v2");
	SYM(nvlink_state, "nvmlDeviceGetNvLinkState");
	SYM(nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	SYM(common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
	SYM(p2p_status, "nvmlDeviceGetP2PStatus");
	return 0;
}

const char *nvml_api_error(const struct nvml_api *api, nvmlReturn_t rc)
{
	static char num[32];
	const char *s = api->error_string ? api->error_string(rc) : NULL;
	if (s && *s)
		return s;
	snprintf(num, sizeof(num), "error %d", rc);
	return num;
}

/* Loads the library and starts NVML: 0 with *count GPUs (started: shut down
 * by nvml_shutdown), or -1 with one line in why (not started). */
int nvml_api_open(struct nvml_api *api, unsigned int *count, struct strbuf *why)
{
	const char *path = getenv("SONDE_NVML_LIB");
	if (!path || !*path)
		path = NVML_LIB_DEFAULT;
	if (nvml_api_load(api, path, why))
		return -1;
	nvmlReturn_t rc = api->init();
	if (rc != NVML_SUCCESS) {
		strbuf_addf(why, "NVML could not start: %s", nvml_api_error(api, rc));
		return -1;
	}
	unsigned int n = 0;
	rc = api->count(&n);
	if (rc != NVML_SUCCESS || !n) {
		if (rc != NVML_SUCCESS)
			strbuf_addf(why, "NVML cannot count the GPUs: %s", nvml_api_error(api, rc));
		else
			strbuf_addstr(why, "the NVIDIA driver sees no GPU");
		api->shutdown();
		return -1;
	}
	*count = n;
	return 0;
}
