/* hotspots: self and total per function (recursion counted once per sample),
 * the context-sensitive call tree, hot lines, the dominant-hotspot finding and
 * the reason given when there is no sample. */
#include "analysis/analysis.h"
#include "check.h"
#include "stacks_fixture.h"

#include <math.h>

static json_t *build(struct fixture *fx)
{
	struct strbuf err = STRBUF_INIT;
	fixture_reopen(fx);
	json_t *r = report_build(fx->db, &err);
	strbuf_release(&err);
	return r;
}

static json_t *hotspot(json_t *report, const char *function)
{
	size_t i;
	json_t *h;
	json_array_foreach (json_object_get(report, "hotspots"), i, h)
		if (!strcmp(json_string_value(json_object_get(h, "function")), function))
			return h;
	return NULL;
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

TEST(self_and_total_with_recursion,
     "self counts the leaf, total counts a function once per sample even in recursion")
{
	struct fixture fx;
	fixture_open(&fx, 2000000000);
	STACK(&fx, 70, "cpu", 1, "main", "work", "hot");
	STACK(&fx, 30, "cpu", 1, "main", "fib", "fib", "fib");
	json_t *r = build(&fx);
	CHECK(r != NULL);
	json_t *hot = hotspot(r, "hot"), *fib = hotspot(r, "fib"), *main_ = hotspot(r, "main");
	CHECK(hot && fib && main_);
	CHECK(fabs(num(hot, "self_pct") - 70) < 1e-9 && fabs(num(hot, "total_pct") - 70) < 1e-9);
	CHECK(num(hot, "samples") == 70);
	/* fib is on the stack three times per sample but counts once. */
	CHECK(fabs(num(fib, "self_pct") - 30) < 1e-9 && fabs(num(fib, "total_pct") - 30) < 1e-9);
	CHECK(num(main_, "self_pct") == 0 && fabs(num(main_, "total_pct") - 100) < 1e-9);
	/* Ranked by self: hot first. */
	CHECK(json_array_get(json_object_get(r, "hotspots"), 0) == hot);
	CHECK(!strcmp(
	    json_string_value(json_object_get(json_object_get(r, "hotspots_source"), "source")),
	    "cpu"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(two_paths_stay_two_entries,
     "two call paths into one function stay two entries in the call tree")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 60, "cpu", 1, "main", "parse", "hash");
	STACK(&fx, 40, "cpu", 1, "main", "lookup", "hash");
	json_t *r = build(&fx);
	json_t *tree = json_object_get(r, "call_tree");
	size_t i, found = 0;
	json_t *e;
	json_array_foreach (tree, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "function")), "hash"))
			continue;
		json_t *path = json_object_get(e, "path");
		const char *caller = json_string_value(json_array_get(path, 1));
		CHECK(json_array_size(path) == 3 && num(e, "depth") == 3);
		if (!strcmp(caller, "parse"))
			CHECK(fabs(num(e, "total_pct") - 60) < 1e-9 && num(e, "samples") == 60);
		else
			CHECK(!strcmp(caller, "lookup") && fabs(num(e, "total_pct") - 40) < 1e-9);
		found++;
	}
	CHECK(found == 2);
	/* Heaviest path first, parents before children. */
	CHECK(!strcmp(json_string_value(json_object_get(json_array_get(tree, 0), "function")),
		      "main"));
	CHECK(!strcmp(json_string_value(json_object_get(json_array_get(tree, 1), "function")),
		      "parse"));
	/* The flat hotspots list merges them: hash is one function. */
	CHECK(fabs(num(hotspot(r, "hash"), "self_pct") - 100) < 1e-9);
	json_decref(r);
	fixture_close(&fx);
}

TEST(dominant_hotspot_finding_names_hottest_line,
     "a dominant function yields a finding with its hottest line as evidence")
{
	struct fixture fx;
	fixture_open(&fx, 4000000000);
	STACK(&fx, 50, "cpu", 1, "main", "walk@10");
	STACK(&fx, 20, "cpu", 1, "main", "walk@12");
	STACK(&fx, 30, "cpu", 1, "main@3", "other@7");
	json_t *r = build(&fx);
	json_t *walk = hotspot(r, "walk");
	CHECK(num(walk, "line") == 10 && fabs(num(walk, "self_pct") - 70) < 1e-9);
	json_t *lines = json_object_get(r, "hot_lines");
	CHECK(num(json_array_get(lines, 0), "line") == 10);
	CHECK(fabs(num(json_array_get(lines, 0), "function_pct") - 100.0 * 50 / 70) < 1e-9);
	size_t i;
	json_t *f, *dom = NULL;
	json_array_foreach (json_object_get(r, "findings"), i, f)
		if (strstr(json_string_value(json_object_get(f, "title")), "walk"))
			dom = f;
	CHECK(dom != NULL);
	CHECK(dom &&
	      !strcmp(json_string_value(json_object_get(dom, "location")), "work.c:walk:10"));
	CHECK(dom && strstr(json_string_value(json_object_get(dom, "evidence")), "work.c:10"));
	/* 70% of the samples of a 4 s run: 2.8 s at stake. */
	CHECK(dom && fabs(num(json_object_get(dom, "impact"), "seconds") - 2.8) < 1e-6);
	json_decref(r);
	fixture_close(&fx);
}

