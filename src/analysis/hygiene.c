/* hygiene: report.json's `hygiene` from the recording's two machine readings
 * (meta hygiene_start and hygiene_end). */
#include "hygiene.h"
#include "analysis.h"
#include "../record/reader.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* What a cumulative count moved by between the readings; -1 when unknown
 * (absent, or reset in between). */
static int64_t moved(int64_t start, int64_t end)
{
	return start >= 0 && end >= start ? end - start : -1;
}

static int64_t moved_sum(int64_t s1, int64_t e1, int64_t s2, int64_t e2)
{
	int64_t a = moved(s1, e1), b = moved(s2, e2);
	return a < 0 ? b : b < 0 ? a : a + b;
}

static void set_int(json_t *o, const char *key, int64_t v)
{
	if (v >= 0)
		json_object_set_new(o, key, json_integer(v));
}

static void set_real(json_t *o, const char *key, double v)
{
	if (!isnan(v) && v >= 0)
		json_object_set_new(o, key, json_real(v));
}

static void set_text(json_t *o, const char *key, const char *v)
{
	if (*v)
		json_object_set_new(o, key, report_string(v, strlen(v)));
}

__attribute__((format(printf, 3, 4))) static void warn(json_t *o, const char *id, const char *fmt,
						       ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	json_array_append_new(json_object_get(o, "warnings"),
			      json_pack("{s:s, s:s}", "id", id, "text", sb.buf));
	strbuf_release(&sb);
}

/* The facts that hold for the whole run: the machine and its state at the start. */
static void start_facts(json_t *h, const struct machine_reading *s)
{
	set_int(h, "cpus_online", s->cpus_online);
	if (s->smt_active >= 0)
		json_object_set_new(h, "smt_active", json_boolean(s->smt_active));
	set_text(h, "cpu_model", s->cpu_model);
	set_text(h, "governor", s->governor);
	set_text(h, "turbo", s->turbo);
	set_real(h, "load_1m_start", s->load_1m);
	if (s->cgroup_cpu_quota_us > 0 && s->cgroup_cpu_period_us > 0)
		set_real(h, "cgroup_cpu_limit_cpus",
			 (double)s->cgroup_cpu_quota_us / (double)s->cgroup_cpu_period_us);
	set_int(h, "mem_available_bytes", s->mem_available_bytes);
	if (s->swap_total_bytes >= 0 && s->swap_free_bytes >= 0)
		set_int(h, "swap_used_bytes", s->swap_total_bytes - s->swap_free_bytes);
	if (s->cpus_online > 0 && s->load_1m > HYGIENE_BUSY_LOAD_PER_CPU * (double)s->cpus_online)
		warn(h, "busy",
		     "the machine was busy when the run started (load %.2f over %lld CPUs): other "
		     "processes competed for the CPUs, so wall times and waits run longer than "
		     "the program alone explains and vary between runs",
		     s->load_1m, (long long)s->cpus_online);
	if (!strcmp(s->governor, "powersave"))
		warn(h, "governor",
		     "the CPU frequency governor is powersave: the CPU runs below its top clock "
		     "and changes speed with load, so timings run slow and vary (for steady "
		     "numbers: sudo cpupower frequency-set -g performance)");
}

/* A PSI total's share of the wall time, in percent (at most 100). */
static double stall_pct(int64_t start_us, int64_t end_us, double wall_s)
{
	int64_t us = moved(start_us, end_us);
	if (us < 0 || wall_s <= 0)
		return NAN;
	double pct = 100.0 * (double)us / (wall_s * 1e6);
	return pct < 100 ? pct : 100;
}

