/* nvtx: the program's NVTX ranges and marks as N lines (gpu_wire.h), in the
 * same cuda-PID.txt as the CUPTI records (cuda_agent.h). NVTX (nvtx3's
 * header-only code compiled into the program, or libnvToolsExt) loads this
 * library from NVTX_INJECTION64_PATH at the program's first NVTX call and
 * calls InitializeInjectionNvtx2, which points NVTX's function tables at the
 * handlers below. No GPU or driver is needed for this part.
 *
 * Push/pop ranges nest per thread (one stack a thread; a domain's pop closes
 * that domain's innermost range); start/end ranges are kept by id in one
 * table, so that another thread may end them. Each thread buffers its lines
 * and writes them when the buffer fills, at least every second while it
 * records, when it exits and when the process exits (then still-open ranges
 * are written as ending there, closed 0). Everything is bounded: deeper
 * nesting, more open start/end ranges, more domains or registered strings
 * than the limits below are counted in X lines, never grown. */
#define NVTX_NO_IMPL
#include "cuda_agent.h"
#include "../../probes/gpu_wire.h"

#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#define NVTX_DEPTH_MAX	 64   /* push ranges open at once on a thread */
#define NVTX_TEXT_MAX	 256  /* bytes kept of a message or domain name */
#define NVTX_OPEN_MAX	 1024 /* start/end ranges open at once */
#define NVTX_DOMAINS_MAX 256
#define NVTX_STRINGS_MAX 65536
#define NVTX_BUF_BYTES	 16384
#define NVTX_FLUSH_NS	 1000000000LL

struct nvtxDomainRegistration_st {
	char name[NVTX_TEXT_MAX];
};

struct nvtxStringRegistration_st {
	char text[NVTX_TEXT_MAX];
};

struct open_range {
	int64_t start_ns;
	int depth;
	const struct nvtxDomainRegistration_st *domain; /* NULL: the default domain */
	char text[NVTX_TEXT_MAX];
};

/* One thread's stack and lines; on the threads list from its first record
 * until it exits. */
struct nvtx_thread {
	pthread_mutex_t lock;
	pid_t tid;
	int depth; /* pushes open, including those past NVTX_DEPTH_MAX */
	struct open_range stack[NVTX_DEPTH_MAX];
	size_t len; /* of buf */
	int64_t flushed_ns;
	char buf[NVTX_BUF_BYTES];
	struct nvtx_thread *next;
};

/* A start/end range, in slot id % NVTX_OPEN_MAX while open. */
struct open_id {
	uint64_t id; /* 0: free */
	pid_t tid;
	struct open_range r;
};

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER; /* before any thread's */
static struct nvtx_thread *threads;
static pthread_key_t thread_key;
static __thread struct nvtx_thread *self;

static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_id open_ids[NVTX_OPEN_MAX];
static uint64_t next_id = 1;

static struct nvtxDomainRegistration_st domains[NVTX_DOMAINS_MAX];
static int ndomains;
static struct nvtxStringRegistration_st *strings[NVTX_STRINGS_MAX];
static int nstrings;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

/* What could not be kept (X lines at exit). */
static int64_t too_deep, too_many_open, unmatched_ends, names_refused;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* With t->lock held. */
static void thread_flush(struct nvtx_thread *t, int64_t at_ns)
{
	if (t->len)
		out_write(t->buf, t->len);
	t->len = 0;
	t->flushed_ns = at_ns;
}

static void thread_gone(void *arg)
{
	struct nvtx_thread *t = arg, **p;
	pthread_mutex_lock(&threads_lock);
	for (p = &threads; *p && *p != t; p = &(*p)->next)
		;
	if (*p)
		*p = t->next;
	pthread_mutex_unlock(&threads_lock);
	pthread_mutex_lock(&t->lock);
	thread_flush(t, 0);
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_destroy(&t->lock);
	free(t);
	self = NULL;
}

