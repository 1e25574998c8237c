/* fake_nvml: a libnvidia-ml with known answers, for testing the nvml probe
 * on machines without a GPU (SONDE_NVML_LIB=build/libfake_nvml.so).
 *
 * Two devices ("Sonde Fake GPU 0" and "1"; FAKE_NVML_DEVICES=N for another
 * count, 0 included), joined by 4 NVLinks. Device d reports: utilisation
 * 50+d / 20+d %, 80e9 bytes of memory of which (d+1)e9 used, PCIe TX 1000+d
 * and RX 2000+d KB/s, SM and memory clocks 1500+d and 2600+d MHz (max 1980
 * and 2619), power 300000 mW on device 0 (device 1: not supported), power
 * limit 700000 mW, PCIe gen 5 x16, throttle reasons 0x4 (0: SwPowerCap) or
 * 0x1 (1: idle). On device 0 run two processes: the pid in FAKE_NVML_PID (or
 * read from the file FAKE_NVML_PID_FILE) with 123456789 bytes, and pid 1
 * with 5 bytes. FAKE_NVML_INIT_FAIL=1 makes nvmlInit_v2 fail (driver not
 * loaded).
 *
 * Left out on purpose, to test that a missing function leaves its column
 * NULL or its fallback is taken: nvmlDeviceGetNumaNodeId,
 * nvmlDeviceGetCurrentClocksEventReasons (the older ThrottleReasons is
 * here), nvmlDeviceGetP2PStatus. fake_nvml_inits() says how many inits are
 * not shut down yet. */
#include "probes/nvml_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_DEVICES_MAX 8
#define FAKE_LINKS 4

struct nvmlDevice_st {
	unsigned int index;
};

static struct nvmlDevice_st fake_dev[FAKE_DEVICES_MAX] = { { 0 }, { 1 }, { 2 }, { 3 },
							    { 4 }, { 5 }, { 6 }, { 7 } };
static int fake_inits;

#define EXPORT __attribute__((visibility("default")))

static unsigned int fake_count(void)
{
	const char *s = getenv("FAKE_NVML_DEVICES");
	unsigned int n = s && *s ? (unsigned int)atoi(s) : 2;
	return n < FAKE_DEVICES_MAX ? n : FAKE_DEVICES_MAX;
}

static unsigned int fake_pid(void)
{
	const char *s = getenv("FAKE_NVML_PID");
	if (s && *s)
		return (unsigned int)atoi(s);
	const char *path = getenv("FAKE_NVML_PID_FILE");
	unsigned int pid = 0;
	FILE *f = path ? fopen(path, "r") : NULL;
	if (f) {
		if (fscanf(f, "%u", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return pid;
}

EXPORT int fake_nvml_inits(void)
{
	return fake_inits;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	const char *fail = getenv("FAKE_NVML_INIT_FAIL");
	if (fail && *fail == '1')
		return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
	fake_inits++;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	if (!fake_inits)
		return 1; /* NVML_ERROR_UNINITIALIZED */
	fake_inits--;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
	return rc == 9 ? "Driver Not Loaded" : "Unknown Error";
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = fake_count();
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
	if (i >= fake_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	*h = &fake_dev[i];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len)
{
	snprintf(buf, len, "Sonde Fake GPU %u", h->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len)
{
	snprintf(buf, len, "GPU-fa4e0000-0000-0000-0000-00000000000%u", h->index);
	return NVML_SUCCESS;
}

static void fake_pci(unsigned int index, nvmlPciInfo_t *pci)
{
	memset(pci, 0, sizeof(*pci));
	pci->domain = 0;
	pci->bus = 0x10 + index;
	pci->device = 0;
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
	snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *pci)
{
	fake_pci(h->index, pci);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
	m->total = 80000000000ULL;
	m->used = 1000000000ULL * (h->index + 1);
	m->free = m->total - m->used;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *mw)
{
	*mw = 700000;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int kind, unsigned int *mhz)
{
	if (kind != NVML_CLOCK_SM && kind != NVML_CLOCK_MEM)
		return NVML_ERROR_NOT_SUPPORTED;
	*mhz = kind == NVML_CLOCK_SM ? 1980 : 2619;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t h, unsigned int *gen)
{
	*gen = 5;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t h, unsigned int *width)
{
	*width = 16;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
	u->gpu = 50 + h->index;
	u->memory = 20 + h->index;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned int *kbps)
{
	if (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES)
		return NVML_ERROR_INVALID_ARGUMENT;
	*kbps = (counter == NVML_PCIE_UTIL_TX_BYTES ? 1000 : 2000) + h->index;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw)
{
	if (h->index == 1)
		return NVML_ERROR_NOT_SUPPORTED;
	*mw = 300000 + h->index;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int kind, unsigned int *mhz)
{
	if (kind != NVML_CLOCK_SM && kind != NVML_CLOCK_MEM)
		return NVML_ERROR_NOT_SUPPORTED;
	*mhz = (kind == NVML_CLOCK_SM ? 1500 : 2600) + h->index;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h,
							      unsigned long long *reasons)
{
	*reasons = h->index == 0 ? 0x4 : 0x1;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *count,
							    nvmlProcessInfo_t *infos)
{
	unsigned int n = h->index == 0 ? 2 : 0;
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*count = n;
	if (n) {
		infos[0] = (nvmlProcessInfo_t){ fake_pid(), 123456789ULL, 0, 0 };
		infos[1] = (nvmlProcessInfo_t){ 1, 5, 0, 0 };
	}
	return NVML_SUCCESS;
}

/* Devices 0 and 1 share links 0..3; every other link is down. */
static int fake_link_up(nvmlDevice_t h, unsigned int link)
{
	return h->index < 2 && link < FAKE_LINKS && fake_count() >= 2;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t h, unsigned int link, int *active)
{
	if (link >= 18)
		return NVML_ERROR_INVALID_ARGUMENT;
	*active = fake_link_up(h, link) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t h, unsigned int link,
							nvmlPciInfo_t *pci)
{
	if (!fake_link_up(h, link))
		return NVML_ERROR_NOT_SUPPORTED;
	fake_pci(1 - h->index, pci);
	return NVML_SUCCESS;
}

/* Devices past the NVLinked pair are across the CPU sockets. */
EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
							int *level)
{
	*level = a == b ? NVML_TOPOLOGY_INTERNAL
			: a->index < 2 && b->index < 2 ? NVML_TOPOLOGY_HOSTBRIDGE
						       : NVML_TOPOLOGY_SYSTEM;
	return NVML_SUCCESS;
}
