/* records: CUPTI's activity buffers turned into gpu_wire.h lines
 * (cuda_agent.h). Runs on CUPTI's worker thread (and at exit on the thread
 * that exits); lines are gathered per buffer and written in large pieces. */
#include "cuda_agent.h"
#include "../../probes/gpu_wire.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORDS_BUFFER_BYTES (4 * 1024 * 1024)
#define RECORDS_ALIGN 8		  /* CUPTI's ACTIVITY_RECORD_ALIGNMENT */
#define LINES_BYTES (64 * 1024) /* written when it cannot hold one more line */

static pthread_mutex_t dropped_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t dropped_total;

struct lines {
	char buf[LINES_BYTES];
	size_t len, start; /* start: where the line being built begins */
};

static void lines_flush(struct lines *l)
{
	if (l->len)
		out_write(l->buf, l->len);
	l->len = l->start = 0;
}

static void line_begin(struct lines *l)
{
	if (l->len + GPU_LINE_MAX + 1 > sizeof(l->buf))
		lines_flush(l);
	l->start = l->len;
}

/* The integer fields; a line is never longer than GPU_LINE_MAX. */
__attribute__((format(printf, 2, 3))) static void line_addf(struct lines *l, const char *fmt, ...)
{
	size_t room = l->start + GPU_LINE_MAX - l->len;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(l->buf + l->len, room + 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n < room ? (size_t)n : room;
}

/* A string field, cut where the line would pass GPU_LINE_MAX; a tab or a
 * newline in it becomes a space. */
static void line_add_str(struct lines *l, const char *s)
{
	size_t end = l->start + GPU_LINE_MAX;
	for (; s && *s && l->len < end; s++)
		l->buf[l->len++] = *s == '\t' || *s == '\n' ? ' ' : *s;
}

static void line_end(struct lines *l)
{
	l->buf[l->len++] = '\n';
}

/* CUPTI's "none" (CUPTI_INVALID_STREAM_ID and friends) as -1. */
static long long id32(uint32_t v)
{
	return v == 0xFFFFFFFFu ? -1 : (long long)v;
}

static const char *copy_kind(uint8_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
	default: return "other";
	}
}

static const char *memory_kind(uint32_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
	case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
	case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
	case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "device";
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "managed";
	case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "array";
	default: return "unknown";
	}
}

static const char *sync_type(uint32_t t)
{
	switch (t) {
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream_wait_event";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context";
	default: return "unknown";
	}
}

/* A runtime API's name without CUPTI's version suffix: cudaMalloc_v3020 ->
 * cudaMalloc. */
static void line_add_api_name(struct lines *l, uint32_t cbid)
{
	const char *name = NULL;
	if (!cupti.GetCallbackName ||
	    cupti.GetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS ||
	    !name) {
		line_addf(l, "cbid_%u", cbid);
		return;
	}
	size_t n = strlen(name);
	const char *v = strstr(name, "_v");
	while (v) {
		const char *next = strstr(v + 2, "_v");
		if (!next)
			break;
		v = next;
	}
	if (v && v[2] && strspn(v + 2, "0123456789") == strlen(v + 2))
		n = (size_t)(v - name);
	char buf[256];
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, name, n);
	buf[n] = '\0';
	line_add_str(l, buf);
}

/* A copy's devices: the device it ran on is the source or the target as its
 * kind says, -1 for the host. */
static void memcpy_devices(uint8_t kind, uint32_t device, long long *src, long long *dst)
{
	int src_dev = kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOA ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOD ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOA ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH;
	int dst_dev = kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOA ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOD ||
		      kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOA;
	*src = src_dev ? (long long)device : -1;
	*dst = dst_dev ? (long long)device : -1;
}

