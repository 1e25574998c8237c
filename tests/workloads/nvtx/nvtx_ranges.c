/* nvtx_ranges: a program annotated with NVTX (nvtx3, header-only: the
 * injection library is whatever NVTX_INJECTION64_PATH names, loaded at the
 * first NVTX call), with known ranges and its own clock around each, for
 * test_nvtx_ranges. Writes to argv[1] one line per range as it measured it
 * on CLOCK_MONOTONIC (sonde's clock): "name a b c d", where the range's
 * opening call ran between a and b and its closing call between c and d.
 * The ranges:
 *   main: push "step" (about 100 ms) holding push "forward" (40 ms) and,
 *         after it, push "backward" (30 ms); a mark "checkpoint" between them;
 *   start "prefetch" on main, ended on a worker thread about 60 ms later;
 *   worker: in domain "io", push "read" (20 ms);
 *   main: push "left open", never popped (open at exit). */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Busy for ms (busy keeps the thread in the CPU samples too). */
static void work_ms(int ms)
{
	long long until = now_ns() + (long long)ms * 1000000LL;
	while (now_ns() < until)
		;
}

struct span {
	long long t[4];
};

static void say(const char *name, const struct span *s)
{
	pthread_mutex_lock(&out_lock);
	fprintf(out, "%s %lld %lld %lld %lld\n", name, s->t[0], s->t[1], s->t[2], s->t[3]);
	pthread_mutex_unlock(&out_lock);
}

static nvtxRangeId_t prefetch;
static struct span prefetch_at;

static void *worker(void *arg)
{
	(void)arg;
	nvtxDomainHandle_t io = nvtxDomainCreateA("io");
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "read";
	struct span read;
	read.t[0] = now_ns();
	nvtxDomainRangePushEx(io, &a);
	read.t[1] = now_ns();
	work_ms(20);
	read.t[2] = now_ns();
	nvtxDomainRangePop(io);
	read.t[3] = now_ns();
	say("read", &read);
	work_ms(40);
	prefetch_at.t[2] = now_ns();
	nvtxRangeEnd(prefetch);
	prefetch_at.t[3] = now_ns();
	say("prefetch", &prefetch_at);
	return NULL;
}

/* push name, work ms, pop: the four readings in s. */
static void pushed(const char *name, int ms, struct span *s)
{
	s->t[0] = now_ns();
	nvtxRangePushA(name);
	s->t[1] = now_ns();
	work_ms(ms);
	s->t[2] = now_ns();
	nvtxRangePop();
	s->t[3] = now_ns();
	say(name, s);
}

int main(int argc, char **argv)
{
	if (argc != 2 || !(out = fopen(argv[1], "w"))) {
		fprintf(stderr, "usage: nvtx_ranges OUT\n");
		return 2;
	}
	nvtxInitialize(NULL); /* loads the injection now, outside every range */
	struct span step, forward, backward, checkpoint;
	step.t[0] = now_ns();
	nvtxRangePushA("step");
	step.t[1] = now_ns();
	pushed("forward", 40, &forward);
	checkpoint.t[0] = checkpoint.t[2] = now_ns();
	nvtxMarkA("checkpoint");
	checkpoint.t[1] = checkpoint.t[3] = now_ns();
	say("checkpoint", &checkpoint);
	prefetch_at.t[0] = now_ns();
	prefetch = nvtxRangeStartA("prefetch");
	prefetch_at.t[1] = now_ns();
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pushed("backward", 30, &backward);
	work_ms(30);
	step.t[2] = now_ns();
	nvtxRangePop();
	step.t[3] = now_ns();
	say("step", &step);
	pthread_join(t, NULL);
	nvtxRangePushA("left open");
	work_ms(5);
	fclose(out);
	return 0;
}
