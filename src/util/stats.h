/* stats: pure functions for comparing repeated measurements (sonde bench):
 * order statistics, a MAD outlier rule, a bootstrap CI of a ratio of medians
 * and the Mann-Whitney U test. No global state: randomness comes from a
 * caller-seeded struct stats_rng, so equal inputs and seed give equal output. */
#ifndef SONDE_STATS_H
#define SONDE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: small, fast, and good enough for resampling indices. */
struct stats_rng {
	uint64_t state;
};

void stats_rng_init(struct stats_rng *rng, uint64_t seed);
uint64_t stats_rng_next(struct stats_rng *rng);
/* Uniform in [0, bound); bound > 0. */
size_t stats_rng_below(struct stats_rng *rng, size_t bound);

/* Each takes n >= 1 values, leaves x untouched and returns NAN for n == 0. */
double stats_median(const double *x, size_t n);
/* The q-quantile (0 <= q <= 1) by linear interpolation between order
 * statistics (R's type 7, numpy's default). */
double stats_quantile(const double *x, size_t n, double q);
/* Median absolute deviation from the median (unscaled). */
double stats_mad(const double *x, size_t n);

/* The MAD outlier rule: |x - median| > 3 * 1.4826 * MAD. */
#define STATS_MAD_SCALE	   1.4826
#define STATS_OUTLIER_MADS 3.0
int stats_is_outlier(double x, double median, double mad);

struct stats_summary {
	size_t n;
	double median, mean, stddev; /* stddev: sample (n - 1), 0 for n == 1 */
	double cov;		     /* stddev / mean, 0 when mean is 0 */
	double min, max, mad;
	size_t outliers; /* values the MAD rule flags */
};

/* 0 and *out filled, or -EINVAL for n == 0. */
int stats_summarize(const double *x, size_t n, struct stats_summary *out);

struct stats_ci {
	double point; /* median(a) / median(b) of the samples themselves */
	double lo, hi;
};

/* Percentile bootstrap CI of median(a) / median(b): `resamples` times, draw
 * na values of a and nb of b with replacement (rng seeded with seed) and take
 * the ratio of their medians; lo and hi are the (1-level)/2 and (1+level)/2
 * quantiles of those ratios. 0 and *out filled; -EINVAL for an empty sample,
 * resamples == 0, level outside (0, 1) or a median of b that is not > 0. */
int stats_bootstrap_ratio(const double *a, size_t na, const double *b, size_t nb, size_t resamples,
			  double level, uint64_t seed, struct stats_ci *out);

/* Above this many values per sample (or with ties) the U test's p-value comes
 * from the normal approximation with tie correction; at or below, exactly. */
#define STATS_MWU_EXACT_MAX 20

struct stats_mwu {
	double u;  /* U of sample a: pairs with a > b, ties counting 1/2 */
	double p;  /* two-sided */
	int exact; /* 1: from the exact distribution of U */
};

/* Mann-Whitney U test of a against b. 0 and *out filled; -EINVAL when either
 * sample is empty. */
int stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
		       struct stats_mwu *out);

/* The rule sonde bench and sonde compare share: a difference is significant
 * when the U test's p is below alpha and, when there is a CI of the ratio
 * (ci not NULL), the CI excludes 1. */
#define STATS_ALPHA 0.05
int stats_differ(const struct stats_mwu *test, const struct stats_ci *ci, double alpha);

struct strbuf;
/* "p=0.0079", or "p<0.0001", appended to sb. */
void stats_p_format(double p, struct strbuf *sb);

#endif
