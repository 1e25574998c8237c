/* cupti_lib: libcupti found at run time, never linked (cuda_agent.h): the
 * target may already hold a copy (PyTorch ships one), and a process that
 * never loads this agent must not need CUPTI installed. */
#include "cuda_agent.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cupti_fns cupti;

/* By name first: a copy already in the process (or on the library path)
 * is the one to share, a second CUPTI instance would fight it. */
static const char *const cupti_paths[] = {
	"libcupti.so.13",
	"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
	"/usr/local/cuda/lib64/libcupti.so.13",
	"/usr/local/cuda/lib/libcupti.so.13",
	"/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
};

static void *lib_open(const char **tried)
{
	const char *env = getenv("SONDE_CUPTI_LIB");
	if (env && *env) {
		*tried = env;
		return dlopen(env, RTLD_NOW | RTLD_LOCAL);
	}
	*tried = cupti_paths[0];
	for (size_t i = 0; i < sizeof(cupti_paths) / sizeof(cupti_paths[0]); i++) {
		void *h = dlopen(cupti_paths[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	return NULL;
}

int cupti_lib_load(uint32_t *version, char *why, size_t why_len)
{
	const char *tried;
	void *h = lib_open(&tried);
	if (!h) {
		snprintf(why, why_len, "CUPTI cannot start: %s was not found (set SONDE_CUPTI_LIB "
				       "to the libcupti.so.13 of your CUDA 13 toolkit)",
			 tried);
		return -1;
	}
	static const struct {
		const char *name;
		size_t offset;
	} syms[] = {
#define SYM(f) { "cupti" #f, offsetof(struct cupti_fns, f) }
		SYM(GetVersion),
		SYM(GetResultString),
		SYM(Subscribe),
		SYM(Unsubscribe),
		SYM(GetCallbackName),
		SYM(ActivityRegisterTimestampCallback),
		SYM(SetThreadIdType),
		SYM(ActivityRegisterCallbacks),
		SYM(ActivityEnable),
		SYM(ActivityGetNextRecord),
		SYM(ActivityGetNumDroppedRecords),
		SYM(ActivityFlushAll),
#undef SYM
	};
	struct cupti_fns fns;
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			snprintf(why, why_len, "CUPTI cannot start: %s has no %s (too old a CUPTI)",
				 tried, syms[i].name);
			return -1;
		}
		memcpy((char *)&fns + syms[i].offset, &f, sizeof(f));
	}
	uint32_t v = 0;
	if (fns.GetVersion(&v) != CUPTI_SUCCESS || v / 10000 != CUPTI_API_VERSION / 10000) {
		snprintf(why, why_len, "CUPTI cannot start: the loaded libcupti has API version %u, "
				       "sonde's agent was built for %u (CUDA %u)",
			 v, (unsigned)CUPTI_API_VERSION, (unsigned)CUPTI_API_VERSION / 10000);
		*version = v;
		return -1;
	}
	cupti = fns;
	*version = v;
	return 0;
}

const char *cupti_lib_result(CUptiResult rc, char *buf, size_t buf_len)
{
	const char *s = NULL;
	if (cupti.GetResultString && cupti.GetResultString(rc, &s) == CUPTI_SUCCESS && s)
		return s;
	snprintf(buf, buf_len, "CUPTI error %d", (int)rc);
	return buf;
}
