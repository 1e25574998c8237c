/* scope_index: the function and inlined-call scopes of a module's compile
 * units, indexed once per unit.
 *
 * Naming an address with its inlined frames asks which subprogram and
 * inlined_subroutine DIEs of its compile unit contain it. libdw's
 * dwarf_getscopes() walks the unit's whole DIE tree for each address: for
 * an interpreter's eval loop (one unit, thousands of inlined calls, a new
 * return address at every other sample) that walk was most of what naming
 * a profile's frames cost. Here the first address of a unit walks it once,
 * keeping each such DIE's address ranges and depth; later addresses are a
 * binary search and a short scan.
 *
 * Unlike dwarf_getscopes(), which stops at the innermost inlined call and
 * goes on with the scopes of its abstract definition, the chain goes out
 * through every call it was inlined into to the concrete function.
 *
 * Contract: the DIEs handed out are valid while the Dwarf they come from is
 * open; scope_index_free() before the Dwfl is ended. Not thread-safe (one
 * per symbolizer module). */
#ifndef SONDE_SCOPE_INDEX_H
#define SONDE_SCOPE_INDEX_H

#include <elfutils/libdw.h>
#include <stddef.h>

struct scope_index;

struct scope_index *scope_index_new(void);
void scope_index_free(struct scope_index *si);

/* Scopes of one address looked at, at most: its inlined calls and its
 * function (deeper nests keep their innermost). */
#define SCOPE_INDEX_FOUND_MAX 64

/* The subprogram and inlined_subroutine DIEs of compile unit cu that
 * contain addr (a unit-relative address, as dwarf_getscopes takes it),
 * innermost first, into out (at most max and SCOPE_INDEX_FOUND_MAX);
 * returns their count. */
size_t scope_index_lookup(struct scope_index *si, Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die *out,
			  size_t max);

#endif
