/* test_findings: findings are ranked by what is at stake and shown in JSON. */
#include "check.h"
#include "analysis/findings.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>

static void add(struct findings *fs, const char *title, double pct)
{
	struct finding f = { .title = title, .dimension = "cpu", .location = "app (pid 1)",
			     .evidence = "numbers", .diagnosis = "pattern", .next_step = "do this",
			     .validation = "cpu.sys_s falls", .impact_s = pct / 10,
			     .impact_bytes = -1, .impact_pct = pct };
	findings_add(fs, &f);
}

TEST(ranked_by_impact, "findings are ordered by impact_pct, largest first, whatever order they were added in")
{
	struct findings fs = FINDINGS_INIT;
	add(&fs, "small", 5);
	add(&fs, "big", 80);
	add(&fs, "middle", 30);
	add(&fs, "tiny", 0.5);
	findings_rank(&fs, 0, FINDINGS_SHOWN_MAX);
	REQUIRE(fs.n == 4);
	CHECK_STR_EQ(fs.v[0].title, "big");
	CHECK_STR_EQ(fs.v[1].title, "middle");
	CHECK_STR_EQ(fs.v[2].title, "small");
	CHECK_STR_EQ(fs.v[3].title, "tiny");
	findings_release(&fs);
}

TEST(keeps_at_most_seven, "of ten findings only the seven with the largest impact are kept")
{
	struct findings fs = FINDINGS_INIT;
	char title[32];
	for (int i = 0; i < 10; i++) {
		snprintf(title, sizeof(title), "finding %d", i);
		add(&fs, title, (double)((i * 7) % 10)); /* shuffled impacts 0..9 */
	}
	findings_rank(&fs, 0, FINDINGS_SHOWN_MAX);
	REQUIRE(fs.n == FINDINGS_SHOWN_MAX);
	CHECK_INT_EQ(FINDINGS_SHOWN_MAX, 7);
	for (size_t i = 0; i < fs.n; i++)
		CHECK(fs.v[i].impact_pct >= 3);
	for (size_t i = 1; i < fs.n; i++)
		CHECK(fs.v[i - 1].impact_pct >= fs.v[i].impact_pct);
	findings_release(&fs);
}

TEST(ties_stable, "findings with equal impact come out in the same order every time (by title)")
{
	struct findings a = FINDINGS_INIT, b = FINDINGS_INIT;
	add(&a, "beta", 10);
	add(&a, "alpha", 10);
	add(&b, "alpha", 10);
	add(&b, "beta", 10);
	findings_rank(&a, 0, 7);
	findings_rank(&b, 0, 7);
	CHECK_STR_EQ(a.v[0].title, b.v[0].title);
	CHECK_STR_EQ(a.v[0].title, "alpha");
	findings_release(&a);
	findings_release(&b);
}

TEST(strings_copied, "a finding's strings are copied, and missing ones become empty strings")
{
	struct findings fs = FINDINGS_INIT;
	char title[] = "mutable";
	struct finding f = { .title = title, .impact_s = -1, .impact_bytes = -1, .impact_pct = 1 };
	findings_add(&fs, &f);
	title[0] = 'X';
	CHECK_STR_EQ(fs.v[0].title, "mutable");
	CHECK_STR_EQ(fs.v[0].location, "");
	CHECK_STR_EQ(fs.v[0].next_step, "");
	findings_release(&fs);
	CHECK_INT_EQ(fs.n, 0);
}

