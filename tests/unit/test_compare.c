/* compare: per-function deltas between two recordings (seconds from the
 * sampling rate, share points), the ranking that puts a changed function
 * before the callers it drags along, phases matched by name and the program
 * a report ran. */
#include "analysis/compare.h"
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

CHECK_MAIN()
