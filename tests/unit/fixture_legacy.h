/* fixture_legacy: the harness stacks_fixture.h used to carry, kept only for
 * the tests not yet moved to check.h (test_gpu_analysis.c): TEST(sentence, fn)
 * run one by one from main, CHECK(cond), fixture_done(). Remove it with its
 * last user; new tests use check.h. */
#ifndef SONDE_TEST_FIXTURE_LEGACY_H
#define SONDE_TEST_FIXTURE_LEGACY_H

#include <stdio.h>

static int fixture_passed, fixture_failed;

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "  %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
			fixture_ok = 0;                                                    \
		}                                                                          \
	} while (0)

/* Runs one test function, named by the sentence it checks. */
#define TEST(sentence, fn)                                                                 \
	do {                                                                               \
		fixture_ok = 1;                                                            \
		fn();                                                                      \
		printf("%s: %s\n", fixture_ok ? "ok" : "FAILED", sentence);                \
		if (fixture_ok)                                                            \
			fixture_passed++;                                                  \
		else                                                                       \
			fixture_failed++;                                                  \
	} while (0)

static int fixture_ok;

static inline int fixture_done(void)
{
	printf("%d passed, %d failed\n", fixture_passed, fixture_failed);
	return fixture_failed ? 1 : 0;
}

#endif
