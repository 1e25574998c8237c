/* compare: per-function deltas between two recordings (seconds from the
 * sampling rate, share points), the ranking that puts a changed function
 * before the callers it drags along, phases matched by name and the program
 * a report ran. */
#include "analysis/compare.h"
#include "render/compare_view.h"
#include "check.h"
#include "stacks_fixture.h"

static const char *const names[2] = { "A", "B" };

static const struct compare_func *find(const struct compare *c, const char *function)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].function, function))
			return &c->v[i];
	return NULL;
}

/* A: 60 samples of hot_a, 40 of hot_b; B: 5 of hot_a (through recursion), 40 of hot_b. */
static void build(struct fixture fx[2], struct compare *c, int rate_hz)
{
	for (int r = 0; r < 2; r++) {
		fixture_open(&fx[r], 1000000000);
		if (rate_hz)
			record_meta_int(fx[r].rec, "cpu_rate_hz", rate_hz);
		STACK(&fx[r], r ? 5 : 60, "cpu", 1, "main", "hot_a", "hot_a");
		STACK(&fx[r], 40, "cpu", 1, "main", "hot_b");
		fixture_reopen(&fx[r]);
	}
	struct strbuf err = STRBUF_INIT;
	if (compare_build(fx[0].db, fx[1].db, names, c, &err)) {
		fprintf(stderr, "compare_build: %s\n", err.buf);
		exit(2);
	}
	strbuf_release(&err);
}

TEST(shrunk_function_ranks_first_in_seconds,
     "a function that shrank ranks first, in seconds from the rate")
{
	struct fixture fx[2];
	struct compare c = COMPARE_INIT;
	build(fx, &c, 100);
	const struct compare_func *a = find(&c, "hot_a"), *m = find(&c, "main");
	CHECK(a && m);
	CHECK(c.nranked == 3 && &c.v[c.ranked[0]] == a);
	CHECK(a->total_samples[0] == 60 && a->total_samples[1] == 5); /* recursion counts once */
	int secs = 0;
	CHECK(fabs(compare_total_delta(&c, a, &secs) + 0.55) < 1e-9 && secs);
	CHECK(fabs(compare_share(&c, a, 0, 1) - 60) < 1e-9);
	/* main lost as much, but hot_a explains it: listed last. */
	CHECK(m->inherited && !a->inherited && &c.v[c.ranked[2]] == m);
	compare_release(&c);
	fixture_close(&fx[0]);
	fixture_close(&fx[1]);
}

TEST(without_a_rate_share_points_rank, "without a sampling rate the ranking uses share points")
{
	struct fixture fx[2];
	struct compare c = COMPARE_INIT;
	build(fx, &c, 0);
	const struct compare_func *a = find(&c, "hot_a");
	int secs = 1;
	CHECK(isnan(compare_seconds(&c, a, 0, 0)));
	CHECK(fabs(compare_total_delta(&c, a, &secs) - (100.0 * 5 / 45 - 60)) < 1e-9 && !secs);
	CHECK(&c.v[c.ranked[0]] == a);
	compare_release(&c);
	fixture_close(&fx[0]);
	fixture_close(&fx[1]);
}

TEST(phases_match_by_name_in_order, "phases match by name, the nth with the nth")
{
	json_t *a = json_pack("{s:[{s:s},{s:s},{s:s}]}", "phases", "name", "load", "name", "step",
			      "name", "step");
	json_t *b = json_pack("{s:[{s:s},{s:s}]}", "phases", "name", "step", "name", "save");
	json_t *m = compare_phases(a, b);
	CHECK(json_array_size(m) == 4);
	CHECK(json_is_null(json_object_get(json_array_get(m, 0), "b")));
	CHECK(json_array_get(json_object_get(b, "phases"), 0) ==
	      json_object_get(json_array_get(m, 1), "b"));
	CHECK(json_is_null(json_object_get(json_array_get(m, 2), "b")));
	CHECK(json_is_null(json_object_get(json_array_get(m, 3), "a")));
	json_decref(m);
	json_decref(a);
	json_decref(b);
}