TEST(json_keys, "each finding's JSON has its rank, every text field and an impact with its unit and share")
{
	struct findings fs = FINDINGS_INIT;
	add(&fs, "time", 40);
	struct finding m = { .title = "memory", .dimension = "memory", .location = "app",
			     .evidence = "peak 1 GiB", .diagnosis = "d", .next_step = "n",
			     .validation = "memory.peak_rss_bytes falls", .impact_s = -1,
			     .impact_bytes = 1073741824.0, .impact_pct = 60 };
	findings_add(&fs, &m);
	findings_rank(&fs, 0, FINDINGS_SHOWN_MAX);
	json_t *arr = findings_to_json(&fs);
	REQUIRE(json_is_array(arr));
	REQUIRE(json_array_size(arr) == 2);
	static const char *keys[] = { "rank", "id", "title",	"dimension", "location", "evidence",
				      "diagnosis", "next_step", "validation", "impact" };
	for (size_t i = 0; i < 2; i++) {
		json_t *o = json_array_get(arr, i);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!json_object_get(o, keys[k]))
				check_fail(__FILE__, __LINE__, "finding %zu lacks \"%s\"", i, keys[k]);
		CHECK_INT_EQ(json_integer_value(json_object_get(o, "rank")), (long long)i + 1);
	}
	json_t *first = json_array_get(arr, 0), *second = json_array_get(arr, 1);
	CHECK_STR_EQ(json_string_value(json_object_get(first, "title")), "memory");
	json_t *imp = json_object_get(first, "impact");
	CHECK(json_number_value(json_object_get(imp, "bytes")) == 1073741824.0);
	CHECK(json_object_get(imp, "seconds") == NULL);
	CHECK(json_number_value(json_object_get(imp, "share_pct")) == 60);
	imp = json_object_get(second, "impact");
	CHECK(json_number_value(json_object_get(imp, "seconds")) == 4.0);
	CHECK(json_object_get(imp, "bytes") == NULL);
	json_decref(arr);
	findings_release(&fs);
}

TEST(json_outside_text, "a finding whose text holds invalid UTF-8 (a process name, say) still appears in the JSON")
{
	struct findings fs = FINDINGS_INIT;
	struct finding f = { .title = "The target is off the CPU", .dimension = "cpu",
			     .location = "bad\xff\xfename (pid 7)", .evidence = "e", .diagnosis = "d",
			     .next_step = "n", .validation = "v", .impact_s = 1,
			     .impact_bytes = -1, .impact_pct = 50 };
	findings_add(&fs, &f);
	json_t *arr = findings_to_json(&fs);
	CHECK_INT_EQ(json_array_size(arr), 1);
	json_t *o = json_array_get(arr, 0);
	CHECK_CONTAINS(json_string_value(json_object_get(o, "location")), "name (pid 7)");
	json_decref(arr);
	findings_release(&fs);
}

TEST(json_empty, "no findings is an empty JSON array, not null")
{
	struct findings fs = FINDINGS_INIT;
	findings_rank(&fs, 0, FINDINGS_SHOWN_MAX);
	json_t *arr = findings_to_json(&fs);
	CHECK(json_is_array(arr));
	CHECK_INT_EQ(json_array_size(arr), 0);
	json_decref(arr);
}

static void add_at(struct findings *fs, const char *id, const char *title, const char *loc,
		   int blames_code, double s, double bytes, double pct)
{
	struct finding f = { .id = id, .title = title, .dimension = "cpu", .location = loc,
			     .evidence = title, .diagnosis = "d", .next_step = "n",
			     .validation = "v", .impact_s = s, .impact_bytes = bytes,
			     .impact_pct = pct, .blames_code = blames_code };
	findings_add(fs, &f);
}

TEST(one_cause_one_finding, "findings that blame the same function (whatever the line) become one, keeping the larger one's diagnosis and the other's evidence")
{
	struct findings fs = FINDINGS_INIT;
	add_at(&fs, "memory.rss_jump", "RSS jumps", "render.c:new_canvas:30", 1, -1, 1e9, 40);
	add_at(&fs, "cpu.fresh_memory", "new_canvas faults in fresh pages", "render.c:new_canvas:26",
	       1, 5, -1, 55);
	add_at(&fs, "cpu.hotspot", "checksum is hot", "render.c:checksum:41", 1, 2, -1, 20);
	add_at(&fs, "cpu.off_cpu", "off the CPU", "render (pid 4)", 0, 1, -1, 10);
	add_at(&fs, "concurrency.cpu_contention", "queued", "render (pid 4)", 0, 1, -1, 9);
	findings_merge(&fs);
	findings_rank(&fs, 0, FINDINGS_SHOWN_MAX);
	REQUIRE(fs.n == 4); /* a process is not a cause: those two stay apart */
	CHECK_STR_EQ(fs.v[0].id, "cpu.fresh_memory");
	CHECK_CONTAINS(fs.v[0].evidence, "RSS jumps");
	CHECK(fs.v[0].impact_bytes == 1e9);
	CHECK(fs.v[0].impact_s == 5);
	json_t *arr = findings_to_json(&fs);
	json_t *also = json_object_get(json_array_get(arr, 0), "also");
	CHECK_INT_EQ(json_array_size(also), 1);
	CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(also, 0), "id")),
		     "memory.rss_jump");
	CHECK(json_object_get(json_array_get(arr, 1), "also") == NULL);
	json_decref(arr);
	findings_release(&fs);
}

