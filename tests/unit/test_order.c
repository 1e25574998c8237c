/* test_order: the probes start, and the analyses run, in the order of what
 * they need and provide, whatever their places in their tables; a probe's
 * path-like variable (PYTHONPATH) gets an agent's directory once. */
#include "check.h"
#include "analysis/analysis.h"
#include "probes/probe.h"
#include "util/strbuf.h"

#include <string.h>

/* The place of name in out (n of them); -1 when absent. */
static int place(const struct probe_ops **out, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(out[i]->name, name))
			return i;
	return -1;
}

TEST(real_table, "the real table orders: the probes on the cpu probe's sampling set start after it")
{
	const struct probe_ops *out[PROBES_MAX];
	struct strbuf why = STRBUF_INIT;
	int n = probe_order(probe_table, out, &why);
	REQUIRE(n > 0);
	int cpu = place(out, n, "cpu");
	CHECK(cpu >= 0);
	CHECK(place(out, n, "offcpu") > cpu);
	CHECK(place(out, n, "syscalls") > cpu);
	size_t total = 0;
	while (probe_table[total])
		total++;
	CHECK_INT_EQ(n, (int)total);
	strbuf_release(&why);
}

TEST(reversed_table, "the same probes listed backwards start in an order that meets every need")
{
	const struct probe_ops *table[PROBES_MAX + 1], *out[PROBES_MAX];
	size_t n = 0;
	while (probe_table[n])
		n++;
	REQUIRE(n <= PROBES_MAX);
	for (size_t i = 0; i < n; i++)
		table[i] = probe_table[n - 1 - i];
	table[n] = NULL;
	struct strbuf why = STRBUF_INIT;
	int m = probe_order(table, out, &why);
	REQUIRE(m == (int)n);
	/* Every probe comes after every probe that provides something it needs. */
	for (int i = 0; i < m; i++)
		for (const char *const *need = out[i]->needs; need && *need; need++)
			for (int j = 0; j < m; j++)
				for (const char *const *p = out[j]->provides; p && *p; p++)
					if (!strcmp(*p, *need))
						CHECK(j < i);
	CHECK(place(out, m, "offcpu") > place(out, m, "cpu"));
	CHECK(place(out, m, "syscalls") > place(out, m, "cpu"));
	/* Probes with no need keep the table's (reversed) order among them. */
	int proc = place(out, m, "proc"), system = place(out, m, "system");
	CHECK(system < proc);
	strbuf_release(&why);
}

static const char *const needs_b[] = { "b", NULL };
static const char *const needs_a[] = { "a", NULL };
static const char *const gives_a[] = { "a", NULL };
static const char *const gives_b[] = { "b", NULL };

TEST(cycle, "probes that need each other are refused, each named")
{
	static const struct probe_ops x = { .name = "x", .needs = needs_b, .provides = gives_a };
	static const struct probe_ops y = { .name = "y", .needs = needs_a, .provides = gives_b };
	static const struct probe_ops z = { .name = "z" };
	const struct probe_ops *table[] = { &z, &x, &y, NULL }, *out[PROBES_MAX];
	struct strbuf why = STRBUF_INIT;
	CHECK(probe_order(table, out, &why) < 0);
	CHECK_CONTAINS(why.buf, "probes wait on each other: x y");
	strbuf_release(&why);
}

TEST(path_once, "an agent directory goes first in PYTHONPATH once, before what was there")
{
	struct probe_env env = PROBE_ENV_INIT;
	struct probe_ctx ctx = { .env = &env };
	REQUIRE(!probe_env_set(&ctx, "PYTHONPATH", "/user/lib"));
	probe_env_path_prepend(&ctx, "PYTHONPATH", "/agent");
	probe_env_path_prepend(&ctx, "PYTHONPATH", "/agent");
	CHECK_STR_EQ(probe_env_get(&ctx, "PYTHONPATH"), "/agent:/user/lib");
	probe_env_path_prepend(&ctx, "SONDE_TEST_UNSET_PATH", "/agent");
	CHECK_STR_EQ(probe_env_get(&ctx, "SONDE_TEST_UNSET_PATH"), "/agent");
	probe_env_release(&env);
}

/* The place of the analysis called name in out; -1 when absent. */
static int analysis_place(const struct analysis_ops **out, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(out[i]->name, name))
			return i;
	return -1;
}

TEST(analyses_reversed, "the analyses listed backwards run in an order that meets every need, "
			"and the real list's order is its own")
{
	const struct analysis_ops *table[ANALYSES_MAX + 1], *out[ANALYSES_MAX];
	size_t n = 0;
	while (analysis_table[n])
		n++;
	REQUIRE(n <= ANALYSES_MAX);
	struct strbuf why = STRBUF_INIT;
	/* The list already meets every need: nothing moves. */
	REQUIRE(analysis_order(analysis_table, out, &why) == (int)n);
	for (size_t i = 0; i < n; i++)
		CHECK(out[i] == analysis_table[i]);
	for (size_t i = 0; i < n; i++)
		table[i] = analysis_table[n - 1 - i];
	table[n] = NULL;
	int m = analysis_order(table, out, &why);
	REQUIRE(m == (int)n);
	for (int i = 0; i < m; i++)
		for (const char *const *need = out[i]->needs; need && *need; need++)
			for (int j = 0; j < m; j++)
				for (const char *const *p = out[j]->provides; p && *p; p++)
					if (!strcmp(*p, *need))
						CHECK(j < i);
	CHECK(analysis_place(out, m, "hotspots") < analysis_place(out, m, "cpu_usage"));
	CHECK(analysis_place(out, m, "phases") < analysis_place(out, m, "phase_bound"));
	CHECK(analysis_place(out, m, "asyncio") < analysis_place(out, m, "asyncio_pools"));
	CHECK(analysis_place(out, m, "phases") < analysis_place(out, m, "gaps"));
	strbuf_release(&why);
}

CHECK_MAIN()
