/* sonde clean: takes out what `sonde instrument` put in (manifest.h),
 * giving each file back byte for byte, and refuses a file edited since
 * unless --force. */
#include "cli.h"
#include "manifest.h"
#include "srcfile.h"
#include "suggest.h"
#include "../util/pyedit.h"
#include "../util/sha256.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void clean_usage(FILE *out)
{
	fputs("usage: sonde clean [--force] [FILE...]\n\n"
	      "Removes the lines 'sonde instrument' inserted from every file that\n" MANIFEST_PATH
	      " lists (or only from the FILEs named), and checks\n"
	      "that each file is then byte for byte what it held before (the SHA-256\n"
	      "recorded). A file edited since it was instrumented is refused, with a line\n"
	      "saying so, and the others are still cleaned.\n\n"
	      "options:\n"
	      "  --force     clean a file edited since as well: only the lines still ending in\n"
	      "              '" PYEDIT_MARK "' exactly as inserted go (wherever they moved);\n"
	      "              the rest of the edit stays. A file gone is forgotten.\n"
	      "  -h, --help  this help\n\n"
	      "Exit status: 0 when every file is clean; 1 when one was refused; 2 on a usage\n"
	      "error.\n",
	      out);
}

/* Takes e's lines out of its file. 0 when the file is clean now (e can go),
 * 1 when it was refused (printed). */
static int entry_clean(const struct manifest_entry *e, int force)
{
	struct srcfile f = SRCFILE_INIT;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	char now[SHA256_HEX_LEN + 1];
	int ret = 1, r = srcfile_read(e->file, &f, &err);
	if (r == -ENOENT && force) {
		printf("%s no longer exists: forgotten\n", e->path);
		ret = 0;
		goto out;
	}
	if (r == -ENOENT) {
		cli_error("%s no longer exists: not cleaned ('sonde clean --force' forgets it)",
			  e->path);
		goto out;
	}
	if (r || srcfile_check_writable(&f, e->path, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	sha256_hex(f.text.buf, f.text.len, now);
	if (!strcmp(now, e->sha256_before)) {
		printf("%s holds what it held before sonde instrumented it: nothing to remove\n",
		       e->path);
		ret = 0;
		goto out;
	}
	if (!strcmp(now, e->sha256_after)) {
		if (pyedit_strip(f.text.buf, f.text.len, e->lines.v, e->lines.n, &out, &err)) {
			cli_error("%s: %s: not cleaned", e->path, err.buf);
			goto out;
		}
		sha256_hex(out.buf, out.len, now);
		if (strcmp(now, e->sha256_before)) {
			cli_error("%s: without the recorded lines it would not be what it was "
				  "before (SHA-256 differs): not cleaned",
				  e->path);
			goto out;
		}
		if (srcfile_replace(&f, e->path, out.buf, out.len, &err)) {
			cli_error("%s: not cleaned", err.buf);
			goto out;
		}
		printf("cleaned %s: %zu lines removed, the file is as it was before\n", e->path,
		       e->lines.n);
		ret = 0;
		goto out;
	}
	if (!force) {
		cli_error("%s was edited since sonde instrumented it (its SHA-256 differs): not "
			  "cleaned; 'sonde clean --force' removes only the lines still marked "
			  "'" PYEDIT_MARK "' as inserted",
			  e->path);
		goto out;
	}
	size_t left = 0, removed = pyedit_strip_marked(f.text.buf, f.text.len, e->lines.v,
						       e->lines.n, &out, &left);
	if (removed && srcfile_replace(&f, e->path, out.buf, out.len, &err)) {
		cli_error("%s: not cleaned", err.buf);
		goto out;
	}
	printf("cleaned %s (--force, edited since): %zu line%s as inserted removed", e->path,
	       removed, removed == 1 ? "" : "s");
	if (left)
		printf("; %zu line%s marked '" PYEDIT_MARK "' differ%s from sonde's and stay%s",
		       left, left == 1 ? "" : "s", left == 1 ? "s" : "", left == 1 ? "s" : "");
	putchar('\n');
	ret = 0;
out:
	srcfile_release(&f);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}

/* The manifest's entry for a FILE operand: by the file it resolves to, or
 * by the name it was instrumented under (a file gone since). */
static long entry_named(struct manifest *m, const char *arg)
{
	char *real = realpath(arg, NULL);
	long found = -1;
	for (size_t i = 0; i < m->n && found < 0; i++)
		if ((real && !strcmp(m->v[i].file, real)) || !strcmp(m->v[i].path, arg))
			found = (long)i;
	free(real);
	return found;
}

int cmd_clean(int argc, char **argv)
{
	static const struct option opts[] = { { "force", no_argument, NULL, 'f' },
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	struct manifest m = MANIFEST_INIT;
	struct strbuf err = STRBUF_INIT;
	char *chosen = NULL;
	int c, force = 0, ret = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+fh", opts, NULL)) != -1) {
		if (c == 'h') {
			clean_usage(stdout);
			return 0;
		}
		if (c == 'f') {
			force = 1;
			continue;
		}
		cli_bad_option("clean", c, optopt, argv[optind - 1], opts);
		return CLI_USAGE;
	}
	if (manifest_load(&m, &err)) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (!m.n) {
		printf("nothing to clean: no %s here (sonde instrument writes it)\n",
		       MANIFEST_PATH);
		ret = optind < argc;
		goto out;
	}
	chosen = xcalloc(m.n, 1);
	ret = 0;
	for (int i = optind; i < argc; i++) {
		long k = entry_named(&m, argv[i]);
		if (k < 0) {
			cli_error("%s is not in %s: sonde did not instrument it from here", argv[i],
				  MANIFEST_PATH);
			ret = 1;
		} else {
			chosen[k] = 1;
		}
	}
	/* chosen[i]: 1 to clean, 2 cleaned (its entry goes). */
	for (size_t i = 0; i < m.n; i++) {
		if (optind < argc && !chosen[i])
			continue;
		if (entry_clean(&m.v[i], force))
			ret = 1;
		else
			chosen[i] = 2;
	}
	for (size_t i = m.n; i-- > 0;)
		if (chosen[i] == 2)
			manifest_drop(&m, i);
	if (manifest_save(&m, &err)) {
		cli_error("%s", err.buf);
		ret = 1;
	}
out:
	free(chosen);
	manifest_release(&m);
	strbuf_release(&err);
	return ret;
}
