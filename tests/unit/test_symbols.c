/* Unit tests for src/symbols: the /proc/PID/maps parser and mapping updates,
 * and the symbolizer on this test binary itself (function, file, line,
 * inlined frames), unknown modules and perf-PID.map JIT symbols. */
#include "check.h"
#include "symbols/maps.h"
#include "symbols/symbolize.h"
#include "util/demangle.h"
#include "util/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char sample_maps[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234   /usr/bin/prog\n"
	"55d0c0a02000-55d0c0a05000 r-xp 00002000 08:01 1234   /usr/bin/prog\n"
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
	"7f1000000000-7f1000200000 r-xp 00028000 08:01 99     /usr/lib/libc.so.6\n"
	"7f2000000000-7f2000001000 rwxp 00000000 00:00 0\n"
	"7f3000000000-7f3000001000 r-xp 00000000 08:01 77     /tmp/old lib.so (deleted)\n"
	"this line is not a mapping\n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0      [vdso]";

TEST(maps_parser, "the /proc/PID/maps parser keeps executable mappings and finds addresses")
{
	struct maps m = MAPS_INIT;
	size_t kept = maps_parse(&m, sample_maps, strlen(sample_maps));
	CHECK_NAMED("the parser keeps only executable mappings", kept == 5 && m.n == 5);
	const struct map_entry *e = maps_find(&m, 0x55d0c0a03000);
	CHECK_NAMED("an address in the program's text finds its mapping",
		    e && !strcmp(e->path, "/usr/bin/prog") && e->pgoff == 0x2000);
	CHECK_NAMED("an address in a data mapping finds nothing", !maps_find(&m, 0x7f0000000010));
	e = maps_find(&m, 0x7f2000000010);
	CHECK_NAMED("anonymous executable memory has an empty path", e && e->path[0] == '\0');
	e = maps_find(&m, 0x7f3000000010);
	CHECK_NAMED("a deleted file keeps its name without the (deleted) suffix",
		    e && !strcmp(e->path, "/tmp/old lib.so"));
	e = maps_find(&m, 0x7ffd00000100);
	CHECK_NAMED("the last line is parsed without a newline", e && !strcmp(e->path, "[vdso]"));
	CHECK_NAMED("the end of a mapping is exclusive", !maps_find(&m, 0x55d0c0a05000));
	maps_release(&m);
}

TEST(maps_random_text, "random map text parses into sorted, disjoint mappings")
{
	/* Random lines built from map-like pieces; ASan checks every read. */
	static const char *pieces[] = { "7f00-7f10", " ", "r-xp", "rw-p", "00001000", "08:01",
					"1234", "/lib/x.so", "\n", "-", "(deleted)", "ffffffffffffffff",
					"", "[vdso]", "zz" };
	srand(7);
	size_t total = 0;
	for (int round = 0; round < 2000; round++) {
		char text[512];
		size_t len = 0;
		int n = rand() % 24;
		for (int i = 0; i < n; i++) {
			const char *piece = pieces[rand() % (int)(sizeof(pieces) / sizeof(pieces[0]))];
			size_t pl = strlen(piece);
			if (len + pl >= sizeof(text))
				break;
			memcpy(text + len, piece, pl);
			len += pl;
		}
		char *exact = malloc(len ? len : 1);
		memcpy(exact, text, len);
		struct maps m = MAPS_INIT;
		total += maps_parse(&m, exact, len);
		for (size_t i = 0; i + 1 < m.n; i++)
			if (m.v[i].end > m.v[i + 1].start || m.v[i].start >= m.v[i].end)
				total = (size_t)-1;
		maps_release(&m);
		free(exact);
	}
	CHECK_NAMED("random map text parses into sorted, disjoint mappings", total != (size_t)-1);
}

/* Random mmaps over 64 pages, against a page-by-page model of what must be
 * found where (path and file offset). */
TEST(maps_insert_model, "random mmaps over each other find the latest mapping, as a model says")
{
	enum { PAGES = 64, PAGE = 0x1000 };
	int model_id[PAGES];
	uint64_t model_off[PAGES];
	for (int i = 0; i < PAGES; i++)
		model_id[i] = -1;
	struct maps m = MAPS_INIT;
	srand(99);
	int ok = 1;
	for (int round = 0; round < 3000 && ok; round++) {
		int a = rand() % PAGES, b = a + 1 + rand() % (PAGES - a);
		int id = rand() % 5;
		uint64_t pgoff = (uint64_t)(rand() % 16) * PAGE;
		char path[16];
		snprintf(path, sizeof(path), "/f%d", id);
		maps_insert(&m, (uint64_t)a * PAGE, (uint64_t)b * PAGE, pgoff, path);
		for (int i = a; i < b; i++) {
			model_id[i] = id;
			model_off[i] = pgoff + (uint64_t)(i - a) * PAGE;
		}
		for (int i = 0; i < PAGES; i++) {
			const struct map_entry *e = maps_find(&m, (uint64_t)i * PAGE + 8);
			if (model_id[i] < 0) {
				ok &= e == NULL;
				continue;
			}
			snprintf(path, sizeof(path), "/f%d", model_id[i]);
			ok &= e && !strcmp(e->path, path) &&
			      e->pgoff + ((uint64_t)i * PAGE - e->start) == model_off[i];
		}
		for (size_t i = 0; i + 1 < m.n; i++)
			ok &= m.v[i].end <= m.v[i + 1].start && m.v[i].start < m.v[i].end;
	}
	CHECK_NAMED("random mmaps over each other always find the latest mapping and offset", ok);
	maps_release(&m);
}

