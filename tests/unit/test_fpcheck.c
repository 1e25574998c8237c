/* Unit tests for src/symbols/fpcheck: finding the program behind a command
 * (PATH, "#!" lines, /usr/bin/env) and reading an ELF's prologues. */
#include "symbols/fpcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(sentence, cond)                                                  \
	do {                                                                   \
		if (cond) {                                                    \
			passed++;                                              \
		} else {                                                       \
			failed++;                                              \
			fprintf(stderr, "FAIL: %s (%s:%d)\n", sentence, __FILE__, \
				__LINE__);                                     \
		}                                                              \
	} while (0)

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

static void write_script(const char *path, const char *first_line)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "%s\necho hi\n", first_line);
	fclose(f);
	chmod(path, 0755);
}

int main(void)
{
	char out[4096];
	CHECK("a bare name is found on PATH",
	      !fpcheck_resolve_program("sh", out, sizeof(out)) && ends_with(out, "/sh"));
	CHECK("a missing program is an error",
	      fpcheck_resolve_program("no-such-program-sonde", out, sizeof(out)) < 0);

	char dir[] = "/tmp/sonde-fpcheck-XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK("a scratch directory can be made", 0);
		goto done;
	}
	char a[128], b[128];
	snprintf(a, sizeof(a), "%s/direct", dir);
	snprintf(b, sizeof(b), "%s/env", dir);
	write_script(a, "#!/bin/sh -e");
	write_script(b, "#!/usr/bin/env sh");
	CHECK("a script is followed to its interpreter",
	      !fpcheck_resolve_program(a, out, sizeof(out)) && !strcmp(out, "/bin/sh"));
	CHECK("/usr/bin/env NAME is followed to NAME on PATH",
	      !fpcheck_resolve_program(b, out, sizeof(out)) && ends_with(out, "/sh"));
	CHECK("a file that is not ELF cannot be checked", fpcheck_elf(a) < 0);
	CHECK("a missing file cannot be checked", fpcheck_elf("/nonexistent/prog") < 0);
	unlink(a);
	unlink(b);
	rmdir(dir);
	/* This test is built with -fno-omit-frame-pointer under sanitizers only. */
	int self = fpcheck_elf("/proc/self/exe");
	CHECK("this test binary can be checked", self == 0 || self == 1);
#if defined(__SANITIZE_ADDRESS__)
	CHECK("a sanitizer build keeps frame pointers", self == 1);
#endif
done:
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
