/* compare: per-function deltas between two recordings (seconds from the
 * sampling rate, share points), the ranking that puts a changed function
 * before the callers it drags along, phases matched by name, the program
 * a report ran, GPU kernel deltas, each side's machine warnings and what a
 * family compared with one run is told. */
#include "analysis/compare.h"
#include "analysis/compare_heap.h"
#include "render/compare_view.h"
#include "check.h"
#include "gpu_fixture.h"

static const char *const names[2] = { "A", "B" };

static const struct compare_func *find(const struct compare *c, const char *function)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].function, function))
			return &c->v[i];
	return NULL;
}

static void build_pair(sqlite3 *a, sqlite3 *b, struct compare *c)
{
	struct strbuf err = STRBUF_INIT;
	if (compare_build(a, b, names, c, &err)) {
		fprintf(stderr, "compare_build: %s\n", err.buf);
		exit(2);
	}
	strbuf_release(&err);
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
	build_pair(fx[0].db, fx[1].db, c);
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

/* The markdown of c, as one string (free it). */
static char *md_text_of(const struct compare *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	json_t *reports[2] = {NULL, NULL};
	compare_md_write(c, reports, names, f);
	fclose(f);
	return text;
}

/* kernels[r]: how many 1 ms "_Z4stepv" kernels run r ran (0: no GPU tables);
 * B also runs a 2 ms "_Z7newpassv" when it has kernels. */
static void gpu_build(struct fixture fx[2], struct compare *c, const int kernels[2])
{
	for (int r = 0; r < 2; r++) {
		fixture_open(&fx[r], 1000000000);
		record_meta_int(fx[r].rec, "cpu_rate_hz", 100);
		STACK(&fx[r], 50, "cpu", 1, "main", "train");
		if (kernels[r]) {
			sql(&fx[r], "%s", gpu_tables);
			for (int i = 0; i < kernels[r]; i++)
				sql(&fx[r],
				    "INSERT INTO gpu_kernels VALUES(100, 0, 7, %d, %d, %d, '_Z4stepv',"
				    " 1, 1, 1, 32, 1, 1, 16, 0, 0)",
				    i, i * 2000000, i * 2000000 + 1000000);
			sql(&fx[r],
			    "INSERT INTO gpu_copies VALUES(100, 0, 7, 900, 0, 4000000, 8388608, 1,"
			    " -1, 0, 'HtoD', 'pageable', 'device')");
			if (r == 1)
				sql(&fx[r],
				    "INSERT INTO gpu_kernels VALUES(100, 0, 7, 999, 0, 2000000,"
				    " '_Z7newpassv', 1, 1, 1, 32, 1, 1, 16, 0, 0)");
		}
		fixture_reopen(&fx[r]);
	}
	build_pair(fx[0].db, fx[1].db, c);
	fixture_close(&fx[0]);
	fixture_close(&fx[1]);
}

TEST(gpu_kernels_compare_by_demangled_name,
     "when both runs ran GPU kernels, each kernel's time is compared by its demangled name")
{
	struct fixture fx[2];
	struct compare c = COMPARE_INIT;
	const int kernels[2] = {40, 10};
	gpu_build(fx, &c, kernels);
	const struct compare_gpu *g = &c.gpu;
	CHECK(compare_gpu_both(g) && g->n == 2);
	/* step() lost 30 ms, newpass() gained 2 ms: step() first. */
	CHECK(g->n == 2 && !strcmp(g->v[0].name, "step()") && !strcmp(g->v[1].name, "newpass()"));
	CHECK(fabs(g->v[0].total_s[0] - 0.040) < 1e-9 && fabs(g->v[0].total_s[1] - 0.010) < 1e-9);
	CHECK(g->v[1].total_s[0] == 0 && g->v[1].count[1] == 1);
	CHECK(fabs(g->kernel_s[1] - 0.012) < 1e-9 && g->copies[0] == 1 &&
	      fabs(g->copy_s[0] - 0.004) < 1e-9);
	char *md = md_text_of(&c), *term = terminal_text(&c);
	CHECK_CONTAINS(md, "## GPU kernels");
	CHECK_CONTAINS(md, "| step() | 40 | 10 | 40.0 ms | 10.0 ms | -30.0 ms |");
	CHECK_CONTAINS(term, "GPU kernel time 40.0 ms → 12.0 ms (-28.0 ms); the kernel that "
			     "changed most: step() (-30.0 ms)");
	free(md);
	free(term);
	compare_release(&c);
}

TEST(gpu_on_one_side_only_is_said, "when only one run ran GPU kernels, compare.md says so")
{
	struct fixture fx[2];
	struct compare c = COMPARE_INIT;
	const int kernels[2] = {5, 0};
	gpu_build(fx, &c, kernels);
	CHECK(c.gpu.present[0] && !c.gpu.present[1] && !compare_gpu_both(&c.gpu));
	char *md = md_text_of(&c), *term = terminal_text(&c);
	CHECK_CONTAINS(md, "Only A ran GPU kernels");
	CHECK(!strstr(term, "GPU kernel time"));
	free(md);
	free(term);
	compare_release(&c);
}

/* A family of runs for side A and one run for B; A's runs in busy[] read a
 * 1-minute load of 6 on 2 CPUs at their start, the others 0.1. */
static void mixed_build(struct compare *c, const int busy[3])
{
	struct fixture fx[4];
	sqlite3 *dbs[4];
	for (int k = 0; k < 4; k++) {
		fixture_open(&fx[k], 1000000000);
		record_meta_int(fx[k].rec, "cpu_rate_hz", 100);
		record_meta(fx[k].rec, "hygiene_start",
			    k < 3 && busy[k] ? "{\"cpus_online\": 2, \"load_1m\": 6.0}"
					     : "{\"cpus_online\": 2, \"load_1m\": 0.1}");
		STACK(&fx[k], k < 3 ? 60 : 10, "cpu", 1, "main", "hot_a");
		fixture_reopen(&fx[k]);
		dbs[k] = fx[k].db;
	}
	sqlite3 *const *const sides[2] = {dbs, dbs + 3};
	const size_t n[2] = {3, 1};
	struct strbuf err = STRBUF_INIT;
	if (compare_build_runs(sides, n, names, c, &err)) {
		fprintf(stderr, "compare_build_runs: %s\n", err.buf);
		exit(2);
	}
	strbuf_release(&err);
	for (int k = 0; k < 4; k++)
		fixture_close(&fx[k]);
}

TEST(family_against_one_run_says_what_its_times_are,
     "a family compared with one run says its times are means and that nothing is tested")
{
	static const int busy[3] = {0, 0, 0};
	struct compare c = COMPARE_INIT;
	mixed_build(&c, busy);
	CHECK(!c.tested && c.run[0].nruns == 3 && c.run[1].nruns == 1);
	char *md = md_text_of(&c), *term = terminal_text(&c);
	CHECK_CONTAINS(term, "note: A is 3 runs and B one: A's times are the mean of its runs");
	CHECK_CONTAINS(md, "**Note:** A is 3 runs and B one");
	CHECK(!strstr(term, "machine:"));
	free(md);
	free(term);
	compare_release(&c);
}

TEST(each_sides_machine_warnings_are_shown,
     "each side's machine warnings are shown with the runs that had them")
{
	static const int busy[3] = {1, 0, 1};
	struct compare c = COMPARE_INIT;
	mixed_build(&c, busy);
	CHECK(json_array_size(c.warnings[0]) == 1 && json_array_size(c.warnings[1]) == 0);
	char *md = md_text_of(&c), *term = terminal_text(&c);
	CHECK_CONTAINS(term, "machine: A, runs 1 and 3 of 3: ");
	CHECK_CONTAINS(md, "**Machine warnings**");
	CHECK_CONTAINS(md, "- A, runs 1 and 3 of 3: ");
	free(md);
	free(term);
	compare_release(&c);
}

TEST(heap_sites_match_by_function_across_lines,
     "heap sites match by function and file when their lines moved, and a site one run does "
     "not list is unknown there, not zero")
{
	json_t *a = json_pack(
	    "{s:{s:{s:f, s:[{s:s, s:s, s:i, s:f, s:f, s:f}, {s:s, s:s, s:i, s:f, s:f, s:f}]}}}",
	    "memory", "heap", "peak_bytes", 300.0, "top_sites", "function", "load", "file",
	    "/src/app.c", "line", 10, "peak_bytes", 200.0, "allocated_bytes", 200.0, "leaked_bytes",
	    0.0, "function", "parse", "file", "/src/app.c", "line", 30, "peak_bytes", 100.0,
	    "allocated_bytes", 900.0, "leaked_bytes", 0.0);
	json_t *b = json_pack(
	    "{s:{s:{s:f, s:[{s:s, s:s, s:i, s:f, s:f, s:f}, {s:s, s:s, s:i, s:f, s:f, s:f}]}}}",
	    "memory", "heap", "peak_bytes", 150.0, "top_sites", "function", "load", "file",
	    "/build2/app.c", "line", 14, "peak_bytes", 50.0, "allocated_bytes", 50.0,
	    "leaked_bytes", 0.0, "function", "cache", "file", "/src/app.c", "line", 3, "peak_bytes",
	    100.0, "allocated_bytes", 100.0, "leaked_bytes", 0.0);
	json_t *m = compare_heap_sites(a, b);
	REQUIRE(json_array_size(m) == 3);
	json_t *first = json_array_get(m, 0);
	/* load: 200 -> 50 (lines 10 and 14): the biggest change of peak. */
	CHECK(!strcmp(json_string_value(json_object_get(first, "function")), "load"));
	CHECK(json_number_value(json_object_get(json_object_get(first, "b"), "peak_bytes")) == 50);
	/* parse and cache are each listed by one run only: null on the other. */
	for (size_t i = 1; i < 3; i++) {
		json_t *e = json_array_get(m, i);
		const char *fn = json_string_value(json_object_get(e, "function"));
		CHECK(json_is_null(json_object_get(e, strcmp(fn, "parse") ? "a" : "b")));
	}
	json_decref(m);
	json_t *none = json_pack("{s:{}}", "memory");
	m = compare_heap_sites(a, none);
	CHECK(json_array_size(m) == 0);
	json_decref(m);
	struct compare c = COMPARE_INIT;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	json_t *reports[2] = {a, b};
	compare_md_write(&c, reports, names, f);
	fclose(f);
	CHECK_CONTAINS(text, "| heap peak | 300 B | 150 B | -150 B |");
	CHECK_CONTAINS(text, "| load | app.c | 200 B | 50 B | -150 B |");
	free(text);
	json_decref(none);
	json_decref(a);
	json_decref(b);
}

CHECK_MAIN()