TEST(program_names_the_script_for_python,
     "the program is the command's base name, and the script for Python")
{
	json_t *r =
	    json_pack("{s:{s:s}}", "target", "command", "/usr/bin/python3 /src/train.py -x");
	char *p = compare_program(r);
	CHECK(p && !strcmp(p, "python3 train.py"));
	free(p);
	json_decref(r);
	r = json_pack("{s:{s:s}}", "target", "command", "./build/app slow");
	p = compare_program(r);
	CHECK(p && !strcmp(p, "app"));
	free(p);
	json_decref(r);
	CHECK(compare_program(NULL) == NULL);
}

#define FAMILY_RUNS 5

/* Two families of FAMILY_RUNS runs at 100 Hz: hot_a's samples per run in A
 * and B (hot_b 40 in every run), built into *c. */
static void family_build(const int hot_a[2][FAMILY_RUNS], struct compare *c)
{
	struct fixture fx[2][FAMILY_RUNS];
	sqlite3 *dbs[2][FAMILY_RUNS];
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < FAMILY_RUNS; k++) {
			fixture_open(&fx[r][k], 1000000000);
			record_meta_int(fx[r][k].rec, "cpu_rate_hz", 100);
			STACK(&fx[r][k], hot_a[r][k], "cpu", 1, "main", "hot_a");
			STACK(&fx[r][k], 40, "cpu", 1, "main", "hot_b");
			fixture_reopen(&fx[r][k]);
			dbs[r][k] = fx[r][k].db;
		}
	sqlite3 *const *const sides[2] = {dbs[0], dbs[1]};
	const size_t n[2] = {FAMILY_RUNS, FAMILY_RUNS};
	struct strbuf err = STRBUF_INIT;
	if (compare_build_runs(sides, n, names, c, &err)) {
		fprintf(stderr, "compare_build_runs: %s\n", err.buf);
		exit(2);
	}
	strbuf_release(&err);
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < FAMILY_RUNS; k++)
			fixture_close(&fx[r][k]);
}

/* The terminal summary of c, as one string (free it). */
static char *terminal_text(const struct compare *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	compare_terminal(c, names, f);
	fclose(f);
	return text;
}

TEST(repeated_shrink_is_significant,
     "across five runs a side, a function that shrank in every run is significant and first")
{
	static const int hot_a[2][FAMILY_RUNS] = {{60, 62, 58, 61, 59}, {5, 6, 4, 7, 3}};
	struct compare c = COMPARE_INIT;
	family_build(hot_a, &c);
	const struct compare_func *a = find(&c, "hot_a"), *b = find(&c, "hot_b");
	REQUIRE(a && b);
	CHECK(c.tested && c.run[0].nruns == FAMILY_RUNS);
	CHECK(&c.v[c.ranked[0]] == a);
	CHECK(a->test.tested && a->test.significant && a->test.p < 0.01);
	CHECK(a->test.has_ratio && a->test.hi < 1 && fabs(a->test.ratio - 5.0 / 60) < 1e-9);
	/* hot_b's seconds did not move (its share did, as the runs got shorter):
	 * not even tested, so it does not dilute the others' significance. */
	CHECK(!b->test.tested && !b->test.significant);
	/* Seconds are the mean per run: 300 samples over 5 runs at 100 Hz. */
	CHECK(fabs(compare_seconds(&c, a, 0, 0) - 0.6) < 1e-9);
	CHECK(fabs(compare_share(&c, a, 0, 0) - 100.0 * 300 / 500) < 1e-9);
	char *text = terminal_text(&c);
	CHECK_CONTAINS(text, "what changed most: hot_a shrank");
	CHECK_CONTAINS(text, "significant: B/A 0.08");
	free(text);
	compare_release(&c);
}

TEST(repeated_noise_is_not_significant,
     "across five runs a side, runs that differ by noise say no significant difference")
{
	static const int hot_a[2][FAMILY_RUNS] = {{60, 52, 48, 66, 55}, {65, 63, 57, 47, 70}};
	struct compare c = COMPARE_INIT;
	family_build(hot_a, &c);
	const struct compare_func *a = find(&c, "hot_a");
	REQUIRE(a);
	CHECK(a->test.tested && !a->test.significant && a->test.p > 0.3);
	char *text = terminal_text(&c);
	CHECK_CONTAINS(text, "what changed most: no significant difference across 5 and 5 runs");
	free(text);
	compare_release(&c);
}

CHECK_MAIN()