TEST(maps_insert, "a new mapping splits or replaces the ones under it")
{
	struct maps m = MAPS_INIT;
	maps_insert(&m, 0x1000, 0x5000, 0, "/a");
	maps_insert(&m, 0x2000, 0x3000, 0x10000, "/b");
	CHECK_NAMED("a mapping inside another splits it in three", m.n == 3);
	const struct map_entry *head = maps_find(&m, 0x1800), *mid = maps_find(&m, 0x2800),
			       *tail = maps_find(&m, 0x4000);
	CHECK_NAMED("the head of a split mapping keeps its offset",
		    head && !strcmp(head->path, "/a") && head->end == 0x2000 && head->pgoff == 0);
	CHECK_NAMED("the new mapping wins where it lies", mid && !strcmp(mid->path, "/b"));
	CHECK_NAMED("the tail of a split mapping gets its offset moved",
		    tail && !strcmp(tail->path, "/a") && tail->start == 0x3000 &&
			tail->pgoff == 0x2000);
	maps_insert(&m, 0x0, 0x10000, 0, "/c");
	CHECK_NAMED("a mapping over everything replaces everything",
		    m.n == 1 && !strcmp(maps_find(&m, 0x2800)->path, "/c"));
	maps_clear(&m);
	CHECK_NAMED("clear empties the maps", m.n == 0 && !maps_find(&m, 0x2800));
	maps_release(&m);
}

__attribute__((noinline)) int symbolize_me(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) void *where_am_i(void)
{
	return __builtin_return_address(0);
}

static inline __attribute__((always_inline)) void *inlined_helper(void)
{
	return where_am_i();
}

__attribute__((noinline)) void *outer_function(void)
{
	void *p = inlined_helper();
	__asm__ volatile("" ::: "memory"); /* no tail call: the return address stays here */
	return p;
}

static inline __attribute__((always_inline)) void *inlined_inner(void)
{
	return where_am_i();
}

static inline __attribute__((always_inline)) void *inlined_middle(void)
{
	void *p = inlined_inner();
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *outer_of_two(void)
{
	void *p = inlined_middle();
	__asm__ volatile("" ::: "memory");
	return p;
}

/* The line of this file that holds text (0 when none): where a call is. */
static int line_of(const char *text)
{
	FILE *f = fopen(__FILE__, "r");
	char buf[256];
	int line = 0, at = 0;
	while (f && !at && fgets(buf, sizeof(buf), f)) {
		line++;
		if (strstr(buf, text))
			at = line;
	}
	if (f)
		fclose(f);
	return at;
}

/* (module id, file offset) of an address of this process. */
static int locate(struct symbolizer *s, const struct maps *m, uintptr_t addr, int *id,
		  uint64_t *off)
{
	const struct map_entry *e = maps_find(m, addr);
	if (!e || e->path[0] != '/')
		return -1;
	*id = symbolizer_module(s, e->path, getpid());
	*off = addr - e->start + e->pgoff;
	return *id >= 0 ? 0 : -1;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);
	return s && a >= b && !strcmp(s + a - b, suffix);
}