/* What moved during the run. */
static void run_facts(json_t *h, const struct machine_reading *s, const struct machine_reading *e,
		      double wall_s)
{
	set_real(h, "load_1m_end", e->load_1m);
	int64_t thermal = moved_sum(s->thermal_core_throttles, e->thermal_core_throttles,
				    s->thermal_package_throttles, e->thermal_package_throttles);
	set_int(h, "thermal_throttles", thermal);
	int64_t cg_n = moved(s->cgroup_nr_throttled, e->cgroup_nr_throttled);
	int64_t cg_us = moved(s->cgroup_throttled_us, e->cgroup_throttled_us);
	set_int(h, "cgroup_throttled_count", cg_n);
	if (cg_us >= 0)
		set_real(h, "cgroup_throttled_s", (double)cg_us / 1e6);
	int64_t steal = moved(s->stat_steal_ticks, e->stat_steal_ticks);
	int64_t total = moved(s->stat_total_ticks, e->stat_total_ticks);
	double steal_pct = steal >= 0 && total > 0 ? 100.0 * (double)steal / (double)total : NAN;
	set_real(h, "steal_pct", steal_pct);
	/* The machine's own use of its CPUs: what was neither idle, nor waiting
	 * on I/O, nor taken by the hypervisor. */
	int64_t idle = moved(s->stat_idle_ticks, e->stat_idle_ticks);
	int64_t iowait = moved(s->stat_iowait_ticks, e->stat_iowait_ticks);
	if (idle >= 0 && iowait >= 0 && steal >= 0 && total > 0) {
		set_real(h, "busy_pct", 100.0 * (double)(total - idle - iowait - steal) / (double)total);
		set_real(h, "iowait_pct", 100.0 * (double)iowait / (double)total);
	}
	set_real(h, "psi_cpu_some_pct", stall_pct(s->psi_cpu_some_us, e->psi_cpu_some_us, wall_s));
	double mem_pct = stall_pct(s->psi_memory_some_us, e->psi_memory_some_us, wall_s);
	set_real(h, "psi_memory_some_pct", mem_pct);
	set_real(h, "psi_memory_full_pct",
		 stall_pct(s->psi_memory_full_us, e->psi_memory_full_us, wall_s));
	set_real(h, "psi_io_some_pct", stall_pct(s->psi_io_some_us, e->psi_io_some_us, wall_s));
	int64_t swapped =
	    moved_sum(s->swap_in_pages, e->swap_in_pages, s->swap_out_pages, e->swap_out_pages);
	set_int(h, "swap_in_pages", moved(s->swap_in_pages, e->swap_in_pages));
	set_int(h, "swap_out_pages", moved(s->swap_out_pages, e->swap_out_pages));
	if (thermal > 0)
		warn(h, "thermal_throttle",
		     "the CPU was thermally throttled %lld time%s during the run: its clock "
		     "dropped, so the code ran slower than it does on a cool machine",
		     (long long)thermal, thermal == 1 ? "" : "s");
	if (cg_n > 0)
		warn(h, "cgroup_throttle",
		     "the cgroup's CPU quota stopped the program %lld time%s during the run "
		     "(%.2f s in all): that time shows as waiting, not as the code's cost; "
		     "raise the limit to measure without it",
		     (long long)cg_n, cg_n == 1 ? "" : "s", cg_us >= 0 ? (double)cg_us / 1e6 : 0);
	if (steal_pct >= HYGIENE_STEAL_PCT)
		warn(h, "steal",
		     "the hypervisor gave %.1f%% of this VM's CPU time to others during the run "
		     "(steal): the program waited for a physical CPU, so wall times are longer "
		     "and vary with the host's load; repeat the run and compare medians",
		     steal_pct);
	if (mem_pct >= HYGIENE_MEMORY_STALL_PCT)
		warn(h, "memory_pressure",
		     "tasks stalled on memory %.0f%% of the run (PSI): reclaim slowed the "
		     "program, so its times include the machine's memory shortage",
		     mem_pct);
	if (swapped >= HYGIENE_SWAP_PAGES)
		warn(h, "swapping",
		     "the machine swapped %lld pages during the run: faults on swapped-out "
		     "memory stall the program for disk reads",
		     (long long)swapped);
}

json_t *hygiene_assess(const struct machine_reading *start, const struct machine_reading *end,
		       double wall_s)
{
	json_t *h = json_object();
	if (!h)
		return NULL;
	json_object_set_new(h, "warnings", json_array());
	start_facts(h, start);
	if (end)
		run_facts(h, start, end, wall_s);
	return h;
}

/* A reading from meta key; 0, or -1 when the recording has none. */
static int reading_load(sqlite3 *db, const char *key, struct machine_reading *out)
{
	char *text = recording_meta_text(db, key);
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (!json_is_object(j)) {
		json_decref(j);
		return -1;
	}
	machine_from_json(j, out);
	json_decref(j);
	return 0;
}

json_t *hygiene_of_recording(sqlite3 *db)
{
	struct machine_reading start, end;
	if (reading_load(db, "hygiene_start", &start))
		return NULL; /* an older recording: no key */
	int have_end = !reading_load(db, "hygiene_end", &end);
	/* The readings are of the whole run: a time slice's wall time is not
	 * what the stall totals accrued over. */
	int64_t from_ns;
	double wall_s = recording_meta_int(db, "slice_from_ns", &from_ns) ? report_wall_s(db) : -1;
	return hygiene_assess(&start, have_end ? &end : NULL, wall_s);
}

/* The whole machine (run -a): its load is what was measured, not a warning. */
static void whole_machine_unwarn(json_t *h)
{
	json_t *w = json_object_get(h, "warnings");
	for (size_t i = json_array_size(w); i-- > 0;) {
		const char *id = json_string_value(json_object_get(json_array_get(w, i), "id"));
		if (id && !strcmp(id, "busy"))
			json_array_remove(w, i);
	}
}

static int hygiene_run(struct analysis_ctx *ctx)
{
	json_t *h = hygiene_of_recording(ctx->db);
	int64_t whole = 0;
	if (h && !recording_meta_int(ctx->db, "whole_machine", &whole) && whole)
		whole_machine_unwarn(h);
	if (h)
		json_object_set_new(ctx->report, "hygiene", h);
	return 0;
}

const struct analysis_ops analysis_hygiene = {.name = "hygiene", .run = hygiene_run};