/* The calling thread's state, made at its first record; NULL when memory
 * is short (the record is lost). */
static struct nvtx_thread *thread_self(void)
{
	if (self)
		return self;
	struct nvtx_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->tid = (pid_t)syscall(SYS_gettid);
	t->flushed_ns = now_ns();
	pthread_mutex_lock(&threads_lock);
	t->next = threads;
	threads = t;
	pthread_mutex_unlock(&threads_lock);
	pthread_setspecific(thread_key, t);
	self = t;
	return t;
}

/* Copies text into dst[NVTX_TEXT_MAX], tabs and newlines made spaces. */
static void text_copy(char *dst, const char *src)
{
	size_t n = 0;
	for (; src && src[n] && n < NVTX_TEXT_MAX - 1; n++)
		dst[n] = src[n] == '\t' || src[n] == '\n' || src[n] == '\r' ? ' ' : src[n];
	dst[n] = '\0';
}

/* A wide string as ASCII, '?' for whatever is not. */
static void text_copy_wide(char *dst, const wchar_t *src)
{
	size_t n = 0;
	for (; src && src[n] && n < NVTX_TEXT_MAX - 1; n++)
		dst[n] =
		    src[n] < 0x20 || src[n] > 0x7e ? (src[n] == '\t' ? ' ' : '?') : (char)src[n];
	dst[n] = '\0';
}

static void text_of_attr(char *dst, const nvtxEventAttributes_t *a)
{
	dst[0] = '\0';
	if (!a)
		return;
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		text_copy(dst, a->message.ascii);
	else if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE)
		text_copy_wide(dst, a->message.unicode);
	else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered)
		text_copy(dst, a->message.registered->text);
}

/* Appends one N line to t's buffer (t->lock held). */
static void line_add(struct nvtx_thread *t, pid_t tid, const struct open_range *r, int64_t end_ns,
		     int closed, const char *type)
{
	char line[2 * NVTX_TEXT_MAX + 160];
	int n = snprintf(line, sizeof(line), "N\t%lld\t%lld\t%d\t%d\t%d\t%s\t%s\t%s\n",
			 (long long)r->start_ns, (long long)end_ns, (int)tid, r->depth, closed,
			 type, r->domain ? r->domain->name : "", r->text);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	if (t->len + (size_t)n > sizeof(t->buf))
		thread_flush(t, end_ns);
	memcpy(t->buf + t->len, line, (size_t)n);
	t->len += (size_t)n;
	if (end_ns - t->flushed_ns >= NVTX_FLUSH_NS)
		thread_flush(t, end_ns);
}

