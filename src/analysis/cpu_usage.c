/* cpu_usage: CPU time, utilization, context switches, faults and I/O of the
 * whole target, with findings for a run that mostly waits, one whose threads
 * queue for a CPU, and one whose CPU time is mostly in the kernel. */
#include "analysis.h"
#include "hwcounters.h"
#include "procstats.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <stdio.h>
#include <string.h>

struct cpu_totals {
	double user_s, sys_s, runq_wait_s;
	int64_t vcsw, ivcsw, minflt, majflt;
	int exact; /* from the kernel's own accounting of reaped processes */
};

/* Totals: the kernel's rusage for every process sonde reaped (exact, children
 * included) plus the last readings of processes still alive at the end. */
static int cpu_totals_load(sqlite3 *db, const struct procstats *ps, struct cpu_totals *t)
{
	memset(t, 0, sizeof(*t));
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT user_s, sys_s, nvcsw, nivcsw, minflt, majflt FROM rusage"
			       " WHERE pid = 0",
			       -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			t->user_s = sqlite3_column_double(st, 0);
			t->sys_s = sqlite3_column_double(st, 1);
			t->vcsw = sqlite3_column_int64(st, 2);
			t->ivcsw = sqlite3_column_int64(st, 3);
			t->minflt = sqlite3_column_int64(st, 4);
			t->majflt = sqlite3_column_int64(st, 5);
			t->exact = 1;
		}
		sqlite3_finalize(st);
	}
	int any = t->exact;
	for (size_t i = 0; i < ps->n; i++) {
		const struct procstat *p = &ps->v[i];
		if (p->runq_wait_ns > 0)
			t->runq_wait_s += (double)p->runq_wait_ns / 1e9;
		if (t->exact && p->end_ns >= 0)
			continue; /* already in the kernel's totals */
		if (p->user_ns < 0)
			continue;
		any = 1;
		t->user_s += (double)p->user_ns / 1e9;
		t->sys_s += (double)(p->sys_ns > 0 ? p->sys_ns : 0) / 1e9;
		t->vcsw += p->vcsw > 0 ? p->vcsw : 0;
		t->ivcsw += p->ivcsw > 0 ? p->ivcsw : 0;
		t->minflt += p->minflt > 0 ? p->minflt : 0;
		t->majflt += p->majflt > 0 ? p->majflt : 0;
	}
	return any ? 0 : -1;
}

static const char *leader_location(const struct procstats *ps, struct strbuf *sb)
{
	const struct procstat *l = procstats_leader(ps);
	if (!l)
		return "the target";
	const char *cmd = l->command;
	size_t n = strcspn(cmd, " ");
	strbuf_add(sb, cmd, n);
	strbuf_addf(sb, " (pid %lld)", (long long)l->pid);
	return sb->buf;
}

