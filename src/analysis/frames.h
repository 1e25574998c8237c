/* frames: one rule for which frames are the system's rather than the
 * program's own code, and what a run of system frames was doing.
 *
 * System frames are the kernel's (and every "[...]" pseudo-module: [vdso],
 * [anon], [unknown]), the C and C++ runtimes, the dynamic loader, sonde's
 * own agent and launchers (frame_is_launcher). Findings charge time and memory spent in them to the nearest
 * frame of the program's own code (the user can change that code, not
 * memset); the hotspot tables keep the leaf view. Other libraries (liblzma,
 * libpython's compiler, a C extension) are code the program chose to run and
 * stay visible; but under a Python line the interpreter and the system's
 * shared libraries its C modules call (libsqlite3 under sqlite3, liblzma under
 * lzma, libcrypto under hashlib) are that line's work: a Python program
 * changes the line, not libsqlite3. */
#ifndef SONDE_FRAMES_H
#define SONDE_FRAMES_H

#include <stddef.h>

struct stack_set;

/* 1 when a frame of module (a path, or "[kernel.kallsyms]"-style name; NULL
 * when unknown) and kind (the frames table's kind: "kernel", "python", ...;
 * NULL when unknown) is the system's. */
int frame_is_system(const char *module, const char *kind);

/* 1 when module is a shared library ("lib*.so*") of the system's library
 * directories (/usr/lib, /lib, /usr/lib64, /lib64 and below), not a Python
 * package's or an interpreter's (no "/python" in its path): under a Python
 * frame, findings charge its time to the Python line (frame_own_index). */
int frame_is_system_library(const char *module);

/* 1 when module is a program that starts the program being profiled (a
 * shell running a script or a pyenv shim, env, timeout, nice, sudo, ...): its
 * frames are the system's (the user's code is the script, not bash), and
 * its waits are waits for the programs it started. */
int frame_is_launcher(const char *module);

/* What the system frames under a program frame were doing. */
enum frame_cost {
	FRAME_COST_OWN = 0,	/* no system frame: the program's own code */
	FRAME_COST_PAGE_FAULT,	/* the kernel mapping in (and zeroing) fresh pages */
	FRAME_COST_SYSCALL,	/* a system call */
	FRAME_COST_MEMORY_OPS,	/* the C library filling or copying memory */
	FRAME_COST_OTHER,	/* anything else: interrupts, the runtime, the loader */
	FRAME_COST_INTERPRETER, /* the Python interpreter's own C code under a Python line */
	FRAME_COST_N
};

/* The cost of a leaf-ward run of system frames, given their function names
 * (outermost first; n may be 0). */
enum frame_cost frame_cost_of(const char *const *functions, size_t n);

/* 1 when module is the CPython interpreter (libpython, python3.X) or one of
 * its standard library's C modules (lib-dynload: _json, _pickle, _socket;
 * built into libpython by some distributions, apart by others): its frames
 * under a Python frame are that line's work, charged to it like system code
 * (FRAME_COST_INTERPRETER), but they are the program's, not the system's. */
int frame_is_interpreter(const char *module);

/* 1 when file (a Python frame's) is the standard library's or CPython's own
 * ("<frozen importlib._bootstrap>"): a ".../lib/pythonX.Y/" path outside
 * site-packages and dist-packages; or sonde's own agent modules
 * (asyncio-agent/: _sonde_*.py and its sitecustomize.py), which run in the
 * program but are not its code (their import hook runs the program's
 * modules). Findings name the program's code under it. */
int frame_is_python_stdlib(const char *file);

/* 1 when file (a Python frame's) is the program's own code: neither the
 * standard library's nor an installed package's (site-packages,
 * dist-packages), nor a pseudo-file ("<string>", "<frozen ...>"). */
int frame_python_is_own(const char *file);

struct strbuf;

/* A Python function as the program calls it: the standard library's with its
 * module ("json.dumps" for dumps in .../lib/python3.11/json/__init__.py,
 * "json.encoder.JSONEncoder.encode"), any other as its function name. */
void frame_python_name(const char *function, const char *file, struct strbuf *out);

/* A C function of CPython's as the Python code that calls it, into out:
 * "re.Pattern.search" for _sre_SRE_Pattern_search, "print()" for
 * builtin_print, "FileIO.write" for _io_FileIO_write(_impl). 1 when it
 * knows the name, 0 (out untouched) when not. */
int frame_c_python_name(const char *function, struct strbuf *out);

/* "page faults", "system calls", "memory fills and copies", ... */
const char *frame_cost_name(enum frame_cost c);

/* The system call a kernel function is the entry of ("munmap" from
 * __x64_sys_munmap or __do_sys_munmap), pointing into fn; NULL when it is none. */
const char *frame_syscall(const char *fn);

/* The innermost frame of the program's own code in path[0..n) (frame indices
 * of ss, outermost first): the frame findings charge a sample to, passing
 * system frames, under a Python frame the interpreter's, and under the
 * program's own Python frame the standard library's Python frames. n when
 * every frame is charged through. */
size_t frame_own_index(const struct stack_set *ss, const size_t *path, size_t n);

#endif
