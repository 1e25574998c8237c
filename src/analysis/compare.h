/* compare: what changed between two runs (`sonde compare A B`): per-function
 * self and total time from the same stacks the report counts, the phases
 * matched by name and the peak RSS from the two report models.
 *
 * Contract:
 * - Each run's stacks come from stack_set_load_mode() with the run's own mode
 *   (meta python_mode), the query layer the hotspots and flame graph use.
 * - A function is the same in both runs when its name and its module's base
 *   name match (a rebuilt binary may move, its functions stay comparable).
 * - Times: share points (100 × samples / the run's samples) and seconds
 *   (samples / the sampling rate: meta python_rate_hz for "python" samples,
 *   cpu_rate_hz otherwise); seconds are NAN when a run has no rate.
 * - Ranking: by |Δ total seconds| (share points when either run has no rate),
 *   except that a function whose change a callee explains (same sign, at least
 *   COMPARE_INHERITED of it: main above the loop that changed) comes after
 *   every function that changed on its own. ranked[0] is "what changed most".
 * - Several runs a side (`sonde run --repeat`, compare_build_runs()): a
 *   function's samples are summed over a side's runs; shares are of the side's
 *   samples and seconds the mean per run (at the side's first run's rate).
 *   With two or more runs on both sides, each function whose total time
 *   changed by COMPARE_TEST_MIN_PTS percent of the longer side's sampled time
 *   per run or more (share points without a rate), and whose change no
 *   callee explains (inherited), is tested: a Mann-Whitney U test
 *   of its per-run total time (seconds, else share points) and a bootstrap
 *   CI of the ratio of medians B / A; significant by stats_differ() at the
 *   Holm-Bonferroni level over the functions tested. The ranking then puts
 *   the significant changes before the others.
 * - warnings[r]: the machine warnings of side r's runs (hygiene.h), one
 *   per id: [{id, text (the first run's that had it), runs: [1-based run
 *   numbers]}]; empty when no run had one or its recording has no readings.
 * - gpu: the kernels of both sides (compare_gpu.h).
 * - Everything is owned by the struct; compare_release() frees it. */
#ifndef SONDE_COMPARE_H
#define SONDE_COMPARE_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "compare_gpu.h"
#include "../record/stackread.h"

struct strbuf;

#define COMPARE_INHERITED 0.8
#define COMPARE_TEST_MIN_PTS 1.0 /* smaller changes (% of a run) are not tested */
#define COMPARE_RESAMPLES 2000	 /* bootstrap resamples per function */
#define COMPARE_SEED 0x5eed
#define COMPARE_RUNS_MAX 100 /* runs a side sonde compare reads */

/* The significance test of one function's change across repeated runs. */
struct compare_test {
	int tested;    /* 0: one run on a side, a change below COMPARE_TEST_MIN_PTS, or inherited */
	int has_ratio; /* ratio and CI known (A's median above 0) */
	int significant;	 /* p below its Holm-Bonferroni level and the CI excludes 1 */
	double p, ratio, lo, hi; /* p two-sided; ratio of medians B / A with its 95% CI */
};

struct compare_func {
	const char *function, *module;		   /* module: a base name, or NULL */
	int64_t self_samples[2], total_samples[2]; /* [0]: run A, [1]: run B */
	int inherited;				   /* a callee explains its change */
	int64_t *run_totals[2]; /* total samples in each run of a side; NULL: none */
	struct compare_test test;
};

struct compare_run {
	struct stack_set ss;
	const char *source; /* "mixed", "cpu" or "python"; NULL when ss is empty */
	double period_s;    /* seconds per sample; NAN when unknown */
	size_t *entry;	    /* ss.funcs index -> index into compare.v */
	/* ss is the side's first run; the others are counted in and let go. */
	size_t nruns;
	int64_t samples_all;  /* samples of every run of the side */
	int64_t *run_samples; /* [nruns]: each run's samples */
	double *run_period_s; /* [nruns]: each run's seconds per sample */
};

struct compare {
	struct compare_run run[2];
	struct compare_func *v;
	size_t n;
	size_t *ranked; /* nranked indices into v (the functions sampled in A or
			 * B), the biggest change first */
	size_t nranked;
	int tested; /* both sides have two runs or more: compare_func.test is filled */
	json_t *warnings[2];
	struct compare_gpu gpu;
};

#define COMPARE_RUN_INIT                                                                           \
	{                                                                                          \
		STACK_SET_INIT, NULL, 0, NULL, 0, 0, NULL, NULL                                    \
	}
#define COMPARE_INIT                                                                               \
	{                                                                                          \
		{COMPARE_RUN_INIT, COMPARE_RUN_INIT}, NULL, 0, NULL, 0, 0, {NULL, NULL},           \
		    COMPARE_GPU_INIT                                                               \
	}

/* Reads both recordings (a before, b after) and ranks the changes. 0, or -1
 * with "NAME: why" in err (names[0] for a, names[1] for b) when a recording
 * cannot be read; *c is written only on success. */
int compare_build(sqlite3 *a, sqlite3 *b, const char *const names[2], struct compare *c,
		  struct strbuf *err);
/* The same over several runs a side: dbs[0] holds n[0] recordings of A,
 * dbs[1] n[1] of B (each n >= 1); names label the sides. */
int compare_build_runs(sqlite3 *const *const dbs[2], const size_t n[2], const char *const names[2],
		       struct compare *c, struct strbuf *err);
void compare_release(struct compare *c);

/* f's time in run r (0: A, 1: B): share points of the run's samples, or
 * seconds (NAN when the run has no rate). */
double compare_share(const struct compare *c, const struct compare_func *f, int r, int self);
double compare_seconds(const struct compare *c, const struct compare_func *f, int r, int self);
/* The total time's change f is ranked by: seconds, or share points when
 * either run has no rate (*in_seconds says which, when not NULL). */
double compare_total_delta(const struct compare *c, const struct compare_func *f, int *in_seconds);

/* The phases of two report models matched by name (the nth phase of a name in
 * A with the nth of that name in B): a new array of {name, a, b}, a and b the
 * phases' objects or null when a run lacks it. Never NULL. */
json_t *compare_phases(json_t *report_a, json_t *report_b);

/* The program a report model ran: the command's first word's base name, and
 * for an interpreter (python*) the script's too. A malloc'd string, or NULL. */
char *compare_program(json_t *report);

#endif