static void add_findings(struct analysis_ctx *ctx, const struct procstats *ps,
			 const struct cpu_totals *t, double wall_s, int64_t cpus)
{
	double cpu_s = t->user_s + t->sys_s;
	struct strbuf loc = STRBUF_INIT, ev = STRBUF_INIT, next = STRBUF_INIT;
	leader_location(ps, &loc);
	if (wall_s >= 0.1 && cpu_s / wall_s < 0.5) {
		double off_s = wall_s - cpu_s;
		strbuf_addf(&ev,
			    "CPU time %.3f s (user %.3f s, system %.3f s) over %.3f s of wall time:"
			    " CPU/wall %.2f; %lld voluntary context switches (blocking waits)",
			    cpu_s, t->user_s, t->sys_s, wall_s, cpu_s / wall_s, (long long)t->vcsw);
		struct finding f = {
			.dimension = "cpu",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Off-CPU dominated: the run spends its time waiting (sleeps, I/O, "
				     "locks, network or child processes), not computing",
			.next_step = "Find the waits: `strace -f -w -c -- COMMAND` ranks the system "
				     "calls that block longest; then remove, batch or overlap them "
				     "(concurrent I/O, fewer round trips, no fixed sleeps)",
			.validation = "cpu.utilization rises and target.wall_s falls",
			.impact_s = off_s,
			.impact_bytes = -1,
			.impact_pct = 100.0 * off_s / wall_s,
		};
		struct strbuf title = STRBUF_INIT;
		strbuf_addf(&title, "The target is off the CPU for %.0f%% of its run",
			    100.0 * off_s / wall_s);
		f.title = title.buf;
		findings_add(ctx->findings, &f);
		strbuf_release(&title);
	}
	if (wall_s > 0 && t->runq_wait_s / wall_s > 0.10) {
		double at_stake = t->runq_wait_s < wall_s ? t->runq_wait_s : wall_s;
		strbuf_reset(&ev);
		strbuf_addf(&ev,
			    "runnable threads waited %.3f s for a CPU (%.0f%% of %.3f s wall);"
			    " %lld involuntary context switches; %lld CPUs online",
			    t->runq_wait_s, 100.0 * t->runq_wait_s / wall_s, wall_s,
			    (long long)t->ivcsw, (long long)cpus);
		strbuf_addf(&next,
			    "Run no more busy threads or processes than there are cores (%lld "
			    "here): size worker pools to the core count, or profile on an idle "
			    "machine if the load comes from elsewhere",
			    (long long)cpus);
		struct finding f = {
			.title = "Threads queue for a CPU (CPU contention)",
			.dimension = "concurrency",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "CPU oversubscription: more runnable threads than free cores, so "
				     "the scheduler preempts them (involuntary context switches)",
			.next_step = next.buf,
			.validation = "cpu.runqueue_wait_s and cpu.involuntary_ctx_switches fall",
			.impact_s = at_stake,
			.impact_bytes = -1,
			.impact_pct = 100.0 * at_stake / wall_s,
		};
		findings_add(ctx->findings, &f);
	}
	if (wall_s > 0 && t->sys_s >= 0.05 && t->sys_s > 0.4 * cpu_s) {
		strbuf_reset(&ev);
		strbuf_addf(&ev,
			    "system time %.3f s is %.0f%% of CPU time %.3f s; %lld minor and %lld "
			    "major page faults",
			    t->sys_s, 100.0 * t->sys_s / cpu_s, cpu_s, (long long)t->minflt,
			    (long long)t->majflt);
		double at_stake = t->sys_s < wall_s ? t->sys_s : wall_s;
		struct finding f = {
			.title = "Most CPU time is spent in the kernel",
			.dimension = "cpu",
			.location = loc.buf,
			.evidence = ev.buf,
			.diagnosis = "Kernel-bound: many small system calls, or page faults from "
				     "fresh memory, cost more than the program's own work",
			.next_step = "Count system calls with `strace -f -c -- COMMAND` and batch the "
				     "most frequent (bigger buffers, fewer calls); with many minor "
				     "faults, reuse buffers instead of allocating new memory",
			.validation = "cpu.sys_s falls",
			.impact_s = at_stake,
			.impact_bytes = -1,
			.impact_pct = 100.0 * at_stake / wall_s,
		};
		findings_add(ctx->findings, &f);
	}
	strbuf_release(&loc);
	strbuf_release(&ev);
	strbuf_release(&next);
}

static int cpu_usage_run(struct analysis_ctx *ctx)
{
	struct procstats ps;
	struct cpu_totals t;
	if (procstats_load(ctx->db, &ps))
		return -1;
	if (cpu_totals_load(ctx->db, &ps, &t)) {
		procstats_release(&ps);
		return 0; /* nothing measured: report_build says why */
	}
	double wall_s = report_wall_s(ctx->db);
	int64_t cpus = 0;
	recording_meta_int(ctx->db, "cpus_online", &cpus);
	json_t *cpu = json_object();
	json_object_set_new(cpu, "user_s", json_real(t.user_s));
	json_object_set_new(cpu, "sys_s", json_real(t.sys_s));
	json_object_set_new(cpu, "utilization",
			    wall_s > 0 ? json_real((t.user_s + t.sys_s) / wall_s) : json_null());
	json_object_set_new(cpu, "voluntary_ctx_switches", json_integer(t.vcsw));
	json_object_set_new(cpu, "involuntary_ctx_switches", json_integer(t.ivcsw));
	json_object_set_new(cpu, "runqueue_wait_s", json_real(t.runq_wait_s));
	json_object_set_new(cpu, "minor_faults", json_integer(t.minflt));
	json_object_set_new(cpu, "major_faults", json_integer(t.majflt));
	json_object_set_new(cpu, "cpus_online", cpus > 0 ? json_integer(cpus) : json_null());
	json_object_set_new(cpu, "source", json_string(t.exact ? "kernel rusage of reaped processes"
								 " + /proc readings"
							       : "/proc readings"));
	struct strbuf why = STRBUF_INIT;
	json_t *counters = hwcounters_json(ctx->db, &why);
	json_object_set_new(cpu, "counters", counters ? counters : json_null());
	json_object_set_new(ctx->report, "cpu", cpu);
	if (!counters)
		report_not_measured(ctx->report, "counters", why.buf);
	strbuf_release(&why);

	json_t *io = json_object();
	json_object_set_new(io, "read_bytes", json_integer(procstats_sum(&ps, PROCSTAT_FIELD(rchar))));
	json_object_set_new(io, "write_bytes", json_integer(procstats_sum(&ps, PROCSTAT_FIELD(wchar))));
	int64_t rb = procstats_sum(&ps, PROCSTAT_FIELD(read_bytes));
	int64_t wb = procstats_sum(&ps, PROCSTAT_FIELD(write_bytes));
	json_object_set_new(io, "storage_read_bytes", rb >= 0 ? json_integer(rb) : json_null());
	json_object_set_new(io, "storage_write_bytes", wb >= 0 ? json_integer(wb) : json_null());
	json_object_set_new(ctx->report, "io", io);
	if (wall_s > 0)
		add_findings(ctx, &ps, &t, wall_s, cpus);
	if (counters)
		hwcounters_findings(ctx, counters, t.user_s + t.sys_s, wall_s);
	procstats_release(&ps);
	return 0;
}

const struct analysis_ops analysis_cpu_usage = { .name = "cpu_usage", .run = cpu_usage_run };
