/* scope_index: a compile unit's function scopes, walked once (scope_index.h). */
#include "scope_index.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#define SCOPE_DEPTH_MAX 256 /* deeper DIE trees are not walked further */

struct scope_range {
	Dwarf_Addr low, high;	/* [low, high) */
	Dwarf_Addr high_before; /* the largest high of this range and those before it */
	unsigned depth;
	Dwarf_Die die;
};

struct unit_scopes {
	struct scope_range *v;
	size_t n, alloc;
};

struct scope_index {
	struct hashmap units; /* the unit DIE's offset -> index in unit + 1 */
	struct unit_scopes *unit;
	size_t nunits, allocunits;
};

struct scope_index *scope_index_new(void)
{
	return xcalloc(1, sizeof(struct scope_index));
}

void scope_index_free(struct scope_index *si)
{
	if (!si)
		return;
	for (size_t i = 0; i < si->nunits; i++)
		free(si->unit[i].v);
	free(si->unit);
	hashmap_release(&si->units);
	free(si);
}

static void ranges_add(struct unit_scopes *u, Dwarf_Die *die, unsigned depth)
{
	Dwarf_Addr base, low, high;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &low, &high)) > 0) {
		if (high <= low)
			continue;
		if (u->n == u->alloc) {
			u->alloc = u->alloc ? 2 * u->alloc : 64;
			u->v = xrealloc(u->v, u->alloc * sizeof(*u->v));
		}
		u->v[u->n++] =
		    (struct scope_range){ .low = low, .high = high, .depth = depth, .die = *die };
	}
}

/* Every subprogram and inlined_subroutine under parent, depth first. */
static void unit_walk(struct unit_scopes *u, Dwarf_Die *parent, unsigned depth)
{
	Dwarf_Die child;
	if (depth >= SCOPE_DEPTH_MAX || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			ranges_add(u, &child, depth);
		if (dwarf_haschildren(&child))
			unit_walk(u, &child, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int by_low(const void *a, const void *b)
{
	const struct scope_range *x = a, *y = b;
	return x->low < y->low ? -1 : x->low > y->low;
}

static struct unit_scopes *unit_get(struct scope_index *si, Dwarf_Die *cu)
{
	Dwarf_Off key = dwarf_dieoffset(cu);
	int64_t *at = hashmap_get(&si->units, &key, sizeof(key));
	if (at)
		return &si->unit[*at - 1];
	if (si->nunits == si->allocunits) {
		si->allocunits = si->allocunits ? 2 * si->allocunits : 16;
		si->unit = xrealloc(si->unit, si->allocunits * sizeof(*si->unit));
	}
	struct unit_scopes *u = &si->unit[si->nunits++];
	memset(u, 0, sizeof(*u));
	unit_walk(u, cu, 1);
	if (u->n)
		qsort(u->v, u->n, sizeof(*u->v), by_low);
	Dwarf_Addr most = 0;
	for (size_t i = 0; i < u->n; i++) {
		if (u->v[i].high > most)
			most = u->v[i].high;
		u->v[i].high_before = most;
	}
	hashmap_put(&si->units, &key, sizeof(key), (int64_t)si->nunits);
	return u;
}

size_t scope_index_lookup(struct scope_index *si, Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die *out,
			  size_t max)
{
	struct unit_scopes *u = unit_get(si, cu);
	/* The last range that starts at or before addr, then back while a
	 * range before could still reach it. */
	size_t lo = 0, hi = u->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u->v[mid].low <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct scope_range *found[SCOPE_INDEX_FOUND_MAX];
	size_t n = 0;
	for (size_t i = lo; i-- > 0 && u->v[i].high_before > addr;)
		if (u->v[i].high > addr && n < sizeof(found) / sizeof(found[0]))
			found[n++] = &u->v[i];
	/* innermost (deepest) first: an insertion sort of a handful */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && found[j - 1]->depth < found[j]->depth; j--) {
			struct scope_range *t = found[j];
			found[j] = found[j - 1];
			found[j - 1] = t;
		}
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = found[i]->die;
	return n;
}
