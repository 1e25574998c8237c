/* cuda_agent: sonde's CUDA agent, loaded into every CUDA process of the
 * target by the driver through CUDA_INJECTION64_PATH (the cuda probe sets it
 * and SONDE_CUDA_DIR), and by NVTX through NVTX_INJECTION64_PATH. It records
 * CUPTI activity and NVTX ranges as the lines of src/probes/gpu_wire.h into
 * $SONDE_CUDA_DIR/cuda-PID.txt.
 *
 * The modules, all hidden but the entry points (CUDA's, NVTX's, and
 * sonde_region_push/pop for include/sonde.h and python/sonde):
 *   cupti_lib.c  libcupti loaded with dlopen, its functions found with dlsym
 *                (the CUPTI headers give types and constants only)
 *   out.c        the process's file: opened once per pid, written under a lock
 *   records.c    CUPTI's activity buffers turned into wire lines
 *   inject.c     the entry point: claims CUPTI, enables kinds, flushes
 *   nvtx.c       InitializeInjectionNvtx2, NVTX's entry point (loaded through
 *                NVTX_INJECTION64_PATH): the program's NVTX ranges as N lines
 * Nothing here may crash the target or print on its stdout. */
#ifndef SONDE_CUDA_AGENT_H
#define SONDE_CUDA_AGENT_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

/* The CUPTI functions the agent calls, found in the loaded libcupti. */
struct cupti_fns {
	CUptiResult (*GetVersion)(uint32_t *version);
	CUptiResult (*GetResultString)(CUptiResult result, const char **str);
	CUptiResult (*Subscribe)(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				 void *userdata);
	CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle subscriber);
	CUptiResult (*GetCallbackName)(CUpti_CallbackDomain domain, uint32_t cbid,
				       const char **name);
	CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc fn);
	CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType type);
	CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc requested,
						 CUpti_BuffersCallbackCompleteFunc completed);
	CUptiResult (*ActivityEnable)(CUpti_ActivityKind kind);
	CUptiResult (*ActivityGetNextRecord)(uint8_t *buffer, size_t valid_bytes,
					     CUpti_Activity **record);
	CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext context, uint32_t stream_id,
						    size_t *dropped);
	CUptiResult (*ActivityFlushAll)(uint32_t flag);
};

extern struct cupti_fns cupti;

/* Loads libcupti (SONDE_CUPTI_LIB, else libcupti.so.13 by name, else the
 * toolkit's usual places) and fills `cupti`; never unloads it (CUPTI 13.0
 * crashes when unloaded without cuptiFinalize). 0, or -1 with one line in
 * why[why_len]; *version is CUPTI's API version (0 when none answered). */
int cupti_lib_load(uint32_t *version, char *why, size_t why_len);

/* CUPTI's name for a result ("CUPTI_ERROR_UNKNOWN"), or its number. buf
 * holds the text when there is no name; the result is valid while buf is. */
const char *cupti_lib_result(CUptiResult rc, char *buf, size_t buf_len);

/* Creates $dir/cuda-PID.txt (exclusive, no links followed, 0600) and writes
 * the V line, at the first call of the process (CUDA's injection or NVTX's,
 * whichever comes first; NVTX's knows no CUPTI version and gives 0). A later
 * call only writes a second V line when it brings a version the first did
 * not. 0, or -1 with errno (the caller says so on stderr). */
int out_open(const char *dir, uint32_t cupti_version);

/* Appends whole lines (buf ends with a newline). In a forked child the
 * first write opens the child's own file. A failed write is counted, never
 * fatal. Safe from any thread. */
void out_write(const char *buf, size_t len);

/* One line of a kind with one string ("Q\treason\n" ...), tabs and newlines
 * in the text made spaces. */
void out_line_str(char kind, const char *text);

/* Writes "X\tname\tcount". */
void out_counter(const char *name, int64_t count);

/* Failed writes so far (in this process). */
int64_t out_write_errors(void);

/* CUPTI's buffer callbacks: 4 MiB, 8-byte aligned; each completed buffer
 * becomes wire lines, and the dropped records' total an X line when it grew. */
void CUPTIAPI records_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI records_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				       size_t size, size_t valid_bytes);

/* Writes the dropped records' total when it is not zero (at exit). */
void records_report_dropped(void);

#endif
