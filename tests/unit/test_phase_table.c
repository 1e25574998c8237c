/* test_phase_table: markers in time order become phases with their parents. */
#include "check.h"
#include "analysis/phase_table.h"

#include <string.h>

#define S(x) ((int64_t)((x) * 1e9))

static void add(struct phase_table *t, double at_s, enum phase_event ev, const char *name,
		double duration_s)
{
	struct phase_marker m = { .event = ev, .duration_s = duration_s, .stamp_ns = -1 };
	strncpy(m.name, name, sizeof(m.name) - 1);
	phase_table_add(t, S(at_s), &m, -1);
}

TEST(nested_phases, "a start and the end of the same name make one phase, and a phase inside another names it as its parent")
{
	struct phase_table t = PHASE_TABLE_INIT;
	add(&t, 0.5, PHASE_START, "pipeline", -1);
	add(&t, 1.0, PHASE_START, "fetch", -1);
	add(&t, 3.0, PHASE_END, "fetch", 1.98);
	add(&t, 3.0, PHASE_START, "enrich", -1);
	add(&t, 4.5, PHASE_END, "enrich", -1);
	add(&t, 5.0, PHASE_END, "pipeline", -1);
	phase_table_finish(&t, S(6));
	CHECK_INT_EQ(t.n, 3);
	CHECK_STR_EQ(t.v[0].name, "pipeline");
	CHECK(t.v[0].parent == -1 && t.v[0].depth == 0);
	CHECK_STR_EQ(t.v[1].name, "fetch");
	CHECK(t.v[1].start_ns == S(1) && t.v[1].end_ns == S(3) && t.v[1].logged_s == 1.98);
	CHECK(t.v[1].parent == 0 && t.v[1].depth == 1);
	CHECK_STR_EQ(t.v[2].name, "enrich");
	CHECK(t.v[2].parent == 0 && t.v[2].ended_by == PHASE_ENDED_MARKER && t.v[2].logged_s < 0);
	phase_table_release(&t);
}

TEST(logged_durations, "an end that states its duration without a start makes the phase that ended then; one without a duration is counted, not guessed")
{
	struct phase_table t = PHASE_TABLE_INIT;
	add(&t, 2.0, PHASE_END, "load", 1.5);
	add(&t, 2.5, PHASE_END, "orphan", -1);
	add(&t, 3.0, PHASE_END, "early", 9.0); /* longer than the run so far: starts at 0 */
	phase_table_finish(&t, S(4));
	CHECK_INT_EQ(t.n, 2);
	CHECK_STR_EQ(t.v[0].name, "early");
	CHECK(t.v[0].start_ns == 0 && t.v[0].ended_by == PHASE_ENDED_LOGGED);
	CHECK_STR_EQ(t.v[1].name, "load");
	CHECK(t.v[1].start_ns == S(0.5) && t.v[1].end_ns == S(2));
	CHECK_INT_EQ(t.unmatched_ends, 1);
	phase_table_release(&t);
}

TEST(marks, "a mark ends the previous mark's phase, an end of its name closes it, and what is open at the end closes there")
{
	struct phase_table t = PHASE_TABLE_INIT;
	add(&t, 0.0, PHASE_MARK, "load", -1);
	add(&t, 1.0, PHASE_END, "load", 1.0); /* "load took 1.0s" after "=== load ===" */
	add(&t, 1.0, PHASE_MARK, "train", -1);
	add(&t, 2.0, PHASE_START, "epoch", -1);
	add(&t, 7.0, PHASE_MARK, "eval", -1);
	phase_table_finish(&t, S(9));
	CHECK_INT_EQ(t.n, 4);
	CHECK(t.v[0].end_ns == S(1) && t.v[0].ended_by == PHASE_ENDED_MARKER);
	CHECK_STR_EQ(t.v[1].name, "train");
	CHECK(t.v[1].end_ns == S(7) && t.v[1].ended_by == PHASE_ENDED_NEXT_MARK);
	CHECK_STR_EQ(t.v[2].name, "epoch");
	CHECK(t.v[2].end_ns == S(9) && t.v[2].ended_by == PHASE_ENDED_RUN_END);
	CHECK_STR_EQ(t.v[3].name, "eval");
	CHECK(t.v[3].end_ns == S(9) && t.v[3].parent == 2); /* epoch never ended */
	CHECK_STR_EQ(phase_ended_by_name(PHASE_ENDED_NEXT_MARK), "next mark");
	phase_table_release(&t);
}

TEST(bounded_table, "a program that logs a million phases keeps the first PHASE_TABLE_MAX and counts the rest")
{
	struct phase_table t = PHASE_TABLE_INIT;
	for (int i = 0; i < PHASE_TABLE_MAX + 500; i++)
		add(&t, i * 0.001, PHASE_END, "item", 0.0005);
	phase_table_finish(&t, S(100));
	CHECK_INT_EQ(t.n, PHASE_TABLE_MAX);
	CHECK_INT_EQ(t.dropped, 500);
	phase_table_release(&t);
}

TEST(prefix_names, "an end names its phase by its first words: 'crawl done' ends 'crawl of 400 sources', not 'crawler'")
{
	struct phase_table t = PHASE_TABLE_INIT;
	add(&t, 0.0, PHASE_START, "crawler", -1);
	add(&t, 1.0, PHASE_START, "crawl of 400 sources", -1);
	add(&t, 2.0, PHASE_END, "crawl", 1.0);
	phase_table_finish(&t, S(3));
	CHECK_INT_EQ(t.n, 2);
	CHECK_STR_EQ(t.v[1].name, "crawl of 400 sources");
	CHECK(t.v[1].end_ns == S(2) && t.v[1].ended_by == PHASE_ENDED_MARKER);
	CHECK(t.v[0].end_ns == S(3) && t.v[0].ended_by == PHASE_ENDED_RUN_END);
	phase_table_release(&t);
}

CHECK_MAIN()
