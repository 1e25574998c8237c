/* doctor: what sonde can and cannot do on this machine, as a list of facts,
 * each with a verdict and, when it is not ok, the fix.
 *
 * Contract: doctor_check_*() never fail and never exit; a probe that cannot
 * run is itself a fact. Every fact owns its strings (doctor_facts_release()
 * frees them). Keys are stable names for --json; value is the raw reading
 * (a kernel release, a paranoid level, a path), "" when there is none. */
#ifndef SONDE_DOCTOR_H
#define SONDE_DOCTOR_H

#include <stddef.h>

enum doctor_verdict { DOCTOR_OK, DOCTOR_LIMITED, DOCTOR_NO };

struct doctor_fact {
	enum doctor_verdict verdict;
	char *key, *value, *fact, *fix; /* fix: "" when nothing is to be done */
};

struct doctor_facts {
	struct doctor_fact *v;
	size_t n, cap;
};

__attribute__((format(printf, 5, 6))) void doctor_fact_add(struct doctor_facts *facts,
							   enum doctor_verdict verdict,
							   const char *key, const char *value,
							   const char *fmt, ...);
/* Sets the fix of the last fact added. */
void doctor_fix_set(struct doctor_facts *facts, const char *fix);
void doctor_facts_release(struct doctor_facts *facts);

/* The kernel, perf_event_open per task and per CPU, privileges, seccomp,
 * hardware counters, the sched_switch tracepoint. */
void doctor_check_perf(struct doctor_facts *facts);
/* ptrace_scope and process_vm_readv on a child of sonde. */
void doctor_check_ptrace(struct doctor_facts *facts);
/* CPU model, cores, SMT, NUMA, frequency, throttling, load, memory, cgroup limits. */
void doctor_check_machine(struct doctor_facts *facts);
/* python3.X executables on PATH and under ~/.pyenv/versions. */
void doctor_check_python(struct doctor_facts *facts);
/* NVML, CUPTI, NCCL: whether the loader finds them. */
void doctor_check_gpu(struct doctor_facts *facts);

#endif
