/* test_scope_index: the scope index finds, for every address it is asked
 * about, the innermost function or inlined call that libdw's
 * dwarf_getscopes() walk finds (what the symbolizer names), and the chain
 * out from it ends at the concrete function: on an optimised library with inlining (a pyenv
 * libpython when there is one, else this test binary), every 997th byte of
 * every compile unit's ranges, at most 20 000 addresses (dwarf_getscopes
 * takes about 70 us each). */
#include "check.h"
#include "symbols/scope_index.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const Dwfl_Callbacks callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* The subprogram and inlined_subroutine offsets of scopes, innermost
 * first, up to and including the first subprogram: what naming uses. */
static size_t named_chain(Dwarf_Die *scopes, size_t n, Dwarf_Off *out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		out[k++] = dwarf_dieoffset(&scopes[i]);
		if (tag == DW_TAG_subprogram)
			break;
	}
	return k;
}

/* Compares the two for every step-th address of path's units; returns the
 * addresses compared, *inlined those with an inlined call, *differ those
 * that differ. */
static size_t compare_module(const char *path, Dwarf_Addr step, size_t *inlined, size_t *differ)
{
	size_t compared = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Dwfl *dwfl = dwfl_begin(&callbacks);
	dwfl_report_begin(dwfl);
	Dwfl_Module *mod = dwfl_report_elf(dwfl, "m", path, fd, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	struct scope_index *si = scope_index_new();
	Dwarf_Addr bias;
	Dwarf_Die *cu = NULL;
	while (mod && (cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL && compared < 20000) {
		Dwarf_Addr base, low, high;
		ptrdiff_t off = 0;
		while ((off = dwarf_ranges(cu, off, &base, &low, &high)) > 0) {
			for (Dwarf_Addr a = low; a < high && compared < 20000; a += step) {
				Dwarf_Die *walk = NULL, mine[64];
				int nwalk = dwarf_getscopes(cu, a, &walk);
				size_t nmine = scope_index_lookup(si, cu, a, mine, 64);
				Dwarf_Off x[64], y[64];
				size_t nx = named_chain(walk, nwalk > 0 ? (size_t)nwalk : 0, x, 64);
				size_t ny = named_chain(mine, nmine, y, 64);
				int ends = !ny || dwarf_tag(&mine[nmine - 1]) == DW_TAG_subprogram;
				*inlined += ny > 1;
				*differ += (nx > 0) != (ny > 0) || (nx && x[0] != y[0]) || !ends;
				free(walk);
				compared++;
			}
		}
	}
	scope_index_free(si);
	dwfl_end(dwfl);
	return compared;
}

TEST(same_as_walk, "the index finds the innermost inlined call or function dwarf_getscopes "
		   "finds, and the chain out from it ends at a function")
{
	glob_t g = { 0 };
	const char *path = "/proc/self/exe", *home = getenv("HOME");
	char own[4096], pattern[4096];
	snprintf(pattern, sizeof(pattern), "%s/.pyenv/versions/3.1*/lib/libpython3.1*.so.1.0",
		 home ? home : "/root");
	if (!glob(pattern, 0, NULL, &g) && g.gl_pathc)
		path = g.gl_pathv[g.gl_pathc - 1];
	else
		printf("note: no pyenv libpython under %s: compared on this test binary\n",
		       pattern);
	ssize_t n = readlink(path, own, sizeof(own) - 1);
	if (n > 0)
		own[n] = '\0';
	size_t inlined = 0, differ = 0;
	size_t compared = compare_module(n > 0 ? own : path, 997, &inlined, &differ);
	printf("%s: %zu addresses, %zu in inlined calls, %zu differ\n", n > 0 ? own : path,
	       compared, inlined, differ);
	CHECK(compared > 1000);
	CHECK(differ == 0);
	if (strstr(path, "libpython"))
		CHECK(inlined > 100); /* an optimised build inlines */
	globfree(&g);
}

CHECK_MAIN()