TEST(stakes_within_the_run, "the seconds at stake of all findings together never exceed the run's wall time: overlapping ones are shared out in proportion")
{
	struct findings fs = FINDINGS_INIT;
	add_at(&fs, "cpu.hotspot", "hot", "a.c:f", 1, 9, -1, 90);
	add_at(&fs, "cpu.off_cpu", "waits", "app (pid 1)", 0, 7, -1, 70);
	add_at(&fs, "memory.peak_site", "peak", "a.c:g", 1, -1, 1e6, 50);
	findings_rank(&fs, 10, FINDINGS_SHOWN_MAX);
	REQUIRE(fs.n == 3);
	double sum_s = 0;
	for (size_t i = 0; i < fs.n; i++)
		sum_s += fs.v[i].impact_s > 0 ? fs.v[i].impact_s : 0;
	CHECK(fabs(sum_s - 10) < 1e-9);
	CHECK_STR_EQ(fs.v[0].id, "cpu.hotspot");
	CHECK(fabs(fs.v[0].impact_s - 10 * 9.0 / 16) < 1e-9 && fs.v[0].impact_unscaled_s == 9);
	CHECK(fabs(fs.v[0].impact_pct - 100 * 9.0 / 16) < 1e-9);
	CHECK_STR_EQ(fs.v[1].id, "memory.peak_site"); /* bytes: not scaled */
	CHECK(fs.v[1].impact_pct == 50);
	json_t *arr = findings_to_json(&fs);
	CHECK(json_number_value(json_object_get(json_object_get(json_array_get(arr, 0), "impact"),
						"unscaled_seconds")) == 9);
	json_decref(arr);
	findings_release(&fs);
	add_at(&fs, "cpu.hotspot", "hot", "a.c:f", 1, 4, -1, 40);
	findings_rank(&fs, 10, FINDINGS_SHOWN_MAX);
	CHECK(fs.v[0].impact_s == 4 && fs.v[0].impact_unscaled_s == 0); /* fits: unchanged */
	findings_release(&fs);
}

TEST(known_mid_run, "a finding an interim update named (same id, or one it absorbed, at the same function whatever the line) is marked with that update's time and phase; others are not")
{
	json_t *findings = json_loads(
	    "[{\"id\": \"memory.rss_jump\", \"location\": \"/src/app.py:Index.build:170\"},"
	    " {\"id\": \"cpu.hotspot\", \"location\": \"app.py:Enrich.score:12\","
	    "  \"also\": [{\"id\": \"cpu.fresh_memory\"}]},"
	    " {\"id\": \"cpu.off_cpu\", \"location\": \"python3 (pid 4)\"}]",
	    0, NULL);
	json_t *notes = json_loads(
	    "[{\"t_s\": 1.5, \"probe\": \"session\", \"text\": \"[cpu.off_cpu] python3 (pid 4);\"},"
	    " {\"t_s\": 2.0, \"probe\": \"interim\","
	    "  \"text\": \"after phase load at data at 2.000 s: [cpu.fresh_memory] /x/app.py:Enrich.score:9;\"},"
	    " {\"t_s\": 4.0, \"probe\": \"interim\","
	    "  \"text\": \"after phase index at 4.000 s: [memory.rss_jump] app.py:Index.build:171;"
	    " [cpu.off_cpu] python3 (pid 5);\"}]",
	    0, NULL);
	CHECK(findings && notes);
	findings_mark_known(findings, notes);
	json_t *jump = json_object_get(json_array_get(findings, 0), "known_mid_run");
	json_t *hot = json_object_get(json_array_get(findings, 1), "known_mid_run");
	CHECK(jump && json_real_value(json_object_get(jump, "at_s")) == 4.0);
	CHECK_STR_EQ(json_string_value(json_object_get(jump, "after_phase")), "index");
	CHECK(hot && json_real_value(json_object_get(hot, "at_s")) == 2.0);
	CHECK_STR_EQ(json_string_value(json_object_get(hot, "after_phase")), "load at data");
	/* Another process's off-CPU finding, and a session note, are not this one. */
	CHECK(!json_object_get(json_array_get(findings, 2), "known_mid_run"));
	json_decref(findings);
	json_decref(notes);
}

CHECK_MAIN()