TEST(symbolizer_self, "this binary's functions symbolize with file, line and inlined frames")
{
	struct maps m = MAPS_INIT;
	CHECK_NAMED("this process's maps can be read", maps_read_pid(&m, getpid()) > 0);
	struct symbolizer *s = symbolizer_new();
	int id;
	uint64_t off;
	struct sym_frame f[SYMBOLIZER_MAX_INLINE + 1];
	if (!locate(s, &m, (uintptr_t)&symbolize_me + 1, &id, &off)) {
		size_t n = symbolizer_lookup(s, id, off, f, SYMBOLIZER_MAX_INLINE + 1);
		CHECK_NAMED("a function of this binary symbolizes to its name",
			    n >= 1 && !strcmp(f[n - 1].function, "symbolize_me"));
		CHECK_NAMED("its file and line come from DWARF",
			    ends_with(f[n - 1].file, "test_symbols.c") && f[n - 1].line > 0);
		int id2;
		uint64_t off2;
		locate(s, &m, (uintptr_t)&symbolize_me, &id2, &off2);
		CHECK_NAMED("the same file is interned once", id2 == id);
	} else {
		CHECK_NAMED("symbolize_me lies in a file mapping", 0);
	}
	uintptr_t ret = (uintptr_t)outer_function();
	if (!locate(s, &m, ret - 1, &id, &off)) {
		size_t n = symbolizer_lookup(s, id, off, f, SYMBOLIZER_MAX_INLINE + 1);
		CHECK_NAMED("an inlined call yields the inlined function first, then its caller",
			    n == 2 && f[0].inlined && !strcmp(f[0].function, "inlined_helper") &&
				!f[1].inlined && !strcmp(f[1].function, "outer_function"));
		CHECK_NAMED("the caller's frame points at the line of the inlined call",
			    n == 2 && ends_with(f[1].file, "test_symbols.c") && f[1].line > 0 &&
				f[1].line != f[0].line);
	} else {
		CHECK_NAMED("outer_function lies in a file mapping", 0);
	}
	ret = (uintptr_t)outer_of_two();
	if (!locate(s, &m, ret - 1, &id, &off)) {
		size_t n = symbolizer_lookup(s, id, off, f, SYMBOLIZER_MAX_INLINE + 1);
		CHECK_NAMED("a call inlined into an inlined call names both, innermost first, "
			    "then the function",
			    n == 3 && f[0].inlined && !strcmp(f[0].function, "inlined_inner") &&
				f[1].inlined && !strcmp(f[1].function, "inlined_middle") &&
				!f[2].inlined && !strcmp(f[2].function, "outer_of_two"));
		/* __FILE__ may be another spelling of the path than DWARF's. */
		int middle_call = line_of("void *p = inlined_inner();");
		int outer_call = line_of("void *p = inlined_middle();");
		CHECK_NAMED("each frame is at its own line: the middle one where it calls the "
			    "inner one, the function where it calls the middle one",
			    n == 3 && middle_call > 0 && f[1].line == middle_call &&
				f[2].line == outer_call);
	} else {
		CHECK_NAMED("outer_of_two lies in a file mapping", 0);
	}
	symbolizer_free(s);
	maps_release(&m);
}

TEST(symbolizer_unknown, "an unreadable module or kernel address still gets a name")
{
	struct symbolizer *s = symbolizer_new();
	int id = symbolizer_module(s, "/nonexistent/libgone.so", 0);
	struct sym_frame f[4];
	size_t n = symbolizer_lookup(s, id, 0x1234, f, 4);
	CHECK_NAMED("a file that cannot be read still gets an id", id >= 0);
	CHECK_NAMED("an unknown frame reads module+0xoffset",
		    n == 1 && !strcmp(f[0].function, "libgone.so+0x1234"));
	CHECK_NAMED("the module path is kept",
		    !strcmp(symbolizer_module_path(s, id), "/nonexistent/libgone.so"));
	const char *module;
	symbolizer_kernel(s, 0, f, &module);
	CHECK_NAMED("a kernel address below every symbol is kept as [kernel]+0x...",
		    !strncmp(f[0].function, "[kernel]+0x", 11));
	symbolizer_free(s);
}

TEST(symbolizer_jit, "JIT addresses are named from /tmp/perf-PID.map")
{
	char path[64];
	pid_t pid = getpid();
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	FILE *fp = fopen(path, "w");
	if (!fp) {
		CHECK_NAMED("a perf map can be written in /tmp", 0);
		return;
	}
	fprintf(fp, "7f0000001000 100 jitted_add\n7f0000002000 0x80 LazyCompile:*fib app.js:3\n"
		    "garbage line\n");
	fclose(fp);
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f;
	const char *module;
	symbolizer_jit(s, pid, 0x7f0000001010, &f, &module);
	CHECK_NAMED("a JIT address is named from /tmp/perf-PID.map",
		    !strcmp(f.function, "jitted_add"));
	CHECK_NAMED("the perf map is the JIT frame's module", !strcmp(module, path));
	symbolizer_jit(s, pid, 0x7f0000002040, &f, &module);
	CHECK_NAMED("JIT names keep their spaces",
		    !strcmp(f.function, "LazyCompile:*fib app.js:3"));
	symbolizer_jit(s, pid, 0x7f0000001100, &f, &module);
	CHECK_NAMED("an address past a JIT symbol's size is anonymous",
		    !strcmp(f.function, "[anon]+0x7f0000001100") && !strcmp(module, "[anon]"));
	symbolizer_free(s);
	unlink(path);
}

TEST(demangle, "C names are left alone and C++ names demangled")
{
	struct strbuf sb = STRBUF_INIT;
	CHECK_NAMED("a C name is left alone", demangle_name("main", &sb) == -1 && sb.len == 0);
	if (demangle_name("_ZN3foo3barEi", &sb)) {
		printf("note: no C++ demangler (libstdc++.so.6) here; demangling not checked\n");
	} else {
		CHECK_NAMED("a C++ name is demangled", !strcmp(sb.buf, "foo::bar(int)"));
	}
	strbuf_release(&sb);
}

CHECK_MAIN()
