/* frames: which frames are the system's, and what system frames were doing. */
#include "frames.h"
#include "../record/stackread.h"
#include "../util/strbuf.h"

#include <string.h>

/* The C and C++ runtimes and the loader, by the start of their file name. */
static const char *const runtime_libs[] = {
	"libc.so",     "libc-",	      "libm.so",	"libm-",	 "libpthread",
	"librt.so",    "librt-",      "libdl.so",	"libdl-",	 "ld-linux",
	"ld-musl",     "ld64.so",     "libgcc_s",	"libstdc++",	 "libc++",
	"libasan",     "libubsan",    "libtsan",	"liblsan",	 "libsonde_alloc",
	"libmvec",     "libresolv",   "libnss_",	"libatomic",	 NULL,
};

/* Programs that start the program to profile rather than being it: shells
 * (a script, a pyenv shim), env, timeout, nice, sudo, ... whole names. */
static const char *const launchers[] = {
	"bash",	  "sh",	     "dash",	"zsh",	   "ksh",   "mksh",    "busybox", "env",
	"timeout", "nice",    "nohup",	"stdbuf",  "setsid", "taskset", "chrt",	  "ionice",
	"numactl", "sudo",    "su",	"runuser", "time",   "xargs",	"flock",  NULL,
};

int frame_is_launcher(const char *module)
{
	if (!module || module[0] == '[')
		return 0;
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	for (size_t i = 0; launchers[i]; i++)
		if (!strcmp(base, launchers[i]))
			return 1;
	return 0;
}

int frame_is_system(const char *module, const char *kind)
{
	if (kind && !strcmp(kind, "kernel"))
		return 1;
	if (!module)
		return 0;
	if (module[0] == '[')
		return 1;
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	for (size_t i = 0; runtime_libs[i]; i++)
		if (!strncmp(base, runtime_libs[i], strlen(runtime_libs[i])))
			return 1;
	return frame_is_launcher(module);
}

int frame_is_system_library(const char *module)
{
	static const char *const dirs[] = { "/usr/lib/", "/lib/", "/usr/lib64/", "/lib64/", NULL };
	if (!module || module[0] != '/' || strstr(module, "/python"))
		return 0;
	const char *base = strrchr(module, '/') + 1;
	if (strncmp(base, "lib", 3) || !strstr(base, ".so"))
		return 0;
	for (size_t i = 0; dirs[i]; i++)
		if (!strncmp(module, dirs[i], strlen(dirs[i])))
			return 1;
	return 0;
}

/* 1 when path is one of the standard library's C modules, built apart from
 * libpython: ".../lib/pythonX.Y/lib-dynload/_json.cpython-311-....so". */
static int stdlib_extension(const char *path)
{
	const char *lib = strstr(path, "/lib/python");
	if (!lib)
		return 0;
	lib += strlen("/lib/python");
	while ((*lib >= '0' && *lib <= '9') || *lib == '.')
		lib++;
	return !strncmp(lib, "/lib-dynload/", strlen("/lib-dynload/"));
}

int frame_is_interpreter(const char *module)
{
	if (!module || module[0] == '[')
		return 0;
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	return !strncmp(base, "libpython", 9) || !strncmp(base, "python", 6) ||
	       stdlib_extension(module);
}

int frame_is_python_stdlib(const char *file)
{
	if (!file)
		return 0;
	if (!strncmp(file, "<frozen ", 8))
		return 1;
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	if (!strncmp(base, "_sonde_", 7) || strstr(file, "/asyncio-agent/sitecustomize.py"))
		return 1; /* sonde's agents */
	const char *lib = strstr(file, "/lib/python");
	if (!lib || strstr(lib, "/site-packages/") || strstr(lib, "/dist-packages/"))
		return 0;
	lib += strlen("/lib/python");
	while ((*lib >= '0' && *lib <= '9') || *lib == '.')
		lib++;
	return *lib == '/';
}

int frame_python_is_own(const char *file)
{
	if (!file || !*file || file[0] == '<')
		return 0;
	if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
		return 0;
	return !frame_is_python_stdlib(file);
}

void frame_python_name(const char *function, const char *file, struct strbuf *out)
{
	const char *lib = frame_is_python_stdlib(file) ? strstr(file, "/lib/python") : NULL;
	const char *rel = lib ? strchr(lib + strlen("/lib/python"), '/') : NULL;
	if (!rel || !strcmp(function, "<module>")) {
		strbuf_addstr(out, function);
		return;
	}
	rel++;
	size_t len = strlen(rel);
	if (len > 3 && !strcmp(rel + len - 3, ".py"))
		len -= 3;
	if (len > 9 && !strncmp(rel + len - 9, "/__init__", 9))
		len -= 9;
	for (size_t i = 0; i < len; i++)
		strbuf_addch(out, rel[i] == '/' ? '.' : rel[i]);
	strbuf_addf(out, ".%s", function);
}

/* CPython's C entry points as the Python code that reaches them: Argument
 * Clinic's MODULE_CLASS_METHOD names by their prefix, a few others whole. */