static int range_push(const struct nvtxDomainRegistration_st *domain, const char *ascii,
		      const wchar_t *wide, const nvtxEventAttributes_t *attr)
{
	struct nvtx_thread *t = thread_self();
	if (!t)
		return -1;
	int64_t start_ns = now_ns();
	pthread_mutex_lock(&t->lock);
	int level = t->depth++;
	if (level < NVTX_DEPTH_MAX) {
		struct open_range *r = &t->stack[level];
		r->start_ns = start_ns;
		r->depth = level;
		r->domain = domain;
		if (attr)
			text_of_attr(r->text, attr);
		else if (wide)
			text_copy_wide(r->text, wide);
		else
			text_copy(r->text, ascii);
	} else {
		__atomic_add_fetch(&too_deep, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&t->lock);
	return level;
}

/* Closes the innermost open push range of domain (any domain when all). */
static int range_pop(const struct nvtxDomainRegistration_st *domain, int all)
{
	struct nvtx_thread *t = self;
	int64_t end_ns = now_ns();
	if (!t || !t->depth) {
		__atomic_add_fetch(&unmatched_ends, 1, __ATOMIC_RELAXED);
		return -1;
	}
	pthread_mutex_lock(&t->lock);
	int top = t->depth - 1, i = top;
	if (!all && top < NVTX_DEPTH_MAX)
		while (i >= 0 && t->stack[i].domain != domain)
			i--;
	if (i < 0) { /* no range of that domain is open */
		pthread_mutex_unlock(&t->lock);
		__atomic_add_fetch(&unmatched_ends, 1, __ATOMIC_RELAXED);
		return -1;
	}
	if (top < NVTX_DEPTH_MAX) {
		line_add(t, t->tid, &t->stack[i], end_ns, 1, "push");
		memmove(&t->stack[i], &t->stack[i + 1], (size_t)(top - i) * sizeof(t->stack[0]));
	}
	t->depth--;
	pthread_mutex_unlock(&t->lock);
	return top;
}

/* A start/end range or (mark) an instant, on the calling thread. */
static uint64_t range_start(const struct nvtxDomainRegistration_st *domain, const char *ascii,
			    const wchar_t *wide, const nvtxEventAttributes_t *attr, int mark)
{
	struct nvtx_thread *t = thread_self();
	if (!t)
		return 0;
	struct open_range r = { .start_ns = now_ns(), .domain = domain };
	if (attr)
		text_of_attr(r.text, attr);
	else if (wide)
		text_copy_wide(r.text, wide);
	else
		text_copy(r.text, ascii);
	pthread_mutex_lock(&t->lock);
	r.depth = t->depth;
	if (mark)
		line_add(t, t->tid, &r, r.start_ns, 1, "mark");
	pthread_mutex_unlock(&t->lock);
	if (mark)
		return 0;
	pthread_mutex_lock(&ids_lock);
	uint64_t id = next_id++;
	struct open_id *slot = &open_ids[id % NVTX_OPEN_MAX];
	if (slot->id) {
		__atomic_add_fetch(&too_many_open, 1, __ATOMIC_RELAXED);
		id = 0;
	} else {
		*slot = (struct open_id){ .id = id, .tid = t->tid, .r = r };
	}
	pthread_mutex_unlock(&ids_lock);
	return id;
}

static void range_end(uint64_t id)
{
	int64_t end_ns = now_ns();
	struct open_id o = { 0 };
	pthread_mutex_lock(&ids_lock);
	struct open_id *slot = &open_ids[id % NVTX_OPEN_MAX];
	if (id && slot->id == id) {
		o = *slot;
		slot->id = 0;
	}
	pthread_mutex_unlock(&ids_lock);
	struct nvtx_thread *t = thread_self();
	if (!o.id || !t) {
		__atomic_add_fetch(&unmatched_ends, 1, __ATOMIC_RELAXED);
		return;
	}
	pthread_mutex_lock(&t->lock);
	line_add(t, o.tid, &o.r, end_ns, 1, "range");
	pthread_mutex_unlock(&t->lock);
}

/* NVTX's entry points. */
static void NVTX_API mark_a(const char *m)
{
	range_start(NULL, m, NULL, NULL, 1);
}
static void NVTX_API mark_w(const wchar_t *m)
{
	range_start(NULL, NULL, m, NULL, 1);
}
static void NVTX_API mark_ex(const nvtxEventAttributes_t *a)
{
	range_start(NULL, NULL, NULL, a, 1);
}
static nvtxRangeId_t NVTX_API start_a(const char *m)
{
	return range_start(NULL, m, NULL, NULL, 0);
}
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m)
{
	return range_start(NULL, NULL, m, NULL, 0);
}
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a)
{
	return range_start(NULL, NULL, NULL, a, 0);
}
static void NVTX_API end(nvtxRangeId_t id)
{
	range_end(id);
}
static int NVTX_API push_a(const char *m)
{
	return range_push(NULL, m, NULL, NULL);
}
static int NVTX_API push_w(const wchar_t *m)
{
	return range_push(NULL, NULL, m, NULL);
}
static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
	return range_push(NULL, NULL, NULL, a);
}
static int NVTX_API pop(void)
{
	return range_pop(NULL, 1);
}
static void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	range_start(d, NULL, NULL, a, 1);
}
static nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return range_start(d, NULL, NULL, a, 0);
}
static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	range_end(id);
}
static int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return range_push(d, NULL, NULL, a);
}
static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
	return range_pop(d, 0);
}

