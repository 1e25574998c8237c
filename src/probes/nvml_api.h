/* nvml_api: the part of NVIDIA's management library (libnvidia-ml.so.1) that
 * the nvml probe calls, declared here (there is no nvml.h to build against,
 * as in nvtop) and loaded with dlopen, so sonde runs where no driver is.
 *
 * Types and values are those of the upstream header (NVML_API_VERSION 13);
 * structs are NVML's own layouts, which only ever grow by new versions. The
 * symbols are the versioned names the library exports (nvmlInit_v2, ...).
 *
 * Contract: nvml_api_load() fills every pointer it finds and leaves NULL the
 * ones it does not; it fails only when the library or one of the four
 * required functions (init, shutdown, device count, device handle) is
 * missing. The library is never unloaded: the pointers stay valid for the
 * process's life. */
#ifndef SONDE_NVML_API_H
#define SONDE_NVML_API_H

struct strbuf;

typedef int nvmlReturn_t; /* an enum upstream: int-sized */
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
};

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
	unsigned int gpu;    /* % of the last sample period a kernel ran */
	unsigned int memory; /* % of it device memory was read or written */
} nvmlUtilization_t;

typedef struct {
	unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

#define NVML_PCI_BUS_ID_LEGACY_SIZE 16
#define NVML_PCI_BUS_ID_SIZE 32
typedef struct {
	char busIdLegacy[NVML_PCI_BUS_ID_LEGACY_SIZE];
	unsigned int domain, bus, device;
	unsigned int pciDeviceId, pciSubSystemId;
	char busId[NVML_PCI_BUS_ID_SIZE]; /* "00000000:07:00.0" */
} nvmlPciInfo_t;

/* nvmlProcessInfo_v2_t, what both _v2 and _v3 of ComputeRunningProcesses fill. */
typedef struct {
	unsigned int pid;		  /* in the host's pid namespace */
	unsigned long long usedGpuMemory; /* bytes; NVML_VALUE_NOT_AVAILABLE when hidden */
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum {
	NVML_TOPOLOGY_INTERNAL = 0,
	NVML_TOPOLOGY_SINGLE = 10,
	NVML_TOPOLOGY_MULTIPLE = 20,
	NVML_TOPOLOGY_HOSTBRIDGE = 30,
	NVML_TOPOLOGY_NODE = 40,
	NVML_TOPOLOGY_SYSTEM = 50,
};
enum { NVML_P2P_CAPS_INDEX_NVLINK = 2, NVML_P2P_STATUS_OK = 0 };
#define NVML_NVLINK_MAX_LINKS 36
#define NVML_DEVICE_NAME_SIZE 96
#define NVML_DEVICE_UUID_SIZE 96

typedef nvmlReturn_t (*nvml_dev_uint_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_text_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvml_dev_procs_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
typedef nvmlReturn_t (*nvml_dev_kind_uint_fn)(nvmlDevice_t, int, unsigned int *);

/* NULL: this library does not have it (optional ones only). */
struct nvml_api {
	nvmlReturn_t (*init)(void);			       /* nvmlInit_v2 */
	nvmlReturn_t (*shutdown)(void);			       /* nvmlShutdown */
	nvmlReturn_t (*count)(unsigned int *);		       /* nvmlDeviceGetCount_v2 */
	nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *); /* ..GetHandleByIndex_v2 */
	const char *(*error_string)(nvmlReturn_t);
	nvml_dev_text_fn name, uuid;
	nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *); /* _v3 */
	nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
	nvml_dev_uint_fn numa_node, power_limit_mw, pcie_max_gen, pcie_max_width;
	nvml_dev_kind_uint_fn max_clock_mhz, clock_mhz; /* kind: NVML_CLOCK_* */
	nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
	nvml_dev_kind_uint_fn pcie_kbps; /* kind: NVML_PCIE_UTIL_*; takes ~20 ms a call */
	nvml_dev_uint_fn power_mw;
	/* CurrentClocksEventReasons, else the older CurrentClocksThrottleReasons. */
	nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long *);
	/* ComputeRunningProcesses_v3, else _v2 (the same struct). */
	nvml_dev_procs_fn procs;
	nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int *);
	nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned int, nvmlPciInfo_t *); /* _v2 */
	nvmlReturn_t (*common_ancestor)(nvmlDevice_t, nvmlDevice_t, int *);
	nvmlReturn_t (*p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int *);
};

/* Loads the library at path (a bare name goes through the loader's search).
 * 0, or -1 with one line in why saying that there is no driver here. */
int nvml_api_load(struct nvml_api *api, const char *path, struct strbuf *why);

#define NVML_LIB_DEFAULT "libnvidia-ml.so.1"

/* Loads the library (SONDE_NVML_LIB, a test's fake driver, else
 * NVML_LIB_DEFAULT) and starts NVML: 0 with *count GPUs (at least one;
 * api->shutdown() stops it), or -1 with one line in why (not started). */
int nvml_api_open(struct nvml_api *api, unsigned int *count, struct strbuf *why);

/* The library's words for rc ("Unknown Error"), or the number. Static storage. */
const char *nvml_api_error(const struct nvml_api *api, nvmlReturn_t rc);

#endif