TEST(dominant_hotspot_at_stake_is_its_sampled_time,
     "a dominant function's time at stake is its samples times the sampling period, not its share "
     "of wall")
{
	struct fixture fx;
	fixture_open(&fx, 4000000000);
	/* 40 samples at 100 Hz: 0.4 s of CPU in a 4 s run that mostly slept. */
	record_meta_int(fx.rec, "cpu_rate_hz", 100);
	STACK(&fx, 32, "cpu", 1, "main", "spin");
	STACK(&fx, 8, "cpu", 1, "main", "other");
	json_t *r = build(&fx);
	size_t i;
	json_t *f, *dom = NULL;
	json_array_foreach (json_object_get(r, "findings"), i, f)
		if (strstr(json_string_value(json_object_get(f, "title")), "spin"))
			dom = f;
	CHECK(dom != NULL);
	CHECK(dom && strstr(json_string_value(json_object_get(dom, "title")), "80% of the CPU samples"));
	CHECK(dom && fabs(num(json_object_get(dom, "impact"), "seconds") - 0.32) < 1e-6);
	CHECK(dom && fabs(num(json_object_get(dom, "impact"), "share_pct") - 8) < 1e-6);
	json_decref(r);
	fixture_close(&fx);
}

TEST(no_samples_gives_the_probe_reason,
     "without samples hotspots is absent and not_measured gives the probe's reason")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	record_probe(fx.rec, "cpu", "unavailable", "kernel.perf_event_paranoid is 4");
	STACK(&fx, 5, "offcpu", 1000, "main", "read");
	json_t *r = build(&fx);
	CHECK(json_object_get(r, "hotspots") == NULL);
	const char *why =
	    json_string_value(json_object_get(json_object_get(r, "not_measured"), "hotspots"));
	CHECK(why && strstr(why, "perf_event_paranoid is 4"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(python_samples_when_no_cpu_samples, "python samples are used when there are no cpu samples")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 8, "python", 1, "<module>", "train", "step");
	json_t *r = build(&fx);
	CHECK(fabs(num(hotspot(r, "step"), "self_pct") - 100) < 1e-9);
	CHECK(!strcmp(
	    json_string_value(json_object_get(json_object_get(r, "hotspots_source"), "source")),
	    "python"));
	json_decref(r);
	fixture_close(&fx);
}

TEST(malformed_stacks_cannot_loop,
     "a cyclic or dangling stack in a hand-made recording cannot loop or crash")
{
	struct fixture fx;
	fixture_open(&fx, 1000000000);
	STACK(&fx, 1, "cpu", 1, "main"); /* creates the tables */
	sqlite3_exec(recorder_db(fx.rec),
		     /* node 50 is its own parent; 60 and 61 point at each other; 70 names a
		      * frame and a parent that do not exist; weights out of range dropped */
		     "INSERT INTO stack_nodes VALUES(50, 50, 1, 1);"
		     "INSERT INTO stack_nodes VALUES(60, 61, 1, 1);"
		     "INSERT INTO stack_nodes VALUES(61, 60, 1, 2);"
		     "INSERT INTO stack_nodes VALUES(70, 999, 12345, 3);"
		     "INSERT INTO frames VALUES(80, NULL, NULL, -5, NULL, NULL);"
		     "INSERT INTO stack_nodes VALUES(81, 0, 80, 1);"
		     "INSERT INTO samples VALUES(0, 1, 1, 50, 'cpu', 1, 1, NULL);"
		     "INSERT INTO samples VALUES(0, 1, 1, 60, 'cpu', 1, 1, NULL);"
		     "INSERT INTO samples VALUES(0, 1, 1, 70, 'cpu', 1, 1, NULL);"
		     "INSERT INTO samples VALUES(0, 1, 1, 81, 'cpu', 1, 1, NULL);"
		     "INSERT INTO samples VALUES(0, 1, 1, 4242, 'cpu', 1, 1, NULL);"
		     "INSERT INTO samples VALUES(0, 1, 1, 81, 'cpu', -7, 1, NULL);",
		     NULL, NULL, NULL);
	json_t *r = build(&fx);
	CHECK(r != NULL);
	CHECK(json_array_size(json_object_get(r, "hotspots")) > 0);
	CHECK(hotspot(r, "[unknown]") != NULL);
	/* Every self share is a share: none above 100%. */
	size_t i;
	json_t *h;
	json_array_foreach (json_object_get(r, "hotspots"), i, h)
		CHECK(num(h, "self_pct") <= 100 && num(h, "total_pct") <= 100 + 1e-9);
	json_decref(r);
	fixture_close(&fx);
}

CHECK_MAIN()