/* A domain (never freed: ranges point at it); NULL past NVTX_DOMAINS_MAX,
 * which NVTX then treats as the default domain. */
static nvtxDomainHandle_t domain_new(const char *ascii, const wchar_t *wide)
{
	nvtxDomainHandle_t d = NULL;
	pthread_mutex_lock(&names_lock);
	for (int i = 0; i < ndomains && ascii; i++)
		if (!strncmp(domains[i].name, ascii, NVTX_TEXT_MAX - 1))
			d = &domains[i];
	if (!d && ndomains < NVTX_DOMAINS_MAX) {
		d = &domains[ndomains++];
		if (wide)
			text_copy_wide(d->name, wide);
		else
			text_copy(d->name, ascii);
	} else if (!d) {
		names_refused++;
	}
	pthread_mutex_unlock(&names_lock);
	return d;
}
static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
	return domain_new(name, NULL);
}
static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name)
{
	return domain_new(NULL, name);
}
static void NVTX_API domain_destroy(nvtxDomainHandle_t d)
{
	(void)d; /* kept: a range already recorded may name it */
}

/* A registered string (kept for the process's life, as NVTX means them). */
static nvtxStringHandle_t string_new(const char *ascii, const wchar_t *wide)
{
	struct nvtxStringRegistration_st *s = NULL;
	pthread_mutex_lock(&names_lock);
	if (nstrings < NVTX_STRINGS_MAX && (s = malloc(sizeof(*s)))) {
		if (wide)
			text_copy_wide(s->text, wide);
		else
			text_copy(s->text, ascii);
		strings[nstrings++] = s;
	} else {
		names_refused++;
	}
	pthread_mutex_unlock(&names_lock);
	return s;
}
static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t d, const char *text)
{
	(void)d;
	return string_new(text, NULL);
}
static nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t d, const wchar_t *text)
{
	(void)d;
	return string_new(NULL, text);
}

/* At exit: every thread's open push ranges and the open start/end ranges
 * end now (closed 0), every buffer is written, and what was lost counted. */
static void nvtx_at_exit(void)
{
	int64_t end_ns = now_ns();
	pthread_mutex_lock(&threads_lock);
	for (struct nvtx_thread *t = threads; t; t = t->next) {
		pthread_mutex_lock(&t->lock);
		int open = t->depth < NVTX_DEPTH_MAX ? t->depth : NVTX_DEPTH_MAX;
		for (int i = open - 1; i >= 0; i--)
			line_add(t, t->tid, &t->stack[i], end_ns, 0, "push");
		t->depth = 0;
		if (t == threads) { /* the start/end ranges, into any one buffer */
			pthread_mutex_lock(&ids_lock);
			for (size_t i = 0; i < NVTX_OPEN_MAX; i++)
				if (open_ids[i].id) {
					line_add(t, open_ids[i].tid, &open_ids[i].r, end_ns, 0,
						 "range");
					open_ids[i].id = 0;
				}
			pthread_mutex_unlock(&ids_lock);
		}
		thread_flush(t, end_ns);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&threads_lock);
	if (too_deep)
		out_counter("nvtx_too_deep", too_deep);
	if (too_many_open)
		out_counter("nvtx_too_many_open", too_many_open);
	if (unmatched_ends)
		out_counter("nvtx_unmatched_ends", unmatched_ends);
	if (names_refused)
		out_counter("nvtx_names_refused", names_refused);
}

/* A forked child starts with no thread's lines (its parent writes them) and
 * only its own thread's stack. */
