/* fnspec: --function SPEC, told apart (Python or native) and, when native,
 * found in an ELF file. */
#include "fnspec.h"
#include "../symbols/elfsym.h"
#include "../symbols/fpcheck.h"
#include "../symbols/maps.h"
#include "../util/strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FNSPEC_FILES_MAX 256

static int is_file(const char *path)
{
	struct stat st;
	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* A program found on PATH (or the path itself): 0 with out set. */
static int on_path(const char *name, char *out, size_t cap)
{
	if (!strchr(name, '/'))
		return fpcheck_search_path(name, out, cap) ? -1 : 0;
	if (!is_file(name))
		return -1;
	snprintf(out, cap, "%s", name);
	return 0;
}

enum fnspec_kind fnspec_kind(const char *spec, char *const *argv)
{
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec)
		return FNSPEC_NATIVE;
	size_t n = (size_t)(colon - spec);
	if (n > 3 && !strncmp(colon - 3, ".py", 3))
		return FNSPEC_PYTHON;
	char left[1024], found[4096];
	if (n >= sizeof(left))
		return FNSPEC_NATIVE;
	memcpy(left, spec, n);
	left[n] = '\0';
	for (const char *c = left; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.')
			return FNSPEC_NATIVE;
	const char *prog = argv && argv[0] ? strrchr(argv[0], '/') : NULL;
	prog = prog ? prog + 1 : argv ? argv[0] : NULL;
	if (strstr(left, ".so") || is_file(left) || !on_path(left, found, sizeof(found)) ||
	    (prog && !strcmp(prog, left)))
		return FNSPEC_NATIVE;
	return FNSPEC_PYTHON;
}

/* The files a bare symbol is looked for in, in the loader's order. */
struct files {
	char *v[FNSPEC_FILES_MAX];
	size_t n;
};

static void files_add(void *arg, const char *path)
{
	struct files *f = arg;
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i], path))
			return;
	if (f->n < FNSPEC_FILES_MAX)
		f->v[f->n++] = xstrdup(path);
}

static void files_release(struct files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	f->n = 0;
}

/* The program and its libraries: argv's (run) or what pid maps (attach). */
static void files_of_target(char *const *argv, pid_t pid, struct files *f)
{
	char prog[4096];
	if (argv) {
		if (fpcheck_resolve_program(argv[0], prog, sizeof(prog)))
			return;
		files_add(f, prog);
		elfsym_needed(prog, files_add, f);
		return;
	}
	struct maps m = MAPS_INIT;
	if (maps_read_pid(&m, pid) > 0)
		for (size_t i = 0; i < m.n; i++)
			if (m.v[i].path[0] == '/' && is_file(m.v[i].path))
				files_add(f, m.v[i].path);
	maps_release(&m);
}

/* 1 when base (a file name) names lib: "libc.so.6" for libc.so.6, libc or libc.so. */
static int names_library(const char *base, const char *lib)
{
	size_t n = strlen(lib);
	return !strncmp(base, lib, n) && (!base[n] || base[n] == '.' || base[n] == '-');
}

/* Where FILE of "FILE:symbol" is: a path, a program on PATH, or a library
 * the target loads (by file name), else one in the usual directories. */
static int find_file(const char *file, char *const *argv, pid_t pid, char *out, size_t cap)
{
	if (!on_path(file, out, cap))
		return 0;
	struct files f = {.n = 0};
	files_of_target(argv, pid, &f);
	int rc = -1;
	for (size_t i = 0; i < f.n && rc; i++) {
		const char *base = strrchr(f.v[i], '/');
		if (names_library(base ? base + 1 : f.v[i], file)) {
			snprintf(out, cap, "%s", f.v[i]);
			rc = 0;
		}
	}
	static const char *const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					   "/usr/local/lib", "/usr/lib", "/lib64"};
	for (size_t i = 0; rc && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, cap, "%s/%s", dirs[i], file);
		if (is_file(out))
			rc = 0;
	}
	files_release(&f);
	return rc;
}

static void found(struct fnspec_native *out, const char *file, const char *sym,
		  const struct elfsym *es)
{
	snprintf(out->file, sizeof(out->file), "%s", file);
	snprintf(out->function, sizeof(out->function), "%s", sym);
	out->vaddr = es->vaddr;
	out->file_offset = es->file_offset;
}

int fnspec_resolve(const char *spec, char *const *argv, pid_t pid, struct fnspec_native *out,
		   struct strbuf *why)
{
	const char *colon = strrchr(spec, ':');
	const char *sym = colon ? colon + 1 : spec;
	struct strbuf near = STRBUF_INIT;
	struct elfsym es;
	char file[4096];
	int rc = -1;
	if (!*sym) {
		strbuf_addf(why, "--function '%s' names no function after the ':'", spec);
		goto out;
	}
	if (colon) {
		char want[4096];
		snprintf(want, sizeof(want), "%.*s", (int)(colon - spec), spec);
		if (find_file(want, argv, pid, file, sizeof(file))) {
			strbuf_addf(why,
				    "--function '%s': no file '%s' (not a path, a program on "
				    "PATH or a library the target loads)",
				    spec, want);
			goto out;
		}
		int e = elfsym_find(file, sym, &es, &near);
		if (!e) {
			found(out, file, sym, &es);
			rc = 0;
		} else if (e == -ENOENT) {
			strbuf_addf(why, "--function '%s': %s has no function '%s'%s%s", spec, file,
				    sym,
				    near.len ? "; nearest: " : " (and none with a name near it)",
				    near.buf ? near.buf : "");
		} else {
			strbuf_addf(why, "--function '%s': %s cannot be read as ELF (%s)", spec,
				    file, e == -ENOEXEC ? "not an ELF file" : strerror(-e));
		}
		goto out;
	}
	struct files f = {.n = 0};
	files_of_target(argv, pid, &f);
	for (size_t i = 0; i < f.n && rc; i++)
		if (!elfsym_find(f.v[i], sym, &es, near.len ? NULL : &near)) {
			found(out, f.v[i], sym, &es);
			rc = 0;
		}
	if (rc)
		strbuf_addf(why, "--function '%s': no function '%s' in %s%s%s%s", spec, sym,
			    f.n ? f.v[0] : "the target (its program could not be read)",
			    f.n > 1 ? " or the libraries it loads" : "",
			    near.len ? "; nearest: " : "", near.buf ? near.buf : "");
	files_release(&f);
out:
	strbuf_release(&near);
	return rc;
}
