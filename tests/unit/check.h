/* check: the unit tests' harness, header only, no dependencies.
 *
 * A test is named by the sentence it checks:
 *
 *     TEST(long_line_truncated, "a line longer than the cap is stored truncated")
 *     {
 *             CHECK(len == OUTPUT_LINE_MAX);
 *     }
 *     CHECK_MAIN()
 *
 * CHECK records file:line and the failed expression and goes on; REQUIRE also
 * leaves the test (use it before dereferencing). CHECK_NAMED(sentence, cond)
 * is CHECK for a test made of many small claims: a failure prints the claim's
 * own sentence (a string, built at run time if need be) beside the expression.
 * SKIP(reason) leaves the test as skipped, with the reason printed: for what
 * this machine cannot do.
 * main prints each failing test's sentence, then exactly "N passed, M failed",
 * and exits non-zero when M > 0. Tests run in file order. CHECK_ONLY=words runs
 * the tests whose sentence holds them; CHECK_VERBOSE=1 names the passing ones. */
#ifndef SONDE_TEST_CHECK_H
#define SONDE_TEST_CHECK_H

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK_TESTS_MAX 256

struct check_test {
	const char *name;
	const char *file;
	void (*fn)(void);
	int failed;
};

struct check_state {
	struct check_test tests[CHECK_TESTS_MAX];
	size_t n;
	int failures; /* in the current test */
	int skipped;  /* the current test */
	const struct check_test *current;
};

static struct check_state check_state;

__attribute__((unused)) static void check_register(const char *name, const char *file,
						   void (*fn)(void))
{
	if (check_state.n == CHECK_TESTS_MAX) {
		fprintf(stderr, "check.h: more than %d tests in %s\n", CHECK_TESTS_MAX, file);
		abort();
	}
	check_state.tests[check_state.n++] = (struct check_test){ name, file, fn, 0 };
}

__attribute__((unused)) static void check_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

__attribute__((unused)) static void check_fail(const char *file, int line, const char *fmt, ...)
{
	fflush(stderr);
	if (!check_state.failures++)
		printf("FAIL: %s\n", check_state.current ? check_state.current->name : "?");
	printf("  %s:%d: ", file, line);
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* fn only names the function (test_<fn>); the sentence is the test's name. */
#define TEST(fn, sentence)                                                                    \
	static void test_##fn(void);                                                          \
	__attribute__((constructor)) static void test_##fn##_register(void)                   \
	{                                                                                     \
		check_register(sentence, __FILE__, test_##fn);                                \
	}                                                                                     \
	static void test_##fn(void)

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond))                                                                  \
			check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                   \
	} while (0)

#define REQUIRE(cond)                                                                         \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			check_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond);                 \
			return;                                                               \
		}                                                                             \
	} while (0)

#define CHECK_NAMED(sentence, cond)                                                           \
	do {                                                                                  \
		if (!(cond))                                                                  \
			check_fail(__FILE__, __LINE__, "%s: CHECK(%s)", (sentence), #cond);   \
	} while (0)

#define CHECK_INT_EQ(a, b)                                                                    \
	do {                                                                                  \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);               \
		if (check_a_ != check_b_)                                                     \
			check_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b,      \
				   check_a_, check_b_);                                       \
	} while (0)

#define CHECK_STR_EQ(a, b)                                                                    \
	do {                                                                                  \
		const char *check_a_ = (a), *check_b_ = (b);                                  \
		if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_))                     \
			check_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,  \
				   check_a_ ? check_a_ : "(null)",                            \
				   check_b_ ? check_b_ : "(null)");                           \
	} while (0)

/* haystack holds needle (both NUL-terminated). */
#define CHECK_CONTAINS(hay, needle)                                                           \
	do {                                                                                  \
		const char *check_h_ = (hay), *check_n_ = (needle);                           \
		if (!check_h_ || !strstr(check_h_, check_n_))                                 \
			check_fail(__FILE__, __LINE__, "%s holds \"%s\": it is \"%.300s\"",   \
				   #hay, check_n_, check_h_ ? check_h_ : "(null)");           \
	} while (0)

#define CHECK_NOT_CONTAINS(hay, needle)                                                       \
	do {                                                                                  \
		const char *check_h_ = (hay), *check_n_ = (needle);                           \
		if (check_h_ && strstr(check_h_, check_n_))                                   \
			check_fail(__FILE__, __LINE__, "%s lacks \"%s\": it is \"%.300s\"",   \
				   #hay, check_n_, check_h_);                                 \
	} while (0)

#define SKIP(reason)                                                                          \
	do {                                                                                  \
		printf("skip: %s (%s)\n", check_state.current->name, reason);                 \
		check_state.skipped = 1;                                                      \
		return;                                                                       \
	} while (0)

/* A fresh private directory under $TMPDIR (or /tmp); the caller owns the
 * returned string and removes the tree with check_rmtree(). NULL on error. */
__attribute__((unused)) static char *check_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/sonde-unit-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(path)) {
		check_fail(__FILE__, __LINE__, "mkdtemp(%s): %s", path, strerror(errno));
		return NULL;
	}
	return strdup(path);
}

static int check_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) ? -1 : 0;
}

/* rm -rf dir, then frees it. */
__attribute__((unused)) static void check_rmtree(char *dir)
{
	if (!dir)
		return;
	nftw(dir, check_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

__attribute__((unused)) static int check_main(void)
{
	int passed = 0, failed = 0, skipped = 0;
	const char *only = getenv("CHECK_ONLY"); /* a substring of the sentences to run */
	int verbose = getenv("CHECK_VERBOSE") != NULL; /* name every test that passes */
	setvbuf(stdout, NULL, _IOLBF, 0); /* keep order with what the code under test logs */
	for (size_t i = 0; i < check_state.n; i++) {
		struct check_test *t = &check_state.tests[i];
		if (only && !strstr(t->name, only))
			continue;
		check_state.current = t;
		check_state.failures = 0;
		check_state.skipped = 0;
		t->fn();
		fflush(stdout);
		if (check_state.failures) {
			t->failed = 1;
			failed++;
		} else if (check_state.skipped) {
			skipped++;
		} else {
			passed++;
			if (verbose)
				printf("ok: %s\n", t->name);
		}
	}
	check_state.current = NULL;
	if (failed) {
		printf("\nfailed:\n");
		for (size_t i = 0; i < check_state.n; i++)
			if (check_state.tests[i].failed)
				printf("  %s\n", check_state.tests[i].name);
	}
	if (skipped)
		printf("%d skipped\n", skipped);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#define CHECK_MAIN()                                                                          \
	int main(void)                                                                        \
	{                                                                                     \
		return check_main();                                                          \
	}

#endif
