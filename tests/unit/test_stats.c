/* test_stats: sonde bench's statistics against values known independently
 * (published U-test tables, textbook medians and MADs). */
#include "check.h"
#include "util/stats.h"

#include <math.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define CHECK_NEAR(a, b, tol)                                                                      \
	do {                                                                                       \
		double check_x_ = (a), check_y_ = (b);                                             \
		if (!(fabs(check_x_ - check_y_) <= (tol)))                                         \
			check_fail(__FILE__, __LINE__, "%s ~ %s: %.6g != %.6g", #a, #b, check_x_,  \
				   check_y_);                                                      \
	} while (0)

TEST(
    median_odd_even,
    "the median of an odd count is the middle value, of an even count the mean of the two middle ones")
{
	double odd[] = { 3, 1, 2 }, even[] = { 4, 1, 3, 2 };
	CHECK_NEAR(stats_median(odd, N_OF(odd)), 2, 1e-12);
	CHECK_NEAR(stats_median(even, N_OF(even)), 2.5, 1e-12);
	CHECK_INT_EQ(odd[0], 3); /* the input is left as it was */
	CHECK(isnan(stats_median(odd, 0)));
}

TEST(quantile_type7, "quantiles interpolate between order statistics like numpy's default")
{
	double x[] = { 4, 1, 3, 2 };
	CHECK_NEAR(stats_quantile(x, 4, 0.25), 1.75, 1e-12);
	CHECK_NEAR(stats_quantile(x, 4, 0), 1, 1e-12);
	CHECK_NEAR(stats_quantile(x, 4, 1), 4, 1e-12);
}

TEST(mad_textbook, "the MAD of 1 1 2 2 4 6 9 is 1")
{
	double x[] = { 1, 1, 2, 2, 4, 6, 9 };
	CHECK_NEAR(stats_mad(x, N_OF(x)), 1, 1e-12);
}

TEST(summary_values, "the summary of 2 4 4 4 5 5 7 9 has mean 5 and sample stddev sqrt(32/7)")
{
	double x[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct stats_summary s;
	REQUIRE(stats_summarize(x, N_OF(x), &s) == 0);
	CHECK_NEAR(s.mean, 5, 1e-12);
	CHECK_NEAR(s.stddev, sqrt(32.0 / 7), 1e-12);
	CHECK_NEAR(s.cov, sqrt(32.0 / 7) / 5, 1e-12);
	CHECK_NEAR(s.median, 4.5, 1e-12);
	CHECK_NEAR(s.min, 2, 0);
	CHECK_NEAR(s.max, 9, 0);
	CHECK(stats_summarize(x, 0, &s) != 0);
}

TEST(outlier_mad_rule, "only the value beyond 3 scaled MADs from the median is an outlier")
{
	double x[] = { 9, 10, 11, 10, 12, 8, 10, 40 };
	struct stats_summary s;
	REQUIRE(stats_summarize(x, N_OF(x), &s) == 0);
	CHECK_NEAR(s.mad, 1, 1e-12);
	CHECK_INT_EQ(s.outliers, 1);
	CHECK(stats_is_outlier(40, s.median, s.mad));
	CHECK(!stats_is_outlier(14, s.median, s.mad));
}

TEST(mwu_exact_u2, "n1 = n2 = 5 with U = 2 has the exact two-sided p 0.0317 of the tables")
{
	double a[] = { 1, 2, 3, 5, 6 }, b[] = { 4, 7, 8, 9, 10 };
	struct stats_mwu r;
	REQUIRE(stats_mann_whitney(a, 5, b, 5, &r) == 0);
	CHECK_NEAR(r.u, 2, 0);
	CHECK(r.exact);
	CHECK_NEAR(r.p, 0.0317, 0.00005);
	/* The test is symmetric: b against a has U = 23 and the same p. */
	REQUIRE(stats_mann_whitney(b, 5, a, 5, &r) == 0);
	CHECK_NEAR(r.u, 23, 0);
	CHECK_NEAR(r.p, 0.0317, 0.00005);
}

TEST(mwu_exact_u0, "n1 = n2 = 5 fully separated (U = 0) has the exact two-sided p 0.0079")
{
	double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 };
	struct stats_mwu r;
	REQUIRE(stats_mann_whitney(a, 5, b, 5, &r) == 0);
	CHECK_NEAR(r.u, 0, 0);
	CHECK_NEAR(r.p, 0.0079, 0.00005);
}

