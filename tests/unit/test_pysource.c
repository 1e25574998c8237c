/* test_pysource: qualified names of Python functions from their source. */
#include "check.h"
#include "symbols/pysource.h"
#include "util/strbuf.h"

static const char SRC[] =
	"import functools\n"			     /* 1 */
	"\n"					     /* 2 */
	"class Matcher:\n"			     /* 3 */
	"    def __init__(self, catalogue):\n"	     /* 4 */
	"        self.catalogue = catalogue\n"	     /* 5 */
	"\n"					     /* 6 */
	"    @staticmethod\n"			     /* 7 */
	"    @functools.lru_cache(\n"		     /* 8 */
	"        maxsize=None)\n"		     /* 9 */
	"    def _normalize(title):\n"		     /* 10 */
	"        return title.lower()\n"	     /* 11 */
	"\n"					     /* 12 */
	"    # a comment at column 0 does not end the class\n" /* 13 */
	"# neither does this one\n"		     /* 14 */
	"    async def fetch(self):\n"		     /* 15 */
	"        def inner(x):\n"		     /* 16 */
	"            return x\n"		     /* 17 */
	"        return inner\n"		     /* 18 */
	"\n"					     /* 19 */
	"    class Cache:\n"			     /* 20 */
	"\tdef get(self):\n"			     /* 21: a tab is 8 columns */
	"\t    pass\n"				     /* 22 */
	"\n"					     /* 23 */
	"if True:\n"				     /* 24 */
	"    def helper():\n"			     /* 25 */
	"        pass\n"			     /* 26 */
	"\n"					     /* 27 */
	"def main():\n"				     /* 28 */
	"    pass\n";				     /* 29 */

static void qualname_is(int first, const char *name, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	int r = pysource_qualname(SRC, sizeof(SRC) - 1, first, name, &sb);
	if (want) {
		CHECK_INT_EQ(r, 0);
		CHECK_STR_EQ(strbuf_str(&sb), want);
	} else {
		CHECK_INT_EQ(r, -1);
		CHECK_INT_EQ((int)sb.len, 0);
	}
	strbuf_release(&sb);
}

TEST(methods, "a method is named with its class, from its def or its first decorator, across decorators whose arguments span lines")
{
	qualname_is(4, "__init__", "Matcher.__init__");
	qualname_is(7, "_normalize", "Matcher._normalize");
	qualname_is(15, "fetch", "Matcher.fetch");
}

TEST(nesting, "a nested function is outer.<locals>.inner, a nested class's method Outer.Inner.method; comments and blank lines end no block")
{
	qualname_is(16, "inner", "Matcher.fetch.<locals>.inner");
	qualname_is(21, "get", "Matcher.Cache.get");
}

TEST(module_level, "a module-level function keeps its name, inside an if block too")
{
	qualname_is(28, "main", "main");
	qualname_is(25, "helper", "helper");
}

TEST(refused, "no name when the def is not where the code says, for lambdas and comprehensions, and past the text")
{
	qualname_is(28, "other", NULL);		/* another function's def */
	qualname_is(3, "Matcher", NULL);	/* a class body is not a def */
	qualname_is(11, "<lambda>", NULL);
	qualname_is(11, "<listcomp>", NULL);
	qualname_is(500, "main", NULL);
	qualname_is(0, "main", NULL);
	struct strbuf sb = STRBUF_INIT;
	CHECK_INT_EQ(pysource_qualname(NULL, 0, 1, "main", &sb), -1);
	CHECK_INT_EQ(pysource_qualname("def main():", 11, 1, "main", &sb), 0);
	CHECK_STR_EQ(strbuf_str(&sb), "main");
	strbuf_release(&sb);
}

TEST(reading, "a source file is read as the process sees it, and a FIFO or a missing file is refused")
{
	struct strbuf sb = STRBUF_INIT;
	char dir[] = "/tmp/sonde-pysource-XXXXXX";
	REQUIRE(mkdtemp(dir));
	char path[256], fifo[256];
	snprintf(path, sizeof(path), "%s/m.py", dir);
	snprintf(fifo, sizeof(fifo), "%s/f.py", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fputs("class A:\n    def b(self):\n        pass\n", f);
	fclose(f);
	REQUIRE(mkfifo(fifo, 0600) == 0);
	CHECK_INT_EQ(pysource_read(getpid(), path, &sb), 0);
	CHECK(strstr(strbuf_str(&sb), "def b") != NULL);
	strbuf_reset(&sb);
	CHECK(pysource_read(getpid(), fifo, &sb) < 0);
	CHECK(pysource_read(getpid(), "/nonexistent/x.py", &sb) < 0);
	CHECK(pysource_read(getpid(), "<frozen importlib._bootstrap>", &sb) < 0);
	strbuf_release(&sb);
	unlink(path);
	unlink(fifo);
	rmdir(dir);
}

CHECK_MAIN()