static void nvtx_fork_child(void)
{
	pthread_mutex_init(&threads_lock, NULL);
	pthread_mutex_init(&ids_lock, NULL);
	pthread_mutex_init(&names_lock, NULL);
	for (struct nvtx_thread *t = threads; t; t = t->next) {
		pthread_mutex_init(&t->lock, NULL);
		t->len = 0;
		if (t != self)
			t->depth = 0;
	}
	if (self)
		self->tid = (pid_t)syscall(SYS_gettid);
	memset(open_ids, 0, sizeof(open_ids));
}

static const struct {
	NvtxCallbackModule module;
	unsigned id;
	NvtxFunctionPointer fn;
} handlers[] = {
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, (NvtxFunctionPointer)mark_ex },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, (NvtxFunctionPointer)mark_a },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkW, (NvtxFunctionPointer)mark_w },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)start_ex },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)start_w },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)end },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w },
	{ NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pop },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)domain_mark_ex },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx,
	  (NvtxFunctionPointer)domain_start_ex },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)domain_end },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx,
	  (NvtxFunctionPointer)domain_push_ex },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)domain_pop },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA,
	  (NvtxFunctionPointer)register_a },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringW,
	  (NvtxFunctionPointer)register_w },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA,
	  (NvtxFunctionPointer)domain_create_a },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateW,
	  (NvtxFunctionPointer)domain_create_w },
	{ NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy,
	  (NvtxFunctionPointer)domain_destroy },
};

/* Fills NVTX's tables with the handlers; 0 when NVTX gave no table. */
static int handlers_install(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	if (!cb || !cb->GetModuleFunctionTable)
		return 0;
	int installed = 0;
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		NvtxFunctionTable table = NULL;
		unsigned size = 0;
		if (!cb->GetModuleFunctionTable(handlers[i].module, &table, &size) || !table ||
		    handlers[i].id >= size || !table[handlers[i].id])
			continue;
		*table[handlers[i].id] = handlers[i].fn;
		installed++;
	}
	const NvtxExportTableVersionInfo *v = get(NVTX_ETID_VERSIONINFO);
	if (v && v->struct_size >= sizeof(*v) && v->SetInjectionNvtxVersion)
		v->SetInjectionNvtxVersion(NVTX_VERSION);
	return installed > 0;
}

/* Called by NVTX at the program's first NVTX call; 1 to keep the handlers,
 * 0 (NVTX unloads the library and goes quiet) when sonde has no directory
 * to write into. */
static int setup_ok;

static void setup_run(void)
{
	const char *dir = getenv("SONDE_CUDA_DIR");
	if (!dir || !*dir)
		return;
	if (out_open(dir, 0)) {
		fprintf(stderr,
			"sonde-cuda: cannot create a file in %s: %m; the NVTX ranges of "
			"process %d are not recorded\n",
			dir, (int)getpid());
		return;
	}
	if (pthread_key_create(&thread_key, thread_gone))
		return;
	pthread_atfork(NULL, NULL, nvtx_fork_child);
	atexit(nvtx_at_exit);
	setup_ok = 1;
}

/* What both entry points need once: the process's file, the thread key and
 * the flushes at fork and exit. 1 when the ranges can be recorded. */
static int setup_once(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, setup_run);
	return setup_ok;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	static int called;
	if (__atomic_exchange_n(&called, 1, __ATOMIC_SEQ_CST) || !setup_once())
		return 0;
	if (!handlers_install(get)) {
		out_counter("nvtx_no_table", 1);
		return 0;
	}
	return 1;
}

/* sonde.h's and the sonde Python module's entry points (found with dlsym
 * in the library NVTX_INJECTION64_PATH names): a push range of NVTX's
 * default domain, as nvtxRangePushA and nvtxRangePop record it, for
 * programs without NVTX. */
__attribute__((visibility("default"))) int sonde_region_push(const char *name);
__attribute__((visibility("default"))) int sonde_region_pop(void);

int sonde_region_push(const char *name)
{
	return setup_once() ? range_push(NULL, name ? name : "", NULL, NULL) : -1;
}

int sonde_region_pop(void)
{
	return setup_once() ? range_pop(NULL, 1) : -1;
}
