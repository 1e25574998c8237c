/* inject: the agent's entry point (cuda_agent.h). The driver calls
 * InitializeInjection once per process, inside cuInit, before any context
 * exists: the agent claims CUPTI, puts its clock in, enables the activity
 * kinds, and flushes every second and at exit. Whatever fails, the program
 * runs on: the reason goes into the file as a Q line. */
#include "cuda_agent.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_PERIOD_S 1

/* sonde's clock, for every CUPTI timestamp. */
static uint64_t CUPTIAPI clock_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Subscribed only to hold CUPTI's single subscriber slot. */
static void CUPTIAPI subscriber_noop(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	(void)domain;
	(void)cbid;
	(void)data;
}

static void *flush_loop(void *arg)
{
	(void)arg;
	for (;;) {
		sleep(FLUSH_PERIOD_S);
		cupti.ActivityFlushAll(0);
	}
	return NULL;
}

static pid_t recording_pid; /* the process CUPTI records in */

/* At exit of the recording process; a forked child (a DataLoader worker)
 * inherits the handler but not CUPTI's state: it leaves CUPTI alone. */
static void flush_at_exit(void)
{
	if (getpid() != recording_pid)
		return;
	cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	records_report_dropped();
	int64_t errors = out_write_errors();
	if (errors)
		out_counter("write_errors", errors);
}

static const struct {
	CUpti_ActivityKind kind;
	const char *name;
} kinds[] = {
	{ CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL" },
	{ CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY" },
	{ CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2" },
	{ CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET" },
	{ CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME" },
	{ CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION" },
	{ CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2" },
	{ CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE" },
};

/* Enables every kind it can: an X line for each refused one (its CUPTI
 * result as the count). The number enabled; *first_error the first refusal. */
static int kinds_enable(CUptiResult *first_error)
{
	int on = 0;
	*first_error = CUPTI_SUCCESS;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		CUptiResult rc = cupti.ActivityEnable(kinds[i].kind);
		if (rc == CUPTI_SUCCESS) {
			on++;
			continue;
		}
		if (*first_error == CUPTI_SUCCESS)
			*first_error = rc;
		char name[64];
		snprintf(name, sizeof(name), "kind_refused_%s", kinds[i].name);
		out_counter(name, (int64_t)rc);
	}
	return on;
}

/* Says why CUPTI is not recording, as the file's Q line. */
static void say_failed(const char *step, CUptiResult rc)
{
	char buf[64], line[512];
	const char *res = cupti_lib_result(rc, buf, sizeof(buf));
	void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (driver)
		dlclose(driver);
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		snprintf(line, sizeof(line),
			 "CUPTI is taken by another profiler in this process (Nsight Systems, Nsight "
			 "Compute, compute-sanitizer or cuda-gdb; %s: %s)",
			 step, res);
	else if (!driver)
		snprintf(line, sizeof(line),
			 "CUPTI cannot start: no NVIDIA driver in this process (libcuda.so.1 is not "
			 "loaded; %s: %s)",
			 step, res);
	else
		snprintf(line, sizeof(line), "CUPTI cannot start (%s: %s)", step, res);
	out_line_str('Q', line);
}

/* The steps after the subscriber slot is ours, in CUPTI's order: the clock
 * before any kind. 0 when recording. */
static int activity_start(void)
{
	CUptiResult rc = cupti.ActivityRegisterTimestampCallback(clock_monotonic_ns);
	if (rc != CUPTI_SUCCESS) {
		say_failed("cuptiActivityRegisterTimestampCallback", rc);
		return -1;
	}
	cupti.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	rc = cupti.ActivityRegisterCallbacks(records_buffer_requested, records_buffer_completed);
	if (rc != CUPTI_SUCCESS) {
		say_failed("cuptiActivityRegisterCallbacks", rc);
		return -1;
	}
	if (!kinds_enable(&rc)) {
		say_failed("cuptiActivityEnable", rc);
		return -1;
	}
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, flush_loop, NULL))
		out_counter("flush_thread_failed", 1); /* buffers still come at exit */
	pthread_attr_destroy(&attr);
	recording_pid = getpid();
	atexit(flush_at_exit);
	return 0;
}

/* Claims CUPTI's one subscriber slot first (another profiler in the process
 * makes that fail, and then nothing else is touched), and gives it back
 * when the agent cannot record after all, for whoever comes next. */
static void cupti_start(void)
{
	CUpti_SubscriberHandle sub;
	CUptiResult rc = cupti.Subscribe(&sub, subscriber_noop, NULL);
	if (rc != CUPTI_SUCCESS) {
		say_failed("cuptiSubscribe", rc);
		return;
	}
	if (activity_start())
		cupti.Unsubscribe(sub);
}

/* Called by the CUDA driver (and only it); 1 whatever happened: a failure
 * here is sonde's to report, never the program's. */
__attribute__((visibility("default"))) int InitializeInjection(void);

int InitializeInjection(void)
{
	static int called;
	const char *dir = getenv("SONDE_CUDA_DIR");
	if (__atomic_exchange_n(&called, 1, __ATOMIC_SEQ_CST) || !dir || !*dir)
		return 1;
	char why[512];
	uint32_t version = 0;
	int loaded = cupti_lib_load(&version, why, sizeof(why));
	if (out_open(dir, version)) {
		fprintf(stderr, "sonde-cuda: cannot create a file in %s: %m; the GPU side of "
				"process %d is not recorded\n",
			dir, (int)getpid());
		return 1;
	}
	if (loaded)
		out_line_str('Q', why);
	else
		cupti_start();
	return 1;
}