static void record_line(struct lines *l, const CUpti_Activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)rec;
		line_begin(l);
		line_addf(l, "K\t%llu\t%llu\t%u\t%lld\t%u\t%d\t%d\t%d\t%d\t%d\t%d\t%u\t%d\t%d\t",
			  (unsigned long long)k->start, (unsigned long long)k->end, k->deviceId,
			  id32(k->streamId), k->correlationId, k->gridX, k->gridY, k->gridZ,
			  k->blockX, k->blockY, k->blockZ, (unsigned)k->registersPerThread,
			  k->staticSharedMemory, k->dynamicSharedMemory);
		line_add_str(l, k->name);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)rec;
		long long src, dst;
		memcpy_devices(m->copyKind, m->deviceId, &src, &dst);
		line_begin(l);
		line_addf(l, "M\t%llu\t%llu\t%u\t%lld\t%u\t%llu\t%d\t%lld\t%lld\t%s\t%s\t%s",
			  (unsigned long long)m->start, (unsigned long long)m->end, m->deviceId,
			  id32(m->streamId), m->correlationId, (unsigned long long)m->bytes,
			  (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0, src, dst,
			  copy_kind(m->copyKind), memory_kind(m->srcKind), memory_kind(m->dstKind));
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
		line_begin(l);
		line_addf(l, "M\t%llu\t%llu\t%u\t%lld\t%u\t%llu\t%d\t%lld\t%lld\t%s\t%s\t%s",
			  (unsigned long long)m->start, (unsigned long long)m->end, m->deviceId,
			  id32(m->streamId), m->correlationId, (unsigned long long)m->bytes,
			  (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0,
			  id32(m->srcDeviceId), id32(m->dstDeviceId), copy_kind(m->copyKind),
			  memory_kind(m->srcKind), memory_kind(m->dstKind));
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)rec;
		line_begin(l);
		line_addf(l, "S\t%llu\t%llu\t%u\t%lld\t%u\t%llu", (unsigned long long)m->start,
			  (unsigned long long)m->end, m->deviceId, id32(m->streamId),
			  m->correlationId, (unsigned long long)m->bytes);
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME: {
		const CUpti_ActivityAPI *a = (const void *)rec;
		line_begin(l);
		line_addf(l, "A\t%llu\t%llu\t%u\t%u\t%u\t", (unsigned long long)a->start,
			  (unsigned long long)a->end, a->threadId, a->correlationId,
			  a->returnValue);
		line_add_api_name(l, a->cbid);
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		/* The record has no thread: the API record of the same corr has. */
		const CUpti_ActivitySynchronization2 *y = (const void *)rec;
		line_begin(l);
		line_addf(l, "Y\t%llu\t%llu\t%lld\t%u\t%s", (unsigned long long)y->start,
			  (unsigned long long)y->end, id32(y->streamId), y->correlationId,
			  sync_type(y->type));
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMORY2: {
		const CUpti_ActivityMemory4 *m = (const void *)rec;
		const char *op =
			m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ?
				"alloc" :
			m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ?
				"free" :
				NULL;
		if (!op)
			return;
		const char *kind = memory_kind(m->memoryKind);
		if (!strcmp(kind, "array"))
			kind = "unknown";
		line_begin(l);
		line_addf(l, "G\t%llu\t%u\t%lld\t%llu\t%u\t%s\t%s", (unsigned long long)m->timestamp,
			  m->deviceId, (long long)m->address, (unsigned long long)m->bytes,
			  m->correlationId, op, kind);
		break;
	}
	case CUPTI_ACTIVITY_KIND_DEVICE: {
		const CUpti_ActivityDevice5 *d = (const void *)rec;
		line_begin(l);
		line_addf(l, "D\t%u\t%u\t%llu\t%u\t%u\t", d->id, d->numMultiprocessors,
			  (unsigned long long)d->globalMemorySize, d->computeCapabilityMajor,
			  d->computeCapabilityMinor);
		line_add_str(l, d->name);
		break;
	}
	default:
		return;
	}
	line_end(l);
}

void CUPTIAPI records_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *p = NULL;
	if (posix_memalign(&p, RECORDS_ALIGN, RECORDS_BUFFER_BYTES))
		p = NULL; /* CUPTI drops the records and counts them */
	*buffer = p;
	*size = p ? RECORDS_BUFFER_BYTES : 0;
	*max_records = 0; /* as many as fit */
}

void CUPTIAPI records_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				       size_t size, size_t valid_bytes)
{
	(void)ctx;
	(void)stream_id;
	(void)size;
	struct lines *l = malloc(sizeof(*l)); /* too big for any thread's stack */
	CUpti_Activity *rec = NULL;
	size_t lost = 0;
	if (l)
		l->len = l->start = 0;
	while (valid_bytes && cupti.ActivityGetNextRecord(buffer, valid_bytes, &rec) == CUPTI_SUCCESS)
		if (l)
			record_line(l, rec);
		else
			lost++;
	if (l)
		lines_flush(l);
	free(l);
	free(buffer);
	size_t dropped = 0;
	if (cupti.ActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS)
		dropped = 0;
	if (dropped + lost) {
		/* Under the lock: two buffers' totals must not be written out of order. */
		pthread_mutex_lock(&dropped_lock);
		dropped_total += (int64_t)(dropped + lost);
		out_counter("records_dropped", dropped_total);
		pthread_mutex_unlock(&dropped_lock);
	}
}

void records_report_dropped(void)
{
	pthread_mutex_lock(&dropped_lock);
	int64_t total = dropped_total;
	pthread_mutex_unlock(&dropped_lock);
	if (total)
		out_counter("records_dropped", total);
}