static const struct {
	const char *c_prefix, *python; /* python: the name the rest is appended to */
	int whole;		       /* the C name whole, not a prefix */
} c_python_names[] = {
	{ "builtin_", "", 0 },
	{ "_sre_SRE_Pattern_", "re.Pattern.", 0 },
	{ "_sre_SRE_Match_", "re.Match.", 0 },
	{ "_io_FileIO_", "FileIO.", 0 },
	{ "_io_TextIOWrapper_", "TextIOWrapper.", 0 },
	{ "_io__Buffered_", "buffered file.", 0 },
	{ "_io_BytesIO_", "BytesIO.", 0 },
	{ "_io_StringIO_", "StringIO.", 0 },
	{ "_json_", "json (C accelerator) ", 0 },
	{ "EVP_update", "hashlib's update()", 1 },
	{ "EVP_hexdigest", "hashlib's hexdigest()", 1 },
	{ "type_call", "creating an object (a class call)", 1 },
	{ "bytes_subscript", "bytes indexing or slicing", 1 },
	{ "unicode_subscript", "str indexing or slicing", 1 },
	{ "list_subscript", "list indexing or slicing", 1 },
	{ "bytes_decode", "bytes.decode", 1 },
	{ "unicode_encode", "str.encode", 1 },
	{ "PyNumber_AsSsize_t", "converting an index to int", 1 },
};

int frame_c_python_name(const char *function, struct strbuf *out)
{
	if (!function)
		return 0;
	for (size_t i = 0; i < sizeof(c_python_names) / sizeof(c_python_names[0]); i++) {
		const char *c = c_python_names[i].c_prefix;
		size_t n = strlen(c);
		if (c_python_names[i].whole ? strcmp(function, c) : strncmp(function, c, n) ||
								    !function[n])
			continue;
		strbuf_addstr(out, c_python_names[i].python);
		if (c_python_names[i].whole)
			return 1;
		const char *rest = function + n;
		size_t len = strlen(rest);
		if (len > 5 && !strcmp(rest + len - 5, "_impl"))
			len -= 5;
		strbuf_add(out, rest, len);
		if (!strcmp(c, "builtin_"))
			strbuf_addstr(out, "()");
		return 1;
	}
	return 0;
}

static int has(const char *s, const char *part)
{
	return s && strstr(s, part);
}

/* The C library's bulk memory functions, by name or by their ifunc variants
 * (__memset_avx2_unaligned_erms, __memmove_evex_unaligned, ...). */
static int memory_op(const char *fn)
{
	static const char *const names[] = { "memset", "memcpy", "memmove", "bzero",
					     "wmemset", "memcmp", NULL };
	if (!fn)
		return 0;
	while (*fn == '_')
		fn++;
	for (size_t i = 0; names[i]; i++)
		if (!strncmp(fn, names[i], strlen(names[i])))
			return 1;
	return 0;
}

enum frame_cost frame_cost_of(const char *const *functions, size_t n)
{
	if (!n)
		return FRAME_COST_OWN;
	for (size_t i = 0; i < n; i++)
		if (has(functions[i], "page_fault") || has(functions[i], "handle_mm_fault"))
			return FRAME_COST_PAGE_FAULT;
	for (size_t i = 0; i < n; i++)
		if (has(functions[i], "entry_SYSCALL") || has(functions[i], "do_syscall_64"))
			return FRAME_COST_SYSCALL;
	for (size_t i = 0; i < n; i++)
		if (memory_op(functions[i]))
			return FRAME_COST_MEMORY_OPS;
	return FRAME_COST_OTHER;
}

const char *frame_cost_name(enum frame_cost c)
{
	switch (c) {
	case FRAME_COST_OWN:
		return "its own code";
	case FRAME_COST_PAGE_FAULT:
		return "page faults";
	case FRAME_COST_SYSCALL:
		return "system calls";
	case FRAME_COST_MEMORY_OPS:
		return "memory fills and copies";
	case FRAME_COST_INTERPRETER:
		return "the interpreter's C code";
	default:
		return "other system code";
	}
}

const char *frame_syscall(const char *fn)
{
	static const char *const prefixes[] = { "__x64_sys_", "__do_sys_", "__se_sys_",
						"__arm64_sys_", NULL };
	for (size_t p = 0; fn && prefixes[p]; p++) {
		size_t k = strlen(prefixes[p]);
		if (!strncmp(fn, prefixes[p], k) && fn[k])
			return fn + k;
	}
	return NULL;
}

/* Frames the samples are charged through: the system's, and the Python
 * interpreter's under a Python frame (that line's work). */
static int charged_through(const struct stack_set *ss, const size_t *path, size_t k,
			   int python_above)
{
	const struct stack_frame_rec *fr = &ss->frames[path[k]];
	return frame_is_system(fr->module, fr->kind) ||
	       (python_above &&
		(frame_is_interpreter(fr->module) || frame_is_system_library(fr->module)));
}

/* The innermost frame of the program's own code in path[0..n) (outermost
 * first), or n when every frame is charged through. */
static int is_python(const struct stack_frame_rec *f)
{
	return f->kind && !strcmp(f->kind, "python");
}

size_t frame_own_index(const struct stack_set *ss, const size_t *path, size_t n)
{
	size_t python = n; /* the innermost Python frame */
	size_t user = n;   /* the innermost Python frame outside the standard library */
	for (size_t k = n; k-- > 0;) {
		const struct stack_frame_rec *f = &ss->frames[path[k]];
		if (is_python(f) && python == n)
			python = k;
		if (is_python(f) && !frame_is_python_stdlib(f->file)) {
			user = k;
			break;
		}
	}
	for (size_t k = n; k-- > 0;) {
		const struct stack_frame_rec *f = &ss->frames[path[k]];
		/* The standard library's Python frames under the program's own
		 * (queue.get, Condition.wait, importlib) are charged to its line,
		 * as libc's are to a C program's; its C code (_json, _hashlib)
		 * is not Python and stays visible. */
		if (user < k && is_python(f) && frame_is_python_stdlib(f->file))
			continue;
		if (!charged_through(ss, path, k, python < k))
			return k;
	}
	return n;
}
