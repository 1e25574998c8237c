/* Unit tests for src/probes/fnspec and src/symbols/elfsym: telling Python
 * SPECs from native ones, finding a native function's file offset, and
 * naming the nearest symbols when it is not there. */
#include "check.h"
#include "probes/fnspec.h"
#include "symbols/elfsym.h"
#include "util/strbuf.h"

#include <stdint.h>

__attribute__((noinline, used)) int fnspec_unit_target(int x) { return x * 3 + 1; }

static char *const sh_argv[] = {"sh", NULL};

TEST(kind_python, "a .py file or a dotted module name that is no program is a Python SPEC")
{
	CHECK(fnspec_kind("app/model.py:Model.forward", NULL) == FNSPEC_PYTHON);
	CHECK(fnspec_kind("json.decoder:JSONDecoder.decode", NULL) == FNSPEC_PYTHON);
	CHECK(fnspec_kind("mymod:func", NULL) == FNSPEC_PYTHON);
}

TEST(kind_native, "a library, a program on PATH, the command's program or a bare symbol is native")
{
	CHECK(fnspec_kind("libc.so.6:malloc", NULL) == FNSPEC_NATIVE);
	CHECK(fnspec_kind("malloc", NULL) == FNSPEC_NATIVE);
	CHECK(fnspec_kind("sh:main", NULL) == FNSPEC_NATIVE);
	char *const argv[] = {"./build/my_prog", NULL};
	CHECK(fnspec_kind("my_prog:parse", argv) == FNSPEC_NATIVE);
	CHECK(fnspec_kind("/usr/bin/env:main", NULL) == FNSPEC_NATIVE);
}

TEST(elf_find_self,
     "a function of this test is found, its file offset inside an executable segment")
{
	struct elfsym es;
	REQUIRE(!elfsym_find("/proc/self/exe", "fnspec_unit_target", &es, NULL));
	CHECK(es.vaddr != 0 && es.size > 0);
	uint64_t off = 0;
	CHECK(!elfsym_vaddr_offset("/proc/self/exe", es.vaddr, &off));
	CHECK(off == es.file_offset);
}

TEST(elf_nearest, "a symbol that is not there is -ENOENT with the nearest names")
{
	struct elfsym es;
	struct strbuf near = STRBUF_INIT;
	CHECK_INT_EQ(elfsym_find("/proc/self/exe", "fnspec_unit_targt", &es, &near), -ENOENT);
	CHECK_CONTAINS(strbuf_str(&near), "fnspec_unit_target");
	strbuf_release(&near);
}

TEST(elf_not_elf, "a file that is not ELF is -ENOEXEC, a missing one -ENOENT")
{
	struct elfsym es;
	char path[] = "/tmp/sonde-fnspec-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	CHECK(write(fd, "not an ELF file\n", 16) == 16);
	close(fd);
	CHECK_INT_EQ(elfsym_find(path, "main", &es, NULL), -ENOEXEC);
	unlink(path);
	CHECK(elfsym_find("/nonexistent/sonde-prog", "main", &es, NULL) < 0);
}

TEST(resolve_library, "libc.so.6:malloc and a bare malloc resolve to the C library sh loads")
{
	struct fnspec_native out;
	struct strbuf why = STRBUF_INIT;
	REQUIRE(!fnspec_resolve("libc.so.6:malloc", sh_argv, 0, &out, &why));
	CHECK_CONTAINS(out.file, "libc.so");
	CHECK_STR_EQ(out.function, "malloc");
	REQUIRE(!fnspec_resolve("malloc", sh_argv, 0, &out, &why));
	CHECK_CONTAINS(out.file, "libc");
	strbuf_release(&why);
}

TEST(resolve_missing, "a symbol nowhere is one line naming where it was looked for")
{
	struct fnspec_native out;
	struct strbuf why = STRBUF_INIT;
	CHECK(fnspec_resolve("libc.so.6:mallocx", sh_argv, 0, &out, &why) < 0);
	CHECK_CONTAINS(strbuf_str(&why), "has no function 'mallocx'; nearest: malloc");
	strbuf_reset(&why);
	CHECK(fnspec_resolve("no_such_fn_sonde", sh_argv, 0, &out, &why) < 0);
	CHECK_CONTAINS(strbuf_str(&why), "or the libraries it loads");
	CHECK(!strchr(strbuf_str(&why), '\n'));
	strbuf_reset(&why);
	CHECK(fnspec_resolve("no-such-lib.so:f", sh_argv, 0, &out, &why) < 0);
	CHECK_CONTAINS(strbuf_str(&why), "no file 'no-such-lib.so'");
	strbuf_release(&why);
}

CHECK_MAIN()
