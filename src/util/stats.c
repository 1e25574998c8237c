/* stats: order statistics, bootstrap and rank tests for sonde bench (stats.h). */
#include "stats.h"
#include "strbuf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void stats_rng_init(struct stats_rng *rng, uint64_t seed)
{
	rng->state = seed;
}

uint64_t stats_rng_next(struct stats_rng *rng)
{
	uint64_t z = (rng->state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

size_t stats_rng_below(struct stats_rng *rng, size_t bound)
{
	/* Rejection keeps every index equally likely. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
	uint64_t r;
	do
		r = stats_rng_next(rng);
	while (r >= limit);
	return (size_t)(r % bound);
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

static double quantile_sorted(const double *s, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)floor(pos);
	if (lo + 1 >= n)
		return s[n - 1];
	double frac = pos - (double)lo;
	return s[lo] + frac * (s[lo + 1] - s[lo]);
}

static double *sorted_copy(const double *x, size_t n)
{
	double *s = xmalloc(n * sizeof(*s));
	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return s;
}

double stats_quantile(const double *x, size_t n, double q)
{
	if (!n)
		return NAN;
	double *s = sorted_copy(x, n);
	double v = quantile_sorted(s, n, q);
	free(s);
	return v;
}

double stats_median(const double *x, size_t n)
{
	return stats_quantile(x, n, 0.5);
}

double stats_mad(const double *x, size_t n)
{
	if (!n)
		return NAN;
	double med = stats_median(x, n);
	double *dev = xmalloc(n * sizeof(*dev));
	for (size_t i = 0; i < n; i++)
		dev[i] = fabs(x[i] - med);
	double mad = stats_median(dev, n);
	free(dev);
	return mad;
}

int stats_is_outlier(double x, double median, double mad)
{
	return fabs(x - median) > STATS_OUTLIER_MADS * STATS_MAD_SCALE * mad;
}

int stats_summarize(const double *x, size_t n, struct stats_summary *out)
{
	if (!n)
		return -EINVAL;
	struct stats_summary s = { .n = n, .min = x[0], .max = x[0] };
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		s.min = fmin(s.min, x[i]);
		s.max = fmax(s.max, x[i]);
	}
	s.mean = sum / (double)n;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - s.mean) * (x[i] - s.mean);
	s.stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
	s.cov = s.mean != 0 ? s.stddev / fabs(s.mean) : 0;
	s.median = stats_median(x, n);
	s.mad = stats_mad(x, n);
	for (size_t i = 0; i < n; i++)
		s.outliers += stats_is_outlier(x[i], s.median, s.mad);
	*out = s;
	return 0;
}

/* The median of n values drawn with replacement from x, using scratch (n). */
static double resample_median(const double *x, size_t n, double *scratch, struct stats_rng *rng)
{
	for (size_t i = 0; i < n; i++)
		scratch[i] = x[stats_rng_below(rng, n)];
	qsort(scratch, n, sizeof(*scratch), cmp_double);
	return quantile_sorted(scratch, n, 0.5);
}

int stats_bootstrap_ratio(const double *a, size_t na, const double *b, size_t nb, size_t resamples,
			  double level, uint64_t seed, struct stats_ci *out)
{
	if (!na || !nb || !resamples || !(level > 0 && level < 1))
		return -EINVAL;
	double mb = stats_median(b, nb);
	if (!(mb > 0))
		return -EINVAL;
	struct stats_rng rng;
	stats_rng_init(&rng, seed);
	double *ratios = xmalloc(resamples * sizeof(*ratios));
	double *scratch = xmalloc((na > nb ? na : nb) * sizeof(*scratch));
	for (size_t r = 0; r < resamples; r++) {
		double ra = resample_median(a, na, scratch, &rng);
		double rb = resample_median(b, nb, scratch, &rng);
		/* A resample of b can hold a 0 where b's median is > 0: that
		 * ratio is unbounded, which the upper quantile shows. */
		ratios[r] = rb > 0 ? ra / rb : INFINITY;
	}
	qsort(ratios, resamples, sizeof(*ratios), cmp_double);
	struct stats_ci ci = {
		.point = stats_median(a, na) / mb,
		.lo = quantile_sorted(ratios, resamples, (1 - level) / 2),
		.hi = quantile_sorted(ratios, resamples, (1 + level) / 2),
	};
	*out = ci;
	free(scratch);
	free(ratios);
	return 0;
}

/* P(U <= u) under the null hypothesis for samples of m and n without ties:
 * the count of arrangements with U = k satisfies
 * f(k; m, n) = f(k - n; m - 1, n) + f(k; m, n - 1), over C(m + n, m). */
static double mwu_exact_cdf(size_t m, size_t n, double u)
{
	size_t kmax = m * n;
	size_t width = kmax + 1;
	/* prev[j][k] = f(k; i - 1, j), cur[j][k] = f(k; i, j). */
	double *prev = xcalloc((n + 1) * width, sizeof(double));
	double *cur = xcalloc((n + 1) * width, sizeof(double));
	for (size_t j = 0; j <= n; j++)
		prev[j * width] = 1; /* i = 0: one arrangement, U = 0 */
	for (size_t i = 1; i <= m; i++) {
		memset(cur, 0, (n + 1) * width * sizeof(double));
		cur[0] = 1; /* j = 0 */
		for (size_t j = 1; j <= n; j++)
			for (size_t k = 0; k <= i * j; k++)
				cur[j * width + k] = (k >= j ? prev[j * width + k - j] : 0) +
						     cur[(j - 1) * width + k];
		double *t = prev;
		prev = cur;
		cur = t;
	}
	double below = 0, total = 0;
	for (size_t k = 0; k <= kmax; k++) {
		total += prev[n * width + k];
		if ((double)k <= u + 1e-9)
			below += prev[n * width + k];
	}
	free(prev);
	free(cur);
	return below / total;
}

int stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
		       struct stats_mwu *out)
{
	if (!na || !nb)
		return -EINVAL;
	size_t N = na + nb;
	double *all = xmalloc(N * sizeof(*all));
	memcpy(all, a, na * sizeof(*all));
	memcpy(all + na, b, nb * sizeof(*all));
	qsort(all, N, sizeof(*all), cmp_double);
	double ties = 0; /* sum of t^3 - t over groups of equal values */
	for (size_t i = 0; i < N;) {
		size_t j = i;
		while (j < N && all[j] == all[i])
			j++;
		double t = (double)(j - i);
		ties += t * t * t - t;
		i = j;
	}
	free(all);
	double u = 0;
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			u += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
	double mn = (double)na * (double)nb;
	struct stats_mwu r = { .u = u };
	if (ties == 0 && na <= STATS_MWU_EXACT_MAX && nb <= STATS_MWU_EXACT_MAX) {
		double tail = mwu_exact_cdf(na, nb, fmin(u, mn - u));
		r.p = fmin(1, 2 * tail);
		r.exact = 1;
	} else {
		double n = (double)N;
		double var = mn / 12 * ((n + 1) - ties / (n * (n - 1)));
		double dev = fabs(u - mn / 2) - 0.5; /* continuity correction */
		r.p = var > 0 && dev > 0 ? fmin(1, erfc(dev / sqrt(var) / sqrt(2))) : 1;
	}
	*out = r;
	return 0;
}

int stats_differ(const struct stats_mwu *test, const struct stats_ci *ci, double alpha)
{
	if (ci && !(ci->lo > 1 || ci->hi < 1))
		return 0;
	return test->p < alpha;
}

void stats_p_format(double p, struct strbuf *sb)
{
	if (p < 0.0001)
		strbuf_addstr(sb, "p<0.0001");
	else
		strbuf_addf(sb, "p=%.2g", p);
}
