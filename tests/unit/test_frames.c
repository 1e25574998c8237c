/* test_frames: one rule for the system's frames, and what system frames did. */
#include "check.h"
#include "analysis/frames.h"
#include "util/strbuf.h"

TEST(system_frames, "the kernel, pseudo-modules, the C and C++ runtimes and the loader are the system's; the program and other libraries are not")
{
	CHECK(frame_is_system("[kernel.kallsyms]", "kernel"));
	CHECK(frame_is_system(NULL, "kernel"));
	CHECK(frame_is_system("[vdso]", NULL));
	CHECK(frame_is_system("/usr/lib/x86_64-linux-gnu/libc.so.6", "native"));
	CHECK(frame_is_system("/lib/x86_64-linux-gnu/libm.so.6", NULL));
	CHECK(frame_is_system("/lib64/ld-linux-x86-64.so.2", NULL));
	CHECK(frame_is_system("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", NULL));
	CHECK(frame_is_system("/opt/sonde/build/libsonde_alloc.so", NULL));
	CHECK(!frame_is_system("/work/build/workloads/frame_render", "native"));
	CHECK(!frame_is_system("/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1", NULL));
	CHECK(!frame_is_system("/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", NULL));
	CHECK(!frame_is_system("/srv/app/libcalc.so", NULL)); /* "libc" only as a whole name */
	CHECK(!frame_is_system("app.py", "python"));
	CHECK(!frame_is_system(NULL, NULL));
	/* A shell running a script or a pyenv shim, env, timeout: launchers. */
	CHECK(frame_is_system("/usr/bin/bash", "native") && frame_is_launcher("/usr/bin/bash"));
	CHECK(frame_is_launcher("/usr/bin/env") && frame_is_launcher("/bin/sh"));
	CHECK(!frame_is_launcher("/usr/bin/bashful") && !frame_is_launcher("/opt/app/envoy"));
	CHECK(!frame_is_launcher("/usr/bin/python3.11") && !frame_is_launcher(NULL));
}

TEST(system_costs, "system frames under a program frame are named by what they did: page faults first, then system calls, then fills and copies")
{
	const char *fault[] = { "__memset_avx2_unaligned_erms", "asm_exc_page_fault",
				"exc_page_fault", "clear_page_erms" };
	CHECK_INT_EQ(frame_cost_of(fault, 4), FRAME_COST_PAGE_FAULT);
	const char *sys[] = { "__write", "entry_SYSCALL_64_after_hwframe", "do_syscall_64",
			      "__x64_sys_write", "vfs_write" };
	CHECK_INT_EQ(frame_cost_of(sys, 5), FRAME_COST_SYSCALL);
	CHECK_STR_EQ(frame_syscall("__x64_sys_write"), "write");
	CHECK_STR_EQ(frame_syscall("__do_sys_clock_nanosleep"), "clock_nanosleep");
	CHECK(frame_syscall("vfs_write") == NULL && frame_syscall("__x64_sys_") == NULL);
	const char *copy[] = { "__memmove_evex_unaligned_erms" };
	CHECK_INT_EQ(frame_cost_of(copy, 1), FRAME_COST_MEMORY_OPS);
	const char *other[] = { "pthread_mutex_lock" };
	CHECK_INT_EQ(frame_cost_of(other, 1), FRAME_COST_OTHER);
	CHECK_INT_EQ(frame_cost_of(NULL, 0), FRAME_COST_OWN);
}

TEST(interpreter_frames, "the interpreter is libpython, the python executable and the standard library's C modules, wherever a distribution built them")
{
	CHECK(frame_is_interpreter("/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0"));
	CHECK(frame_is_interpreter("/usr/bin/python3.11"));
	CHECK(frame_is_interpreter(
	    "/root/.pyenv/versions/3.11.7/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so"));
	CHECK(frame_is_interpreter("/usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so"));
	/* A C extension the program installed is its own choice, not the interpreter. */
	CHECK(!frame_is_interpreter(
	    "/srv/venv/lib/python3.11/site-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"));
	CHECK(!frame_is_interpreter("/usr/lib/x86_64-linux-gnu/libcrypto.so.3"));
	CHECK(!frame_is_interpreter("[kernel.kallsyms]") && !frame_is_interpreter(NULL));
}

