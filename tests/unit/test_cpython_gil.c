/* Unit tests of cpython_gil: which threads may have run Python between two
 * reads of a GIL (its last holder and switch count). */
#include "check.h"
#include "symbols/cpython_gil.h"

#define GIL 0x1000
#define TA 0xa000
#define TB 0xb000
#define TC 0xc000

TEST(gil_no_switch, "no hand-over between two reads: only the holder may have run")
{
	struct cpython_gil_seen before = { GIL, TA, 41 }, now = { GIL, TA, 41 };
	uint64_t ran[2];
	REQUIRE(cpython_gil_ran(&before, &now, ran) == 1);
	CHECK(ran[0] == TA);
}

TEST(gil_one_switch, "one hand-over to another thread: the holder before and the holder now")
{
	struct cpython_gil_seen before = { GIL, TA, 41 }, now = { GIL, TB, 42 };
	uint64_t ran[2];
	REQUIRE(cpython_gil_ran(&before, &now, ran) == 2);
	CHECK(ran[0] == TA && ran[1] == TB);
}

TEST(gil_holder_stored_count_not_yet, "a new holder seen before its switch is counted: both may have run")
{
	struct cpython_gil_seen before = { GIL, TA, 41 }, now = { GIL, TC, 41 };
	uint64_t ran[2];
	REQUIRE(cpython_gil_ran(&before, &now, ran) == 2);
	CHECK(ran[0] == TA && ran[1] == TC);
}

TEST(gil_unknown_cases, "two hand-overs, a count moved without a new holder, another GIL or a read missing: any thread may have run")
{
	uint64_t ran[2];
	struct cpython_gil_seen before = { GIL, TA, 41 };
	struct cpython_gil_seen two = { GIL, TB, 43 }, back = { GIL, TA, 43 };
	struct cpython_gil_seen same_holder_moved = { GIL, TA, 42 };
	struct cpython_gil_seen other = { GIL + 64, TA, 41 }, unread = { 0, 0, 0 };
	CHECK(cpython_gil_ran(&before, &two, ran) == -1);
	CHECK(cpython_gil_ran(&before, &back, ran) == -1);
	CHECK(cpython_gil_ran(&before, &same_holder_moved, ran) == -1);
	CHECK(cpython_gil_ran(&before, &other, ran) == -1);
	CHECK(cpython_gil_ran(&before, &unread, ran) == -1);
	CHECK(cpython_gil_ran(&unread, &unread, ran) == -1);
}

TEST(gil_count_wraps, "the switch count wrapping around is one hand-over, not many")
{
	struct cpython_gil_seen before = { GIL, TA, UINT64_MAX }, now = { GIL, TB, 0 };
	uint64_t ran[2];
	CHECK(cpython_gil_ran(&before, &now, ran) == 2);
}

CHECK_MAIN()
