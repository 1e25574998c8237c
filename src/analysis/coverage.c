/* coverage: how much of the target's CPU time the native samples stand for
 * (samples x period against the CPU time the kernel accounted, per process),
 * with a note saying how much was missed and why when it is below 80%. */
#include "analysis.h"
#include "procstats.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define COVERAGE_LOW_PCT 80.0
/* Above this, with enough samples expected that the count is no accident,
 * the timer ticked faster than the target's CPU clock ran: irregular ticks
 * (a busy machine, its hypervisor) that lean towards some code. */
#define COVERAGE_HIGH_PCT 110.0
#define COVERAGE_HIGH_MIN_SAMPLES 200
#define COVERAGE_FEW_SAMPLES 20 /* fewer expected: the count varies by chance */
#define COVERAGE_MIN_CPU_S 0.05 /* processes below this get no note of their own */

struct coverage_proc {
	int64_t pid;
	const char *command;
	int64_t samples;
	double cpu_s; /* -1: the kernel's figure is unknown */
};

/* Samples of source 'cpu' per pid, merged into the processes the recording knows. */
static int samples_per_pid(sqlite3 *db, const struct procstats *ps, int kernel,
			   struct coverage_proc **out, size_t *n)
{
	struct hashmap at = HASHMAP_INIT;
	size_t cnt = ps ? ps->n : 0, alloc = cnt + 8;
	struct coverage_proc *v = xcalloc(alloc, sizeof(*v));
	for (size_t i = 0; i < cnt; i++) {
		const struct procstat *p = &ps->v[i];
		double cpu_s = -1;
		if (p->user_ns >= 0)
			cpu_s = (double)p->user_ns / 1e9 +
				(kernel && p->sys_ns > 0 ? (double)p->sys_ns / 1e9 : 0);
		v[i] = (struct coverage_proc){ p->pid, p->command, 0, cpu_s };
		hashmap_put(&at, &p->pid, sizeof(p->pid), (int64_t)i);
	}
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db,
				    "SELECT pid, count(*) FROM samples WHERE source = 'cpu'"
				    " GROUP BY pid ORDER BY pid",
				    -1, &st, NULL);
	while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0);
		int64_t *i = hashmap_get(&at, &pid, sizeof(pid));
		if (!i) { /* a process the proc probe never saw */
			if (cnt == alloc)
				v = xrealloc(v, (alloc *= 2) * sizeof(*v));
			v[cnt] = (struct coverage_proc){ pid, "", 0, -1 };
			i = hashmap_put(&at, &pid, sizeof(pid), (int64_t)cnt++);
		}
		v[*i].samples += sqlite3_column_int64(st, 1);
	}
	if (rc == SQLITE_OK)
		sqlite3_finalize(st);
	hashmap_release(&at);
	if (rc != SQLITE_OK) {
		free(v);
		return -1;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static json_t *pct_or_null(double sampled_s, double cpu_s)
{
	return cpu_s > 0 ? json_real(100.0 * sampled_s / cpu_s) : json_null();
}

/* Why the samples stand for less CPU time than the kernel counted. */
static void explain_missing(sqlite3 *db, double expected, struct strbuf *sb)
{
	int64_t lost = 0, throttled = 0, not_opened = 0, complete = 0;
	recording_meta_int(db, "cpu_lost_records", &lost);
	recording_meta_int(db, "cpu_throttle_events", &throttled);
	recording_meta_int(db, "cpu_processes_not_sampled", &not_opened);
	complete = !recording_meta_int(db, "cpu_samples", &complete); /* written at stop */
	char *sampling = recording_meta_text(db, "cpu_sampling");
	size_t before = sb->len;
	if (lost > 0)
		strbuf_addf(sb, "; %lld records were lost because sonde read the ring buffers too "
				"late (a busy machine; lower --rate)",
			    (long long)lost);
	if (throttled > 0)
		strbuf_addf(sb, "; the kernel throttled sampling %lld times (lower --rate)",
			    (long long)throttled);
	if (not_opened > 0)
		strbuf_addf(sb, "; %lld processes could not be sampled", (long long)not_opened);
	if (sampling && !strcmp(sampling, "per-task"))
		strbuf_addstr(sb, "; sampling was per task, where a thread that lives less than "
				  "one period gets no sample (run as root or with "
				  "kernel.perf_event_paranoid <= 0 to sample per CPU)");
	if (!complete)
		strbuf_addstr(sb, "; the recording ends early (sonde was stopped before it wrote "
				  "its last samples)");
	if (expected < COVERAGE_FEW_SAMPLES)
		strbuf_addf(sb, "; the run is short: about %.0f samples were expected, and so few "
				"vary by chance",
			    expected);
	if (sb->len == before)
		strbuf_addstr(sb, "; no ring loss or throttling was recorded: the CPU time may "
				  "have gone to processes sonde did not follow");
	free(sampling);
}

static int coverage_run(struct analysis_ctx *ctx)
{
	sqlite3 *db = ctx->db;
	int64_t rate_hz = 0, kernel = 1, lost = 0;
	if (!recording_has_table(db, "samples") || recording_meta_int(db, "cpu_rate_hz", &rate_hz) ||
	    rate_hz <= 0)
		return 0; /* the cpu probe did not run */
	char *event = recording_meta_text(db, "cpu_event");
	int timed = !event || !strcmp(event, "cycles") || !strcmp(event, "cpu-cycles") ||
		    !strcmp(event, "cpu-clock") || !strcmp(event, "task-clock");
	free(event);
	if (!timed)
		return 0; /* --event counts something else than time */
	recording_meta_int(db, "cpu_kernel_frames", &kernel);
	recording_meta_int(db, "cpu_lost_records", &lost);
	struct coverage_proc *v;
	size_t n;
	if (samples_per_pid(db, ctx->procs, kernel != 0, &v, &n))
		return -1;
	double period_s = 1.0 / (double)rate_hz, cpu_s = 0;
	int64_t samples = 0;
	int cpu_known = 0;
	json_t *procs = json_array();
	const struct coverage_proc *worst = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct coverage_proc *p = &v[i];
		samples += p->samples;
		if (p->cpu_s >= 0) {
			cpu_s += p->cpu_s;
			cpu_known = 1;
		}
		if (!p->samples && p->cpu_s < COVERAGE_MIN_CPU_S)
			continue;
		double sampled_s = (double)p->samples * period_s;
		json_t *o = json_object();
		json_object_set_new(o, "pid", json_integer(p->pid));
		json_object_set_new(o, "command", report_string(p->command, strlen(p->command)));
		json_object_set_new(o, "samples", json_integer(p->samples));
		json_object_set_new(o, "sampled_cpu_s", json_real(sampled_s));
		json_object_set_new(o, "cpu_s", p->cpu_s >= 0 ? json_real(p->cpu_s) : json_null());
		json_object_set_new(o, "coverage_pct", pct_or_null(sampled_s, p->cpu_s));
		json_array_append_new(procs, o);
		if (p->cpu_s >= COVERAGE_MIN_CPU_S && sampled_s < COVERAGE_LOW_PCT / 100 * p->cpu_s &&
		    (!worst || p->cpu_s - sampled_s > worst->cpu_s - (double)worst->samples * period_s))
			worst = p;
	}
	double sampled_s = (double)samples * period_s;
	char *sampling = recording_meta_text(db, "cpu_sampling");
	json_t *c = json_object();
	json_object_set_new(c, "source", json_string("cpu"));
	json_object_set_new(c, "sampling", sampling ? json_string(sampling) : json_null());
	json_object_set_new(c, "rate_hz", json_integer(rate_hz));
	json_object_set_new(c, "period_s", json_real(period_s));
	json_object_set_new(c, "samples", json_integer(samples));
	json_object_set_new(c, "sampled_cpu_s", json_real(sampled_s));
	json_object_set_new(c, "cpu_s", cpu_known ? json_real(cpu_s) : json_null());
	json_object_set_new(c, "kernel_time_sampled", json_boolean(kernel != 0));
	json_object_set_new(c, "coverage_pct", pct_or_null(sampled_s, cpu_known ? cpu_s : -1));
	json_object_set_new(c, "lost_records", json_integer(lost));
	json_object_set_new(c, "processes", procs);
	free(sampling);
	int low = cpu_known && cpu_s >= COVERAGE_MIN_CPU_S &&
		  sampled_s < COVERAGE_LOW_PCT / 100 * cpu_s;
	if (low || worst) {
		struct strbuf sb = STRBUF_INIT;
		if (low)
			strbuf_addf(&sb, "The CPU samples stand for %.2f s of the %.2f s of CPU time the "
					 "kernel accounted to the target (%.0f%%): %.2f s were missed",
				    sampled_s, cpu_s, 100 * sampled_s / cpu_s, cpu_s - sampled_s);
		else
			strbuf_addf(&sb, "The CPU samples of pid %lld (%s) stand for %.2f s of its "
					 "%.2f s of CPU time (%.0f%%): %.2f s were missed",
				    (long long)worst->pid, worst->command,
				    (double)worst->samples * period_s, worst->cpu_s,
				    100 * (double)worst->samples * period_s / worst->cpu_s,
				    worst->cpu_s - (double)worst->samples * period_s);
		explain_missing(db, (low ? cpu_s : worst->cpu_s) / period_s, &sb);
		strbuf_addch(&sb, '.');
		json_object_set_new(c, "note", json_string(sb.buf));
		strbuf_release(&sb);
	} else if (cpu_known && cpu_s / period_s >= COVERAGE_HIGH_MIN_SAMPLES &&
		   sampled_s > COVERAGE_HIGH_PCT / 100 * cpu_s) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "The CPU samples stand for %.2f s, more than the %.2f s of CPU time "
				 "the kernel accounted to the target (%.0f%%): the sampling timer ticked "
				 "irregularly (a busy machine or its hypervisor), so the shares may be "
				 "off by more than sampling noise; compare with a run on a quieter machine",
			    sampled_s, cpu_s, 100 * sampled_s / cpu_s);
		json_object_set_new(c, "note", json_string(sb.buf));
		strbuf_release(&sb);
	} else if (lost > 0) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "%lld sample records were lost (ring buffer full)", (long long)lost);
		json_object_set_new(c, "note", json_string(sb.buf));
		strbuf_release(&sb);
	}
	json_object_set_new(ctx->report, "coverage", c);
	free(v);
	return 0;
}

const struct analysis_ops analysis_coverage = { .name = "coverage", .run = coverage_run };