TEST(system_libraries, "the system's shared libraries are those of its library directories, not a Python package's, the interpreter's or the program's own")
{
	CHECK(frame_is_system_library("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6"));
	CHECK(frame_is_system_library("/lib/x86_64-linux-gnu/liblzma.so.5.4.1"));
	CHECK(frame_is_system_library("/usr/lib64/libcrypto.so.3"));
	CHECK(!frame_is_system_library(
	    "/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"));
	CHECK(!frame_is_system_library("/usr/lib/python3.11/lib-dynload/_sqlite3.cpython-311-x86_64-linux-gnu.so"));
	CHECK(!frame_is_system_library("/opt/app/lib/libengine.so"));
	CHECK(!frame_is_system_library("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
	CHECK(!frame_is_system_library("/usr/bin/sqlite3"));
	CHECK(!frame_is_system_library("[kernel.kallsyms]") && !frame_is_system_library(NULL));
}

static void python_name_is(const char *function, const char *file, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	frame_python_name(function, file, &sb);
	CHECK_STR_EQ(sb.buf, want);
	strbuf_release(&sb);
}

TEST(python_names, "a standard library function is named with its module as a program calls it; any other by its function")
{
	python_name_is("dumps", "/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py",
		       "json.dumps");
	python_name_is("JSONEncoder.encode", "/usr/lib/python3.11/json/encoder.py",
		       "json.encoder.JSONEncoder.encode");
	python_name_is("urlopen", "/usr/lib/python3.11/urllib/request.py", "urllib.request.urlopen");
	python_name_is("parse", "/srv/app/report.py", "parse");
	python_name_is("get", "/srv/venv/lib/python3.11/site-packages/requests/api.py", "get");
	python_name_is("<module>", "/usr/lib/python3.11/json/__init__.py", "<module>");
	python_name_is("f", NULL, "f");
}

TEST(agent_frames, "sonde's agent modules, loaded into the program, are not its code: the "
		   "program's lines under their import hook are")
{
	CHECK(frame_is_python_stdlib("/opt/sonde/build/asyncio-agent/_sonde_asyncio.py"));
	CHECK(frame_is_python_stdlib("/opt/sonde/build/asyncio-agent/sitecustomize.py"));
	CHECK(!frame_python_is_own("/opt/sonde/build/asyncio-agent/_sonde_function.py"));
	CHECK(frame_python_is_own("/srv/app/sitecustomize.py"));
	CHECK(frame_python_is_own("/srv/app/sonde_client.py"));
}

TEST(c_python_names, "CPython's C entry points are named as the Python code that calls them; an unknown C function is not renamed")
{
	static const char *const cases[][2] = {
		{ "_sre_SRE_Pattern_search", "re.Pattern.search" },
		{ "_sre_SRE_Pattern_search_impl", "re.Pattern.search" },
		{ "builtin_print", "print()" },
		{ "_io_FileIO_write_impl", "FileIO.write" },
		{ "EVP_update", "hashlib's update()" },
		{ "type_call", "creating an object (a class call)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strbuf sb = STRBUF_INIT;
		CHECK(frame_c_python_name(cases[i][0], &sb) == 1);
		CHECK_STR_EQ(sb.buf, cases[i][1]);
		strbuf_release(&sb);
	}
	struct strbuf sb = STRBUF_INIT;
	CHECK(frame_c_python_name("memset", &sb) == 0 && sb.len == 0);
	CHECK(frame_c_python_name("builtin_", &sb) == 0 && sb.len == 0);
	CHECK(frame_c_python_name(NULL, &sb) == 0);
	strbuf_release(&sb);
}

CHECK_MAIN()