TEST(mwu_exact_4_4,
     "n1 = n2 = 4 fully separated has the exact two-sided p 2/70 and unequal sizes work")
{
	double a[] = { 1, 2, 3, 4 }, b[] = { 5, 6, 7, 8 };
	struct stats_mwu r;
	REQUIRE(stats_mann_whitney(a, 4, b, 4, &r) == 0);
	CHECK_NEAR(r.p, 2.0 / 70, 1e-9);
	/* n1 = 3, n2 = 6, U = 1: P(U <= 1) = 2/84, two-sided 4/84. */
	double c[] = { 1, 2, 4 }, d[] = { 3, 5, 6, 7, 8, 9 };
	REQUIRE(stats_mann_whitney(c, 3, d, 6, &r) == 0);
	CHECK_NEAR(r.u, 1, 0);
	CHECK_NEAR(r.p, 4.0 / 84, 1e-9);
}

TEST(mwu_identical_p1, "two identical samples give p = 1, exactly or by the normal approximation")
{
	double a[] = { 1, 2, 3, 4, 5, 6 };
	struct stats_mwu r;
	REQUIRE(stats_mann_whitney(a, 6, a, 6, &r) == 0);
	CHECK(!r.exact); /* every value is tied */
	CHECK_NEAR(r.p, 1, 1e-12);
	double c[] = { 7, 7, 7 };
	REQUIRE(stats_mann_whitney(c, 3, c, 3, &r) == 0);
	CHECK_NEAR(r.p, 1, 1e-12);
}

TEST(mwu_normal_large,
     "beyond 20 values the normal approximation agrees with the known z of separated samples")
{
	double a[25], b[25];
	for (int i = 0; i < 25; i++) {
		a[i] = i;
		b[i] = 100 + i;
	}
	struct stats_mwu r;
	REQUIRE(stats_mann_whitney(a, 25, b, 25, &r) == 0);
	CHECK(!r.exact);
	CHECK_NEAR(r.u, 0, 0);
	/* mu = 312.5, sigma = sqrt(625 * 51 / 12) = 51.54; z = 312 / 51.54 = 6.053 */
	CHECK_NEAR(r.p, 1.42e-9, 0.05e-9);
}

TEST(bootstrap_constant_point, "the bootstrap CI of two constant samples is a point at their ratio")
{
	double a[] = { 2, 2, 2, 2 }, b[] = { 1, 1, 1 };
	struct stats_ci ci;
	REQUIRE(stats_bootstrap_ratio(a, 4, b, 3, 10000, 0.95, 42, &ci) == 0);
	CHECK_NEAR(ci.point, 2, 0);
	CHECK_NEAR(ci.lo, 2, 0);
	CHECK_NEAR(ci.hi, 2, 0);
}

TEST(bootstrap_shift_excludes_1,
     "a sample twice as slow has a ratio CI around 2 that excludes 1, the same for the same seed")
{
	double a[12], b[12];
	for (int i = 0; i < 12; i++) {
		a[i] = 20 + (i * 7) % 5;
		b[i] = 10 + (i * 3) % 4 * 0.5;
	}
	struct stats_ci ci, again;
	REQUIRE(stats_bootstrap_ratio(a, 12, b, 12, 10000, 0.95, 7, &ci) == 0);
	CHECK(ci.lo > 1.5 && ci.hi < 2.5);
	CHECK(ci.lo <= ci.point && ci.point <= ci.hi);
	REQUIRE(stats_bootstrap_ratio(a, 12, b, 12, 10000, 0.95, 7, &again) == 0);
	CHECK(ci.lo == again.lo && ci.hi == again.hi);
}

TEST(bootstrap_rejects,
     "the bootstrap refuses empty samples, no resamples, a bad level and a zero median")
{
	double a[] = { 1, 2 }, z[] = { 0, 0, 1 };
	struct stats_ci ci = { 9, 9, 9 };
	CHECK(stats_bootstrap_ratio(a, 0, a, 2, 100, 0.95, 1, &ci) != 0);
	CHECK(stats_bootstrap_ratio(a, 2, a, 2, 0, 0.95, 1, &ci) != 0);
	CHECK(stats_bootstrap_ratio(a, 2, a, 2, 100, 1, 1, &ci) != 0);
	CHECK(stats_bootstrap_ratio(a, 2, z, 3, 100, 0.95, 1, &ci) != 0);
	CHECK_NEAR(ci.point, 9, 0);
}

TEST(rng_reproducible,
     "the generator gives the same sequence for the same seed and stays in bounds")
{
	struct stats_rng r1, r2;
	stats_rng_init(&r1, 5);
	stats_rng_init(&r2, 5);
	for (int i = 0; i < 100; i++) {
		CHECK(stats_rng_next(&r1) == stats_rng_next(&r2));
		CHECK(stats_rng_below(&r1, 7) < 7);
		stats_rng_below(&r2, 7);
	}
}

CHECK_MAIN()
